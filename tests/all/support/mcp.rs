//! MCP servers for the tests: the pinned npm reference servers (`server-everything`,
//! `server-memory`), installed once into `target/mcp-servers` and run by Node 22,
//! and our own hostile server (`tests/mcp_hostile/server.py`). A test that cannot get them
//! fails with the reason; it is never skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use splice::mcp::{ServerConfig, ServerEntry, Source};

use super::process::Running;
use super::{deps, node};

/// `target/mcp-servers/node_modules/@modelcontextprotocol`, installed if missing (by
/// `scripts/test_deps.py`, which pins their versions, with the Node the tests use).
pub fn packages_dir() -> PathBuf {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            deps::fetch(
                "mcp-servers",
                &[("SPLICE_NODE", node::node22().as_os_str())],
            )
        })
        .clone()
        .unwrap_or_else(|why| panic!("the MCP tests need the reference servers: {why}"))
}

fn node() -> String {
    node::node22().display().to_string()
}

fn stdio(name: &str, command: String, args: Vec<String>, env: &[(&str, &str)]) -> ServerEntry {
    ServerEntry {
        name: name.into(),
        config: ServerConfig::Stdio {
            command,
            args,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            env_passthrough: Vec::new(),
        },
        source: Source::User,
        pins: Vec::new(),
    }
}

/// The command line of server-everything over stdio: `node <dist/index.js> stdio`.
pub fn everything_command() -> (String, Vec<String>) {
    let script = packages_dir().join("server-everything/dist/index.js");
    (node(), vec![script.display().to_string(), "stdio".into()])
}

pub fn everything(name: &str) -> ServerEntry {
    let (command, args) = everything_command();
    stdio(name, command, args, &[])
}

pub fn memory(name: &str, file: &Path) -> ServerEntry {
    let script = packages_dir().join("server-memory/dist/index.js");
    stdio(
        name,
        node(),
        vec![script.display().to_string()],
        &[("MEMORY_FILE_PATH", &file.display().to_string())],
    )
}

pub fn hostile_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_hostile/server.py")
}

/// The Python interpreter itself, not a wrapper on PATH (a pyenv shim is a shell script that
/// adds variables of its own to the server's environment).
pub fn python() -> String {
    static FOUND: OnceLock<String> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let output = Command::new("python3")
                .args(["-c", "import sys; print(sys.executable)"])
                .output()
                .expect("the hostile MCP server needs python3");
            let path = String::from_utf8_lossy(&output.stdout).trim().to_string();
            assert!(!path.is_empty(), "python3 did not say where it is");
            path
        })
        .clone()
}

/// Our hostile server in these modes, with this configured `env`.
pub fn hostile(name: &str, modes: &[&str], env: &[(&str, &str)]) -> ServerEntry {
    let mut args = vec![hostile_script().display().to_string()];
    args.extend(modes.iter().map(|m| m.to_string()));
    stdio(name, python(), args, env)
}

/// server-everything in streamable HTTP mode on a free port; ended (its group) on drop.
pub struct EverythingHttp {
    /// Its own process group: whatever it started goes with it.
    child: Running,
    pub url: String,
}

impl EverythingHttp {
    pub fn start() -> EverythingHttp {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("pick a free loopback port");
        let script = packages_dir().join("server-everything/dist/index.js");
        let child = Running::start_group(
            Command::new(node())
                .arg(script)
                .arg("streamableHttp")
                .env("PORT", port.to_string())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
        )
        .expect("cannot start server-everything streamableHttp");
        let server = EverythingHttp {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        // Ready when it accepts connections (bounded: a server that never listens fails here).
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("server-everything streamableHttp did not listen on {port}");
    }
}
