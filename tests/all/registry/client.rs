//! The registry client against the real server, both sides the real binary: device-code login
//! (approved, denied, expired), publish (refused republish, no login), info, search, install
//! by id and by range (verified; an archive altered on the server installs nothing), yank,
//! logout. The server runs on 127.0.0.1:0 with a 1 s poll interval. Each test that needs a
//! server runs on SQLite, and on PostgreSQL too when SPLICE_TEST_POSTGRES_URL is set (a schema
//! of its own per server).

use crate::support;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::{Outcome, Sandbox, run_raw};

use crate::registry::server::{block, databases, unique};
use support::process::{Running, Start};

const OFFICIAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/packages/json");

const PASSWORD: &str = "correct horse battery staple";

/// Where a test server keeps its index and its archives: SQLite and files under `--data`
/// unless told otherwise.
#[derive(Default)]
pub struct Backend {
    /// A PostgreSQL URL; the server gets a schema of its own in it (dropped afterwards), so
    /// tests in parallel and earlier runs never see each other's users or versions.
    pub postgres: Option<String>,
    /// `--blobs URL` and the environment the server needs to reach it.
    pub blobs: Option<(String, Vec<(&'static str, String)>)>,
}

impl Backend {
    pub fn on(database: Option<&str>) -> Backend {
        Backend {
            postgres: database.map(str::to_string),
            blobs: None,
        }
    }
}

/// A registry server on a free loopback port, stopped when dropped.
pub struct Server {
    child: Running,
    pub url: String,
    pub data: PathBuf,
    /// `--database URL` for the server and its admin commands (PostgreSQL only).
    database: Option<String>,
    schema: Option<PgSchema>,
}

impl Server {
    /// Started with `expiry` seconds for a device code; `alice` owns the namespace `acme`.
    pub fn start(sandbox: &Sandbox, expiry: u32, database: Option<&str>) -> Server {
        Server::start_on(sandbox, expiry, Backend::on(database))
    }

    pub fn start_on(sandbox: &Sandbox, expiry: u32, backend: Backend) -> Server {
        eprintln!(
            "registry client test on {}",
            backend.postgres.as_ref().map_or("sqlite", |_| "postgres")
        );
        crate::support::need_registry_server();
        let data = sandbox.dir.path().join("registry");
        let schema = backend.postgres.as_deref().map(PgSchema::create);
        let database = schema.as_ref().map(|s| s.url.clone());
        let with_database = |command: &mut Command| {
            command.arg("--data").arg(&data);
            if let Some(url) = &database {
                command.arg("--database").arg(url);
            }
        };
        let mut add = Command::new(env!("CARGO_BIN_EXE_splice"));
        add.args(["registry", "user", "add", "alice", "--namespace", "acme"]);
        with_database(&mut add);
        add.arg("--password-stdin");
        let added = run_raw(add, Some(PASSWORD));
        assert_eq!(added.code, 0, "user add: {}", added.stderr);
        let mut serve = Command::new(env!("CARGO_BIN_EXE_splice"));
        serve
            .args(["registry", "serve", "--addr", "127.0.0.1:0"])
            .args(["--device-interval", "1", "--device-expiry"])
            .arg(expiry.to_string());
        with_database(&mut serve);
        if let Some((url, env)) = &backend.blobs {
            serve.arg("--blobs").arg(url).envs(env.iter().cloned());
        }
        let mut child = serve
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .start()
            .expect("registry serve");
        let stdout = child.stdout.take().expect("no stdout");
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("read a line from stdout");
        let url = first.trim().to_string();
        let server = Server {
            child,
            url,
            data,
            database,
            schema,
        };
        assert!(
            server.url.starts_with("http://127.0.0.1:"),
            "first line: {first}"
        );
        server
    }

    pub fn admin(&self, args: &[&str]) -> Outcome {
        let mut command = Command::new(env!("CARGO_BIN_EXE_splice"));
        command
            .arg("registry")
            .args(args)
            .arg("--data")
            .arg(&self.data);
        if let Some(url) = &self.database {
            command.arg("--database").arg(url);
        }
        run_raw(command, None)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The schema goes after the server that used it.
        self.child.end();
        drop(self.schema.take());
    }
}

/// A schema of its own in the PostgreSQL database, and the URL that makes it the search path;
/// dropped with everything in it when this is dropped.
struct PgSchema {
    base: String,
    name: String,
    url: String,
}

impl PgSchema {
    fn create(base: &str) -> PgSchema {
        let name = unique("client").replace('-', "_");
        pg(base, &format!("CREATE SCHEMA {name}"));
        let joiner = if base.contains('?') { '&' } else { '?' };
        PgSchema {
            base: base.to_string(),
            url: format!("{base}{joiner}options=-c%20search_path%3D{name}"),
            name,
        }
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        pg(
            &self.base,
            &format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name),
        );
    }
}

/// One statement on the PostgreSQL database at `url`.
fn pg(url: &str, statement: &str) {
    block(async {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .connect(url)
            .await
            .expect("PostgreSQL at SPLICE_TEST_POSTGRES_URL");
        sqlx::query(statement)
            .execute(&pool)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
        pool.close().await;
    });
}

pub fn splice(sandbox: &Sandbox, args: &[&str]) -> Outcome {
    let mut command = sandbox.command("http://127.0.0.1:9");
    command.args(args);
    run_raw(command, None)
}

pub fn credentials_path(sandbox: &Sandbox) -> PathBuf {
    sandbox.dir.path().join("credentials.json")
}

/// `splice login --json`, the code handled by `decide` (`approve` or `deny`, or nothing);
/// the device_code line, the other lines, the exit code and stderr.
pub fn login(
    sandbox: &Sandbox,
    server: &Server,
    decide: Option<&str>,
) -> (Value, Vec<Value>, Outcome) {
    login_with(sandbox, server, decide, &[])
}

/// `login`, with more arguments (`--default`).
pub fn login_with(
    sandbox: &Sandbox,
    server: &Server,
    decide: Option<&str>,
    extra: &[&str],
) -> (Value, Vec<Value>, Outcome) {
    let mut child = sandbox
        .command("http://127.0.0.1:9")
        .args(["login", "--registry", &server.url, "--json"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .start()
        .expect("login");
    let mut stdout = BufReader::new(child.stdout.take().expect("no stdout"));
    let mut first = String::new();
    stdout
        .read_line(&mut first)
        .expect("read a line from stdout");
    let code: Value =
        serde_json::from_str(&first).unwrap_or_else(|e| panic!("not JSON ({e}): {first}"));
    assert_eq!(code["type"], "device_code", "{first}");
    let user_code = code["userCode"].as_str().unwrap_or_default().to_string();
    match decide {
        Some("approve") => {
            let done = server.admin(&["approve", &user_code, "--user", "alice"]);
            assert_eq!(done.code, 0, "approve: {}", done.stderr);
        }
        Some(_) => {
            let done = server.admin(&["deny", &user_code]);
            assert_eq!(done.code, 0, "deny: {}", done.stderr);
        }
        None => {}
    }
    let output = child.wait_with_output().expect("wait for child");
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut stdout, &mut rest);
    let lines: Vec<Value> = rest
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let outcome = Outcome {
        code: output.status.code().unwrap_or(-1),
        stdout: format!("{first}{rest}"),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        lines: Vec::new(),
    };
    (code, lines, outcome)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create to");
    for entry in std::fs::read_dir(from).expect("list from") {
        let entry = entry.expect("read a tar entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy entry to target");
        }
    }
}

/// The official json package as `acme/json@VERSION`.
pub fn package(sandbox: &Sandbox, version: &str) -> PathBuf {
    let dir = sandbox.dir.path().join(format!("json-{version}"));
    copy_dir(Path::new(OFFICIAL), &dir);
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).expect("read path");
    let mut manifest: Value = serde_json::from_str(&text).expect("parse text as JSON");
    manifest["namespace"] = json!("acme");
    manifest["version"] = json!(version);
    std::fs::write(&path, manifest.to_string()).expect("write path");
    let skill = dir.join("SKILL.md");
    let text = std::fs::read_to_string(&skill).expect("read skill");
    std::fs::write(&skill, text.replacen("# splice/json", "# acme/json", 1)).expect("write skill");
    dir
}

pub fn json_of(outcome: &Outcome) -> Value {
    serde_json::from_str(outcome.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {} / {}", outcome.stdout, outcome.stderr))
}

pub fn publish(sandbox: &Sandbox, server: &Server, dir: &Path) -> Outcome {
    let dir = dir.display().to_string();
    splice(sandbox, &["publish", &dir, "--registry", &server.url])
}

/// The whole path a user takes, and what must hold at each step.
#[test]
fn login_publish_info_search_install_run_yank_logout() {
    for database in databases() {
        login_publish_info_search_install_run_yank_logout_on(database.as_deref());
    }
}

fn login_publish_info_search_install_run_yank_logout_on(database: Option<&str>) {
    let sandbox = Sandbox::new();
    let server = Server::start(&sandbox, 30, database);
    let url = server.url.clone();

    // Without a saved login, publish says to log in (and uploads nothing).
    let v010 = package(&sandbox, "0.1.0");
    let refused = publish(&sandbox, &server, &v010);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains(&format!("splice login --registry {url}")),
        "{}",
        refused.stderr
    );

    let (_, lines, done) = login(&sandbox, &server, Some("approve"));
    assert_eq!(done.code, 0, "{}", done.stderr);
    let result = lines.last().cloned().unwrap_or_default();
    assert_eq!(result["type"], "result", "{}", done.stdout);
    assert_eq!(result["kind"], "login");
    assert_eq!(result["user"], "alice");
    // The token: in the file, mode 0600, and nowhere in the output.
    let creds = credentials_path(&sandbox);
    let mode = std::fs::metadata(&creds)
        .expect("stat creds")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&creds).expect("read creds"))
        .expect("parse creds as JSON");
    let token = saved[&url]["token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(token.len() >= 16, "{saved}");
    assert!(!done.stdout.contains(&token) && !done.stderr.contains(&token));

    let out = publish(&sandbox, &server, &v010);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains(&token) && !out.stderr.contains(&token));

    // A version, once published, is never replaced: the refusal names it.
    let again = publish(&sandbox, &server, &v010);
    assert_ne!(again.code, 0);
    assert!(again.stderr.contains("acme/json@0.1.0"), "{}", again.stderr);

    let info = splice(
        &sandbox,
        &[
            "pkg",
            "info",
            "acme/json@0.1.0",
            "--registry",
            &url,
            "--json",
        ],
    );
    assert_eq!(info.code, 0, "{}", info.stderr);
    let info = json_of(&info);
    for key in [
        "sha256",
        "size",
        "publisher",
        "publishedAt",
        "clientVersion",
    ] {
        assert!(info.get(key).is_some_and(|v| !v.is_null()), "{key}: {info}");
    }
    assert_eq!(info["publisher"], "alice");
    assert_eq!(info["clientVersion"], env!("CARGO_PKG_VERSION"));

    let found = splice(
        &sandbox,
        &["pkg", "search", "json", "--registry", &url, "--json"],
    );
    assert_eq!(found.code, 0, "{}", found.stderr);
    assert_eq!(json_of(&found)["packages"][0]["id"], "acme/json");

    // By range: 0.1.0 is the only match; its sha256 is the registry's.
    let installed = splice(
        &sandbox,
        &[
            "pkg",
            "install",
            "acme/json@^0.1",
            "--registry",
            &url,
            "--json",
        ],
    );
    assert_eq!(installed.code, 0, "{}", installed.stderr);
    let installed = json_of(&installed);
    assert_eq!(installed["version"], "0.1.0");
    assert_eq!(installed["status"], "installed");
    assert_eq!(installed["sha256"], info["sha256"]);
    let source = sandbox.data.join("package-sources/acme/json/0.1.0.json");
    let source: Value =
        serde_json::from_str(&std::fs::read_to_string(&source).expect("read source"))
            .expect("parse source as JSON");
    assert_eq!(source["registry"], json!(url));
    // The same version again changes nothing.
    let twice = splice(
        &sandbox,
        &[
            "pkg",
            "install",
            "acme/json@0.1.0",
            "--registry",
            &url,
            "--json",
        ],
    );
    assert_eq!(json_of(&twice)["status"], "unchanged", "{}", twice.stderr);

    let mut run = sandbox.command("http://127.0.0.1:9");
    run.env("SPLICE_NODE", support::node::node22()).args([
        "pkg",
        "run",
        "acme/json",
        "parse",
        r#"{"text":"[1,2]"}"#,
        "--json",
    ]);
    let ran = run_raw(run, None);
    assert_eq!(ran.code, 0, "{} {}", ran.stdout, ran.stderr);
    assert_eq!(json_of(&ran)["output"]["type"], "array");

    // Yank 0.2.0: a range and the latest skip it; the exact version still installs.
    let out = publish(&sandbox, &server, &package(&sandbox, "0.2.0"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let yanked = splice(
        &sandbox,
        &["pkg", "yank", "acme/json@0.2.0", "--registry", &url],
    );
    assert_eq!(yanked.code, 0, "{}", yanked.stderr);
    let latest = splice(
        &sandbox,
        &["pkg", "install", "acme/json", "--registry", &url, "--json"],
    );
    assert_eq!(json_of(&latest)["version"], "0.1.0", "{}", latest.stderr);
    let range = splice(
        &sandbox,
        &["pkg", "install", "acme/json@^0.2", "--registry", &url],
    );
    assert_eq!(range.code, 1, "{}", range.stderr);
    assert!(!sandbox.data.join("packages/acme/json/0.2.0").exists());

    // Removing a version removes the record of where it came from: a later install of the same
    // version from a directory must not claim to come from the registry.
    let source = sandbox.data.join("package-sources/acme/json/0.1.0.json");
    assert!(source.exists());
    let removed = splice(&sandbox, &["pkg", "remove", "acme/json@0.1.0"]);
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    assert!(!source.exists(), "pkg remove left the source record");

    // Logging out revokes the token on the registry too: it no longer works there.
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&creds).expect("read creds"))
        .expect("parse creds as JSON");
    let token = saved[&url]["token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let me = |token: &str| {
        block(async {
            splice::http::client_builder()
                .build()
                .expect("build")
                .get(format!("{url}/api/v1/me"))
                .bearer_auth(token)
                .send()
                .await
                .map(|r| r.status().as_u16())
                .expect("GET <url>/api/v1/me")
        })
    };
    assert_eq!(me(&token), 200, "the saved token works before logout");
    let out = splice(&sandbox, &["logout", "--registry", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("the token is revoked"),
        "{}",
        out.stdout
    );
    assert!(!creds.exists(), "logout leaves the credentials file");
    assert_eq!(me(&token), 401, "the token still works after logout");
    let out = splice(&sandbox, &["logout", "--registry", &url]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains("Not logged in"), "{}", out.stdout);
}

/// An archive changed on the server after it was published installs nothing: its sha256 is
/// not the one the metadata recorded.
#[test]
fn an_archive_altered_on_the_server_installs_nothing() {
    for database in databases() {
        an_archive_altered_on_the_server_installs_nothing_on(database.as_deref());
    }
}

fn an_archive_altered_on_the_server_installs_nothing_on(database: Option<&str>) {
    let sandbox = Sandbox::new();
    let server = Server::start(&sandbox, 30, database);
    let (_, _, done) = login(&sandbox, &server, Some("approve"));
    assert_eq!(done.code, 0, "{}", done.stderr);
    let out = publish(&sandbox, &server, &package(&sandbox, "0.1.0"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let info = splice(
        &sandbox,
        &[
            "pkg",
            "info",
            "acme/json@0.1.0",
            "--registry",
            &server.url,
            "--json",
        ],
    );
    let sha256 = json_of(&info)["sha256"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // Another valid package in its place: only the checksum can tell.
    let other = support::package::manifest(json!({}), &[("t", 1000)]);
    let other_dir = sandbox.dir.path().join("other");
    let mut other = other;
    other["namespace"] = json!("acme");
    other["name"] = json!("json");
    support::package::write_package(&other_dir, &other, &[("t", "export default () => 1;")]);
    let blob = find_file_containing(&server.data, &sha256)
        .unwrap_or_else(|| panic!("no blob named by {sha256} under {}", server.data.display()));
    let mut pack = sandbox.command("http://127.0.0.1:9");
    pack.args(["pkg", "pack"])
        .arg(&other_dir)
        .arg("--out")
        .arg(&blob);
    let packed = run_raw(pack, None);
    assert_eq!(packed.code, 0, "{}", packed.stderr);

    let out = splice(
        &sandbox,
        &[
            "pkg",
            "install",
            "acme/json@0.1.0",
            "--registry",
            &server.url,
        ],
    );
    assert_eq!(out.code, 1, "{} {}", out.stdout, out.stderr);
    assert!(out.stderr.contains(&sha256), "{}", out.stderr);
    assert!(
        out.stderr.contains("nothing was installed"),
        "{}",
        out.stderr
    );
    assert!(!sandbox.data.join("packages/acme").exists());
}

/// A file under `dir` whose path names `sha256` (content-addressed storage).
pub fn find_file_containing(dir: &Path, sha256: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        if path.is_dir() {
            if let Some(found) = find_file_containing(&path, sha256) {
                return Some(found);
            }
        } else if path.to_string_lossy().contains(sha256) {
            return Some(path);
        }
    }
    None
}

/// A denied login and an expired one end with an `error` line and exit 3; nothing is saved.
#[test]
fn a_denied_or_expired_login_is_an_error_line_and_exit_3() {
    for database in databases() {
        a_denied_or_expired_login_is_an_error_line_and_exit_3_on(database.as_deref());
    }
}

fn a_denied_or_expired_login_is_an_error_line_and_exit_3_on(database: Option<&str>) {
    let sandbox = Sandbox::new();
    let server = Server::start(&sandbox, 3, database);
    let (code, lines, denied) = login(&sandbox, &server, Some("deny"));
    for key in [
        "userCode",
        "verificationUri",
        "verificationUriComplete",
        "expiresIn",
        "interval",
    ] {
        assert!(code.get(key).is_some(), "{key}: {code}");
    }
    assert_eq!(denied.code, 3, "{}", denied.stdout);
    let last = lines.last().cloned().unwrap_or_default();
    assert_eq!(last["type"], "error", "{}", denied.stdout);
    assert_eq!(last["error"]["code"], "AUTH");
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("denied")
    );

    let (_, lines, expired) = login(&sandbox, &server, None);
    assert_eq!(expired.code, 3, "{}", expired.stdout);
    let last = lines.last().cloned().unwrap_or_default();
    assert_eq!(last["type"], "error", "{}", expired.stdout);
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("expired")
    );
    assert!(!credentials_path(&sandbox).exists());
}

/// Without any registry set, a registry command is a usage error that says how to set one.
#[test]
fn no_registry_is_a_usage_error_naming_the_ways_to_set_one() {
    let sandbox = Sandbox::new();
    let out = splice(&sandbox, &["pkg", "search", "json"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    for way in ["--registry", "SPLICE_REGISTRY", "registry"] {
        assert!(out.stderr.contains(way), "{}", out.stderr);
    }
    // A path that does not exist and reads as namespace/name: the message says both readings.
    let out = splice(&sandbox, &["pkg", "install", "skills/json"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("`skills/json` is no file or directory here"),
        "{}",
        out.stderr
    );
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        r#"{"registry":"ftp://nope"}"#,
    )
    .expect("write config.json");
    let out = splice(&sandbox, &["pkg", "search", "json"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("http"), "{}", out.stderr);
}

/// The first login becomes the default registry: publish, search, info, install, yank and
/// logout then need no `--registry`. A later login elsewhere leaves it alone; `--default` moves
/// it.
#[test]
fn the_first_login_is_the_default_registry() {
    let sandbox = Sandbox::new();
    let server = Server::start(&sandbox, 30, None);
    let url = server.url.clone();
    let (_, lines, done) = login(&sandbox, &server, Some("approve"));
    assert_eq!(done.code, 0, "{}", done.stderr);
    let result = lines.last().cloned().unwrap_or_default();
    assert_eq!(result["default"], json!(true), "{}", done.stdout);

    for version in ["0.1.0", "0.2.0"] {
        let dir = package(&sandbox, version).display().to_string();
        let out = splice(&sandbox, &["publish", &dir]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains(&format!("to {url}")), "{}", out.stdout);
    }
    let found = splice(&sandbox, &["pkg", "search", "json", "--json"]);
    assert_eq!(found.code, 0, "{}", found.stderr);
    assert_eq!(json_of(&found)["packages"][0]["id"], "acme/json");
    let info = splice(&sandbox, &["pkg", "info", "acme/json", "--json"]);
    assert_eq!(json_of(&info)["version"], "0.2.0", "{}", info.stderr);
    let installed = splice(&sandbox, &["pkg", "install", "acme/json@^0.1", "--json"]);
    assert_eq!(installed.code, 0, "{}", installed.stderr);
    assert_eq!(json_of(&installed)["registry"], json!(url));
    let yanked = splice(&sandbox, &["pkg", "yank", "acme/json@0.2.0"]);
    assert_eq!(yanked.code, 0, "{}", yanked.stderr);

    // A second registry: logging in there keeps the first as the default...
    let elsewhere = Sandbox::new();
    let second = Server::start(&elsewhere, 30, None);
    let (_, lines, done) = login(&sandbox, &second, Some("approve"));
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(
        lines.last().cloned().unwrap_or_default()["default"],
        json!(false)
    );
    let found = splice(&sandbox, &["pkg", "search", "json", "--json"]);
    assert_eq!(
        json_of(&found)["packages"][0]["id"],
        "acme/json",
        "{}",
        found.stdout
    );
    // ...until `--default` moves it (the second registry has no packages).
    let (_, lines, done) = login_with(&sandbox, &second, Some("approve"), &["--default"]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(
        lines.last().cloned().unwrap_or_default()["default"],
        json!(true)
    );
    let found = splice(&sandbox, &["pkg", "search", "json", "--json"]);
    assert_eq!(json_of(&found)["packages"], json!([]), "{}", found.stdout);
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(credentials_path(&sandbox)).expect("read the credentials file"),
    )
    .expect("parse the credentials file as JSON");
    assert!(saved[&url].get("default").is_none(), "{saved}");
    assert_eq!(saved[&second.url]["default"], json!(true), "{saved}");

    // The flag, SPLICE_REGISTRY and the config still come first.
    let found = splice(
        &sandbox,
        &["pkg", "search", "json", "--registry", &url, "--json"],
    );
    assert_eq!(json_of(&found)["packages"][0]["id"], "acme/json");
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        json!({ "registry": url }).to_string(),
    )
    .expect("write config.json");
    let found = splice(&sandbox, &["pkg", "search", "json", "--json"]);
    assert_eq!(json_of(&found)["packages"][0]["id"], "acme/json");
}

/// Installing a package the registry does not have says how to look for one; exit 1.
#[test]
fn installing_a_missing_package_suggests_pkg_search() {
    let sandbox = Sandbox::new();
    let server = Server::start(&sandbox, 30, None);
    let out = splice(
        &sandbox,
        &["pkg", "install", "acme/nope", "--registry", &server.url],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("no package acme/nope"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains(&format!("splice pkg search nope --registry {}", server.url)),
        "{}",
        out.stderr
    );
    let out = splice(
        &sandbox,
        &["pkg", "info", "acme/nope", "--registry", &server.url],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("splice pkg search"), "{}", out.stderr);
}

/// `--dry-run` validates and packs but uploads nothing, and needs no login or server.
#[test]
fn publish_dry_run_needs_no_login() {
    let sandbox = Sandbox::new();
    let dir = package(&sandbox, "0.3.0").display().to_string();
    let out = splice(
        &sandbox,
        &[
            "publish",
            &dir,
            "--registry",
            "http://127.0.0.1:9",
            "--dry-run",
            "--json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let line = json_of(&out);
    assert_eq!(line["id"], "acme/json");
    assert_eq!(line["version"], "0.3.0");
    assert_eq!(line["sha256"].as_str().map(str::len), Some(64));
    // Without --dry-run and without a saved login: refused before any upload, naming the fix.
    let out = splice(
        &sandbox,
        &["publish", &dir, "--registry", "http://127.0.0.1:9/"],
    );
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("run `splice login --registry http://127.0.0.1:9`"),
        "{}",
        out.stderr
    );
}

/// Refusals name their reason: a namespace that is not yours names it, a token the registry
/// does not know says to log in again, an invalid package is reported as `pkg validate` does.
#[test]
fn refused_publishes_name_their_reason() {
    for database in databases() {
        refused_publishes_name_their_reason_on(database.as_deref());
    }
}

fn refused_publishes_name_their_reason_on(database: Option<&str>) {
    let sandbox = Sandbox::new();
    let server = Server::start(&sandbox, 30, database);
    let (_, _, done) = login(&sandbox, &server, Some("approve"));
    assert_eq!(done.code, 0, "{}", done.stderr);

    let theirs = package(&sandbox, "0.1.0");
    let path = theirs.join("manifest.json");
    let text = std::fs::read_to_string(&path).expect("read path");
    std::fs::write(&path, text.replace("\"acme\"", "\"other\"")).expect("write path");
    let skill = theirs.join("SKILL.md");
    let text = std::fs::read_to_string(&skill).expect("read skill");
    std::fs::write(&skill, text.replacen("# acme/json", "# other/json", 1)).expect("write skill");
    let out = publish(&sandbox, &server, &theirs);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("`other`"), "{}", out.stderr);

    let broken = package(&sandbox, "0.2.0");
    std::fs::remove_file(broken.join("SKILL.md")).expect("remove SKILL.md");
    let out = publish(&sandbox, &server, &broken);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("SKILL.md"), "{}", out.stderr);

    // A token the registry does not know (revoked, or another registry's).
    let creds = credentials_path(&sandbox);
    let mut saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&creds).expect("read creds"))
            .expect("parse creds as JSON");
    saved[&server.url]["token"] = json!("not-a-token-the-registry-issued");
    std::fs::write(&creds, saved.to_string()).expect("write creds");
    let out = publish(&sandbox, &server, &package(&sandbox, "0.3.0"));
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&format!("run `splice login --registry {}`", server.url)),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("not-a-token-the-registry-issued"));
}

/// Without `--json`, login shows the link and the code to a person and says who is logged in.
#[test]
fn login_for_a_person_shows_the_link_and_code() {
    for database in databases() {
        login_for_a_person_shows_the_link_and_code_on(database.as_deref());
    }
}

fn login_for_a_person_shows_the_link_and_code_on(database: Option<&str>) {
    let sandbox = Sandbox::new();
    let server = Server::start(&sandbox, 30, database);
    let mut child = sandbox
        .command("http://127.0.0.1:9")
        .args(["login", "--registry", &server.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .start()
        .expect("login");
    let mut stderr = BufReader::new(child.stderr.take().expect("no stderr"));
    let mut first = String::new();
    stderr
        .read_line(&mut first)
        .expect("read a line from stderr");
    assert!(
        first.contains(&format!("{}/device?user_code=", server.url)),
        "{first}"
    );
    let user_code = first
        .rsplit("user_code=")
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let approved = server.admin(&["approve", &user_code, "--user", "alice"]);
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    let output = child.wait_with_output().expect("wait for child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout.trim(),
        format!("Logged in to {} as alice", server.url)
    );
}

/// Logging out while the registry is down still removes the saved login, and says the token
/// stays valid there.
#[test]
fn logout_without_the_registry_removes_the_login_and_says_the_token_lives_on() {
    let sandbox = Sandbox::new();
    let server = Server::start(&sandbox, 30, None);
    let url = server.url.clone();
    let (_, _, out) = login(&sandbox, &server, Some("approve"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(credentials_path(&sandbox).exists());
    drop(server);
    let out = splice(&sandbox, &["logout", "--registry", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("could not be revoked"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("stays valid"), "{}", out.stderr);
    assert!(!credentials_path(&sandbox).exists());
}
