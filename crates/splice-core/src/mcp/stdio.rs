//! A stdio server's process: started by Splice itself (not by rmcp) under its supervisor (no
//! capabilities, a process group of its own, every descendant ended with it), with a cleared
//! environment, its stderr kept as a capped tail, and one owner that ends and reaps it (and
//! everything it started) on every path.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::connect::ConnectError;
use crate::permissions::helper::helper;
use crate::process_group::GroupGuard;
use crate::sanitize::redact::is_secret_name;
use crate::sanitize::terminal::strip_controls;

/// How much of a server's stderr is kept (the newest bytes).
const STDERR_TAIL_BYTES: usize = 8 * 1024;
/// How much of that tail an error message quotes.
const STDERR_QUOTE_CHARS: usize = 600;
/// After stdin closes, how long a server gets to exit by itself, then after SIGTERM.
const GRACE: Duration = Duration::from_millis(500);
const TERM_GRACE: Duration = Duration::from_secs(2);

/// Variables of Splice's environment every stdio server gets when they are set: what a program
/// needs to reach the network behind a proxy or a private CA (`npx` without
/// `NODE_EXTRA_CA_CERTS` hangs until the start timeout). A config adds names per server
/// (`envPassthrough`).
pub const DEFAULT_PASSTHROUGH: [&str; 21] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "NODE_EXTRA_CA_CERTS",
    "NODE_USE_ENV_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "PIP_CERT",
    "npm_config_proxy",
    "npm_config_https_proxy",
    "npm_config_noproxy",
    "npm_config_cafile",
    "npm_config_strict_ssl",
    "npm_config_registry",
];

/// Whether a server gets `name` from Splice's environment: PATH, HOME and the locale, the
/// default proxy and CA set, and the names its config passes; never a name that says secret
/// (the config refuses one too; this holds whatever built the list).
pub fn inherited(name: &std::ffi::OsStr, passthrough: &[String]) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    let wanted = matches!(name, "PATH" | "HOME" | "LANG" | "LANGUAGE")
        || name.starts_with("LC_")
        || DEFAULT_PASSTHROUGH.contains(&name)
        || passthrough.iter().any(|p| p == name);
    wanted && !is_secret_name(name)
}

/// What a server gets: the variables of `base` it inherits (see [`inherited`]), then the
/// configured `env` (which wins).
pub fn child_env(
    base: &[(OsString, OsString)],
    configured: &BTreeMap<String, String>,
    passthrough: &[String],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = base
        .iter()
        .filter(|(k, _)| {
            inherited(k, passthrough) && !configured.contains_key(&k.to_string_lossy()[..])
        })
        .cloned()
        .collect();
    env.extend(
        configured
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    env
}

/// The names of `env`, sorted, for a message (never the values).
pub fn names(env: &[(OsString, OsString)]) -> Vec<String> {
    let mut names: Vec<String> = env
        .iter()
        .map(|(k, _)| strip_controls(&k.to_string_lossy()).into_owned())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The newest bytes a server wrote to stderr.
#[derive(Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<u8>>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut tail = self.0.lock().unwrap_or_else(|p| p.into_inner());
        tail.extend(bytes);
        let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
        tail.drain(..excess);
    }

    /// The last lines, terminal controls stripped, at most [`STDERR_QUOTE_CHARS`]; `None` when
    /// it wrote nothing.
    pub fn quote(&self) -> Option<String> {
        let bytes: Vec<u8> = {
            let tail = self.0.lock().unwrap_or_else(|p| p.into_inner());
            tail.iter().copied().collect()
        };
        let text = String::from_utf8_lossy(&bytes);
        let text = strip_controls(text.trim());
        if text.is_empty() {
            return None;
        }
        let chars: Vec<char> = text.chars().collect();
        let start = chars.len().saturating_sub(STDERR_QUOTE_CHARS);
        let quoted: String = chars[start..].iter().collect();
        Some(if start > 0 {
            format!("…{quoted}")
        } else {
            quoted
        })
    }
}

/// A started server: the pipes rmcp speaks over, and the process.
pub struct Started {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub process: ServerProcess,
}

/// The one owner of a server's processes. Dropping it ends them all (the guard; Tokio reaps the
/// child); [`ServerProcess::end`] is the orderly way.
pub struct ServerProcess {
    child: Child,
    group: GroupGuard,
    stderr: StderrTail,
    exited: Option<String>,
    log: crate::logging::process::ProcessLog,
}

pub fn spawn(
    command: &str,
    args: &[String],
    env: Vec<(OsString, OsString)>,
    cwd: &Path,
) -> Result<Started, ConnectError> {
    let cannot_start = |error: std::io::Error| ConnectError::Start {
        command: strip_controls(command).into_owned(),
        error,
    };
    // Under the supervisor: no capabilities, and whatever it starts ends with it.
    let mut helper =
        helper(std::ffi::OsStr::new(command), args, &env, cwd).map_err(cannot_start)?;
    helper
        .command
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = helper.command.spawn().map_err(cannot_start)?;
    let group = helper.guard(&child);
    let log = crate::logging::process::ProcessLog::started(command, child.id());
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ConnectError::NoPipes);
    };
    let tail = StderrTail::default();
    let sink = tail.clone();
    tokio::spawn(async move {
        let mut stderr = stderr;
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            sink.push(&buf[..n]);
        }
    });
    Ok(Started {
        stdin,
        stdout,
        process: ServerProcess {
            child,
            group,
            stderr: tail,
            exited: None,
            log,
        },
    })
}

impl ServerProcess {
    pub fn stderr(&self) -> &StderrTail {
        &self.stderr
    }

    /// Wait until the server exits by itself; says how. Cancel-safe.
    pub async fn exited(&mut self) -> String {
        if let Some(how) = &self.exited {
            return how.clone();
        }
        let status = self.child.wait().await;
        if let Ok(status) = &status {
            self.log.exited(status);
        }
        let how = match status {
            Ok(status) => format!("it exited ({status})"),
            Err(e) => format!("cannot wait for it: {e}"),
        };
        // What it left running goes too (a supervisor has ended it already).
        self.group.reaped();
        self.exited = Some(how.clone());
        how
    }

    /// End it (its stdin should be closed first): a short wait, SIGTERM to its group, then
    /// everything killed, and reaped. Whatever it started ends with it, even outside its group.
    pub async fn end(&mut self) {
        if self.exited.is_none() && tokio::time::timeout(GRACE, self.exited()).await.is_err() {
            self.group.terminate();
            if tokio::time::timeout(TERM_GRACE, self.exited())
                .await
                .is_err()
            {
                self.group.kill();
                let _ = self.exited().await;
            }
        }
        self.group.kill();
        self.group.disarm();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_home_locale_proxies_and_passed_names_are_inherited_and_configured_env_wins() {
        let base: Vec<(OsString, OsString)> = [
            ("PATH", "/bin"),
            ("HOME", "/home/me"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
            ("ANTHROPIC_API_KEY", "secret"),
            ("TERM", "xterm"),
            ("HTTPS_PROXY", "http://proxy:3128"),
            ("no_proxy", "localhost"),
            ("NODE_EXTRA_CA_CERTS", "/etc/ca.pem"),
            ("PIP_INDEX_URL", "https://pypi.internal"),
            ("GITHUB_TOKEN", "ghp_secret"),
        ]
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
        let configured = BTreeMap::from([("HOME".to_string(), "/elsewhere".to_string())]);
        // A list that names a secret (built by hand, past the config's check) still gets none.
        let passthrough = ["PIP_INDEX_URL".to_string(), "GITHUB_TOKEN".to_string()];
        let mut env: Vec<(String, String)> = child_env(&base, &configured, &passthrough)
            .into_iter()
            .map(|(k, v)| (k.to_string_lossy().into(), v.to_string_lossy().into()))
            .collect();
        env.sort();
        assert_eq!(
            env,
            [
                ("HOME", "/elsewhere"),
                ("HTTPS_PROXY", "http://proxy:3128"),
                ("LANG", "C.UTF-8"),
                ("LC_ALL", "C"),
                ("NODE_EXTRA_CA_CERTS", "/etc/ca.pem"),
                ("PATH", "/bin"),
                ("PIP_INDEX_URL", "https://pypi.internal"),
                ("no_proxy", "localhost"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        // Without the list, the name is not passed.
        let plain = child_env(&base, &BTreeMap::new(), &[]);
        assert!(!names(&plain).contains(&"PIP_INDEX_URL".to_string()));
    }

    #[test]
    fn no_default_passthrough_name_says_secret() {
        for name in DEFAULT_PASSTHROUGH {
            assert!(!is_secret_name(name), "{name}");
            assert!(crate::mcp::config::passthrough_name(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn the_stderr_tail_keeps_the_newest_bytes_without_controls() {
        let tail = StderrTail::default();
        assert_eq!(tail.quote(), None);
        tail.push(&vec![b'a'; STDERR_TAIL_BYTES]);
        tail.push(b"\x1b]0;title\x07boom\n");
        let quote = tail.quote().unwrap_or_default();
        assert!(quote.ends_with("boom"), "{quote}");
        assert!(quote.starts_with('…'));
        assert!(!quote.contains('\u{1b}'));
        assert!(quote.chars().count() <= STDERR_QUOTE_CHARS + 1);
    }
}
