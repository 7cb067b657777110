//! The package registry server through the real binary (`splice registry serve` on
//! 127.0.0.1:0): the device login, publish and its rules, racing publishes, namespace rights,
//! hostile uploads, yank, and a clean stop. Each test runs on SQLite, and on PostgreSQL too
//! when SPLICE_TEST_POSTGRES_URL is set (CI sets it, and a CI run without it fails).

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use reqwest::StatusCode;
use serde_json::{Value, json};
use splice::packages::archive;
use support::process::{Running, Start};
use support::{Outcome, Sandbox, run_raw};
use tar::{EntryType, Header};

const OFFICIAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/packages/json");

const PASSWORD: &str = "correct horse battery";

/// The databases every test runs on: SQLite always, PostgreSQL when configured.
pub fn databases() -> Vec<Option<String>> {
    let mut all = vec![None];
    match std::env::var("SPLICE_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => all.push(Some(url)),
        _ if std::env::var_os("CI").is_some() => {
            panic!("CI must run the registry tests on PostgreSQL too: set SPLICE_TEST_POSTGRES_URL")
        }
        _ => eprintln!("registry tests: SPLICE_TEST_POSTGRES_URL unset, SQLite only"),
    }
    all
}

/// Names no other test (nor an earlier run on the same PostgreSQL database) uses.
pub fn unique(prefix: &str) -> String {
    let bytes = archive::sha256_hex(
        format!(
            "{prefix}{:?}{}",
            std::time::SystemTime::now(),
            std::process::id()
        )
        .as_bytes(),
    );
    let letters: String = bytes
        .bytes()
        .take(10)
        .map(|b| char::from(b'a' + b % 26))
        .collect();
    format!("{prefix}-{letters}")
}

/// A running `splice registry serve`, stopped (SIGKILL) when dropped.
pub struct Registry {
    pub sandbox: Sandbox,
    pub url: String,
    pub data: PathBuf,
    pub database: Option<String>,
    child: Option<Running>,
}

impl Registry {
    pub fn start(database: Option<&str>) -> Registry {
        Registry::start_with(
            database,
            &["--device-interval", "1", "--device-expiry", "30"],
        )
    }

    pub fn start_with(database: Option<&str>, extra: &[&str]) -> Registry {
        eprintln!(
            "registry test on {}",
            database.map_or("sqlite", |_| "postgres")
        );
        let sandbox = Sandbox::new();
        let data = sandbox.dir.path().join("registry");
        let mut registry = Registry {
            sandbox,
            url: String::new(),
            data,
            database: database.map(str::to_string),
            child: None,
        };
        let mut command = registry.cli(&["serve", "--addr", "127.0.0.1:0"]);
        command
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.start().expect("start the registry server");
        let stdout = child.stdout.take().expect("no stdout");
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("read a line from stdout");
        registry.url = first.trim_end().to_string();
        registry.child = Some(child);
        assert!(
            registry.url.starts_with("http://127.0.0.1:") && first.ends_with('\n'),
            "first line: {first:?}"
        );
        registry
    }

    /// `splice registry ACTION… --data DIR [--database URL]`.
    pub fn cli(&self, args: &[&str]) -> Command {
        crate::support::need_registry_server();
        let mut command = self.sandbox.command("http://127.0.0.1:9");
        command.arg("registry");
        let (action, rest) = args.split_at(if args.first() == Some(&"user") { 2 } else { 1 });
        command.args(action).arg("--data").arg(&self.data);
        if let Some(url) = &self.database {
            command.arg("--database").arg(url);
        }
        command.args(rest);
        command
    }

    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Outcome {
        run_raw(self.cli(args), stdin)
    }

    pub fn add_user(&self, name: &str, namespace: &str) {
        let out = self.run(
            &[
                "user",
                "add",
                name,
                "--namespace",
                namespace,
                "--password-stdin",
            ],
            Some(&format!("{PASSWORD}\n")),
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
    }

    /// A token for `user` from a device login approved with `registry approve`.
    pub fn login(&self, user: &str) -> String {
        let code = self.post_json("/api/v1/device/code", None).1;
        let out = self.run(
            &[
                "approve",
                code["user_code"].as_str().unwrap_or_default(),
                "--user",
                user,
            ],
            None,
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let (status, body) = self.token(&code);
        assert_eq!(status, StatusCode::OK, "{body}");
        body["access_token"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub fn token(&self, code: &Value) -> (StatusCode, Value) {
        self.post_json(
            "/api/v1/device/token",
            Some(json!({"device_code": code["device_code"]})),
        )
    }

    pub fn post_json(&self, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut request = client().post(format!("{}{path}", self.url));
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        send(request)
    }

    pub fn get(&self, path: &str) -> (StatusCode, Value) {
        send(client().get(format!("{}{path}", self.url)))
    }

    pub fn get_bytes(&self, path: &str) -> (StatusCode, Vec<u8>) {
        block(async {
            let response = client()
                .get(format!("{}{path}", self.url))
                .send()
                .await
                .expect("GET <><path>");
            let status = response.status();
            (status, response.bytes().await.unwrap_or_default().to_vec())
        })
    }

    pub fn publish(
        &self,
        token: Option<&str>,
        id_version: (&str, &str, &str),
        bytes: Vec<u8>,
    ) -> (StatusCode, Value) {
        send(self.publish_request(token, id_version, bytes))
    }

    fn publish_request(
        &self,
        token: Option<&str>,
        (ns, name, version): (&str, &str, &str),
        bytes: Vec<u8>,
    ) -> reqwest::RequestBuilder {
        let mut request = client()
            .put(format!(
                "{}/api/v1/packages/{ns}/{name}/{version}",
                self.url
            ))
            .header("content-type", "application/gzip")
            .header("x-splice-client-version", "9.8.7-test")
            .body(bytes);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |child| child.id())
    }

    pub fn wait(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("not running");
        child.wait().expect("wait for child")
    }
}

fn client() -> reqwest::Client {
    splice::http::client_builder().build().expect("build")
}

pub fn block<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build the tokio runtime")
        .block_on(future)
}

fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    block(receive(request))
}

async fn receive(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.expect("send the request");
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    let value = serde_json::from_str(&text).unwrap_or_else(|_| json!({ "text": text }));
    (status, value)
}

// ---- packages -------------------------------------------------------------------------------

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

/// The official json package as `ns/name@version` (with `description`), packed.
pub fn package(
    sandbox: &Sandbox,
    ns: &str,
    name: &str,
    version: &str,
    description: &str,
) -> Vec<u8> {
    let dir = sandbox.root.join(unique("pkg"));
    copy_dir(Path::new(OFFICIAL), &dir);
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).expect("read path");
    let mut manifest: Value = serde_json::from_str(&text).expect("parse text as JSON");
    manifest["namespace"] = json!(ns);
    manifest["name"] = json!(name);
    manifest["version"] = json!(version);
    manifest["description"] = json!(description);
    let text = serde_json::to_string_pretty(&manifest).expect("serialise manifest");
    std::fs::write(&path, text).expect("write path");
    archive::pack(&dir).expect("pack dir").bytes
}

/// A `.tar.gz` of raw headers, names written as is (the tar crate's setters refuse `..`).
fn hostile(entries: &[(&[u8], EntryType, &[u8])]) -> Vec<u8> {
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gzip);
    for (name, kind, data) in entries {
        let mut header = Header::new_ustar();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_entry_type(*kind);
        header.set_mode(0o644);
        let link = matches!(kind, EntryType::Symlink);
        if link {
            header.as_old_mut().linkname[..11].copy_from_slice(b"/etc/passwd");
        }
        header.set_size(if link { 0 } else { data.len() as u64 });
        header.set_cksum();
        let body: &[u8] = if link { b"" } else { data };
        builder
            .append(&header, body)
            .expect("append an entry to the tar");
    }
    builder
        .into_inner()
        .and_then(|g| g.finish())
        .expect("finish the gzip stream")
}

/// The same tar, gzipped again at another level: same files, other bytes.
fn regzipped(bytes: &[u8]) -> Vec<u8> {
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut tar)
        .expect("gunzip the archive");
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(&tar).expect("write to gzip");
    gzip.finish().expect("finish the gzip stream")
}

fn blob_count(data: &Path) -> usize {
    std::fs::read_dir(data.join("blobs/sha256")).map_or(0, |dir| dir.count())
}

pub fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

// ---- the device login -----------------------------------------------------------------------

#[test]
fn device_login_pending_then_slow_down_then_approved_by_the_cli_spends_the_code() {
    for database in databases() {
        let registry = Registry::start(database.as_deref());
        let (user, ns) = (unique("alice"), unique("acme"));
        registry.add_user(&user, &ns);
        let (status, code) = registry.post_json("/api/v1/device/code", None);
        assert_eq!(status, StatusCode::OK, "{code}");
        let user_code = code["user_code"].as_str().unwrap_or_default().to_string();
        assert_eq!(user_code.len(), 9, "{code}");
        assert_eq!(
            code["verification_uri"],
            json!(format!("{}/device", registry.url))
        );
        assert_eq!(
            code["verification_uri_complete"],
            json!(format!("{}/device?user_code={user_code}", registry.url))
        );
        assert_eq!(code["interval"], json!(1));
        assert_eq!(code["expires_in"], json!(30));
        let (status, first) = registry.token(&code);
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(first["error"], json!("authorization_pending"), "{first}");
        // Polled again at once: faster than the interval.
        let (status, second) = registry.token(&code);
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(second["error"], json!("slow_down"), "{second}");
        // Approving an unknown user or an unknown code changes nothing.
        let out = registry.run(&["approve", &user_code, "--user", "nobody"], None);
        assert_ne!(out.code, 0);
        let out = registry.run(&["approve", "BBBB-BBBB", "--user", &user], None);
        assert_ne!(out.code, 0);
        assert!(out.stderr.contains("no pending login"), "{}", out.stderr);
        // The user code as a person might type it.
        let typed = user_code.to_lowercase().replace('-', " ");
        let out = registry.run(&["approve", &typed, "--user", &user], None);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let (status, body) = registry.token(&code);
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["token_type"], json!("bearer"));
        assert_eq!(body["user"], json!(user));
        let token = body["access_token"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(token.len() >= 64, "{token}");
        // Spent: the same device code gets no second token.
        let (status, again) = registry.token(&code);
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(again["error"], json!("expired_token"), "{again}");
        let (status, me) = send(
            client()
                .get(format!("{}/api/v1/me", registry.url))
                .bearer_auth(&token),
        );
        assert_eq!(status, StatusCode::OK, "{me}");
        assert_eq!(me, json!({"user": user, "namespaces": [ns]}));
        if database.is_none() {
            // Neither the token nor the password is stored as such.
            let mut stored = Vec::new();
            for entry in std::fs::read_dir(&registry.data).expect("list registry.data") {
                let path = entry.expect("read a tar entry").path();
                if path.is_file() {
                    stored.extend(std::fs::read(&path).unwrap_or_default());
                }
            }
            let text = String::from_utf8_lossy(&stored);
            assert!(text.contains(&user), "the index was read");
            assert!(!text.contains(&token), "the token is stored in clear");
            assert!(!text.contains(&token["splice_".len()..]));
            assert!(!text.contains(PASSWORD), "the password is stored in clear");
        }
    }
}

fn urlencoded(fields: &[(&str, &str)]) -> String {
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    char::from(b).to_string()
                }
                b => format!("%{b:02X}"),
            })
            .collect()
    };
    let pairs: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    pairs.join("&")
}

fn form(registry: &Registry, fields: &[(&str, &str)]) -> (StatusCode, String) {
    block(async {
        let response = client()
            .post(format!("{}/device", registry.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(urlencoded(fields))
            .send()
            .await
            .expect("POST <>/device");
        let status = response.status();
        (status, response.text().await.unwrap_or_default())
    })
}

#[test]
fn the_device_page_approves_with_the_password_only_and_denies() {
    for database in databases() {
        let registry = Registry::start(database.as_deref());
        let (user, ns) = (unique("bob"), unique("bobs"));
        registry.add_user(&user, &ns);
        let code = registry.post_json("/api/v1/device/code", None).1;
        let user_code = code["user_code"].as_str().unwrap_or_default().to_string();
        let (headers, page) = block(async {
            let url = code["verification_uri_complete"]
                .as_str()
                .unwrap_or_default();
            let response = client().get(url).send().await.expect("GET url");
            let headers = response.headers().clone();
            (headers, response.text().await.unwrap_or_default())
        });
        // Another site cannot frame the page to trick a click on Approve.
        assert_eq!(
            headers.get("x-frame-options").and_then(|v| v.to_str().ok()),
            Some("DENY")
        );
        let policy = headers
            .get("content-security-policy")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
        assert!(page.contains(&format!("value=\"{user_code}\"")), "{page}");
        assert!(page.contains("type=\"password\""), "{page}");
        // A wrong password, or a user that does not exist, approves nothing.
        for (name, password) in [(user.as_str(), "wrong"), ("nobody", PASSWORD)] {
            let (status, _) = form(
                &registry,
                &[
                    ("user", name),
                    ("password", password),
                    ("user_code", &user_code),
                    ("action", "approve"),
                ],
            );
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
        let (status, body) = registry.token(&code);
        assert_eq!(
            body["error"],
            json!("authorization_pending"),
            "{status} {body}"
        );
        let (status, html) = form(
            &registry,
            &[
                ("user", &user),
                ("password", PASSWORD),
                ("user_code", &user_code),
                ("action", "approve"),
            ],
        );
        assert_eq!(status, StatusCode::OK, "{html}");
        let (status, body) = registry.token(&code);
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["user"], json!(user));

        // Denied on the page: access_denied, then the code is gone.
        let code = registry.post_json("/api/v1/device/code", None).1;
        let user_code = code["user_code"].as_str().unwrap_or_default().to_string();
        let (status, _) = form(
            &registry,
            &[
                ("user", &user),
                ("password", PASSWORD),
                ("user_code", &user_code),
                ("action", "deny"),
            ],
        );
        assert_eq!(status, StatusCode::OK);
        let (status, body) = registry.token(&code);
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["error"], json!("access_denied"), "{body}");
        assert_eq!(registry.token(&code).1["error"], json!("expired_token"));

        // Denied from the server's shell; a denied code cannot be approved afterwards.
        let code = registry.post_json("/api/v1/device/code", None).1;
        let user_code = code["user_code"].as_str().unwrap_or_default().to_string();
        let out = registry.run(&["deny", &user_code], None);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let out = registry.run(&["approve", &user_code, "--user", &user], None);
        assert_ne!(out.code, 0);
        assert_eq!(registry.token(&code).1["error"], json!("access_denied"));
    }
}

/// `user add` with no terminal and no `--password-stdin` adds a user without a web password
/// (and says so): its device logins are approved from the server's shell, and no password,
/// not even an empty one, signs it in on the page.
#[test]
fn a_user_added_without_a_terminal_has_no_web_password_and_logs_in_by_approval() {
    for database in databases() {
        let registry = Registry::start(database.as_deref());
        let (user, ns) = (unique("carol"), unique("carols"));
        let mut add = registry.cli(&["user", "add", &user, "--namespace", &ns]);
        add.stdin(Stdio::null());
        let out = run_raw(add, None);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stderr.contains("no web password"), "{}", out.stderr);
        assert!(
            out.stderr
                .contains(&format!("splice registry approve CODE --user {user}")),
            "{}",
            out.stderr
        );

        let code = registry.post_json("/api/v1/device/code", None).1;
        let user_code = code["user_code"].as_str().unwrap_or_default().to_string();
        for password in ["", "guess", PASSWORD] {
            let (status, html) = form(
                &registry,
                &[
                    ("user", &user),
                    ("password", password),
                    ("user_code", &user_code),
                    ("action", "approve"),
                ],
            );
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{password:?}: {html}");
        }
        assert_eq!(
            registry.token(&code).1["error"],
            json!("authorization_pending")
        );
        let approved = registry.run(&["approve", &user_code, "--user", &user], None);
        assert_eq!(approved.code, 0, "{}", approved.stderr);
        let (status, body) = registry.token(&code);
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["user"], json!(user));
        let token = body["access_token"].as_str().unwrap_or_default();
        let (status, me) = send(
            client()
                .get(format!("{}/api/v1/me", registry.url))
                .bearer_auth(token),
        );
        assert_eq!(status, StatusCode::OK, "{me}");
        assert_eq!(me["namespaces"], json!([ns]));

        // Adding a namespace later leaves the user as it was, and says nothing of passwords.
        let more = unique("carolx");
        let mut again = registry.cli(&["user", "add", &user, "--namespace", &more]);
        again.stdin(Stdio::null());
        let out = run_raw(again, None);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(!out.stderr.contains("no web password"), "{}", out.stderr);
    }
}

/// Guessing passwords on the device page: after 5 failures for a name, even the right
/// password is refused (429, `Retry-After`) without approving anything; other names go on.
#[test]
fn failed_sign_ins_on_the_device_page_are_throttled_per_user() {
    let registry = Registry::start(None);
    let (user, ns) = (unique("carol"), unique("carols"));
    registry.add_user(&user, &ns);
    let (other, other_ns) = (unique("dave"), unique("daves"));
    registry.add_user(&other, &other_ns);
    let code = registry.post_json("/api/v1/device/code", None).1;
    let user_code = code["user_code"].as_str().unwrap_or_default().to_string();
    let attempt = |name: &str, password: &str| {
        form(
            &registry,
            &[
                ("user", name),
                ("password", password),
                ("user_code", &user_code),
                ("action", "approve"),
            ],
        )
    };
    for guess in 0..5 {
        let (status, _) = attempt(&user, &format!("guess-{guess}"));
        assert_eq!(status, StatusCode::UNAUTHORIZED, "guess {guess}");
    }
    let upper = user.to_uppercase();
    for name in [user.as_str(), upper.as_str()] {
        let (status, html) = attempt(name, PASSWORD);
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{name}: {html}");
        assert!(html.contains("Too many failed sign-ins"), "{html}");
    }
    assert_eq!(
        registry.token(&code).1["error"],
        json!("authorization_pending"),
        "the throttled right password approved the login"
    );
    // Another account signs in as usual.
    let (status, html) = attempt(&other, PASSWORD);
    assert_eq!(status, StatusCode::OK, "{html}");
    let retry_after = block(async {
        client()
            .post(format!("{}/device", registry.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(urlencoded(&[
                ("user", &user),
                ("password", PASSWORD),
                ("user_code", "ABCD-EFGH"),
                ("action", "approve"),
            ]))
            .send()
            .await
            .expect("POST <>/device")
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
    });
    assert!(
        retry_after.is_some_and(|s| s > 0 && s <= 15 * 60),
        "{retry_after:?}"
    );
}

#[test]
fn a_poll_a_little_early_by_jitter_is_pending_not_slow_down() {
    let registry = Registry::start(None);
    let code = registry.post_json("/api/v1/device/code", None).1;
    assert_eq!(
        registry.token(&code).1["error"],
        json!("authorization_pending")
    );
    // 900 ms after a 1 s interval: within the slack, so the interval does not grow.
    std::thread::sleep(std::time::Duration::from_millis(900));
    let (_, body) = registry.token(&code);
    assert_eq!(body["error"], json!("authorization_pending"), "{body}");
}

#[test]
fn an_expired_device_code_is_refused_and_cannot_be_approved() {
    for database in databases() {
        let registry = Registry::start_with(
            database.as_deref(),
            &["--device-interval", "1", "--device-expiry", "1"],
        );
        let user = unique("carol");
        registry.add_user(&user, &unique("carols"));
        let code = registry.post_json("/api/v1/device/code", None).1;
        assert_eq!(code["expires_in"], json!(1));
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let user_code = code["user_code"].as_str().unwrap_or_default();
        let out = registry.run(&["approve", user_code, "--user", &user], None);
        assert_ne!(out.code, 0, "an expired code was approved");
        let (status, body) = registry.token(&code);
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["error"], json!("expired_token"), "{body}");
        // An unknown device code is refused the same way.
        let (_, body) = registry.token(&json!({"device_code": "0".repeat(64)}));
        assert_eq!(body["error"], json!("expired_token"), "{body}");
    }
}

// ---- publish --------------------------------------------------------------------------------

#[test]
fn publish_records_provenance_serves_the_same_bytes_and_refuses_a_republish() {
    for database in databases() {
        let registry = Registry::start(database.as_deref());
        let (user, ns) = (unique("dave"), unique("daves"));
        registry.add_user(&user, &ns);
        let token = registry.login(&user);
        let bytes = package(&registry.sandbox, &ns, "json", "0.1.0", "Parse JSON, first");
        let sha = archive::sha256_hex(&bytes);
        let (status, body) = registry.publish(Some(&token), (&ns, "json", "0.1.0"), bytes.clone());
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let id = format!("{ns}/json");
        assert_eq!(
            body,
            json!({"id": id, "version": "0.1.0", "sha256": sha, "size": bytes.len()})
        );
        // The same version again, the same bytes or others: 409, naming it; nothing changes.
        let other = package(
            &registry.sandbox,
            &ns,
            "json",
            "0.1.0",
            "Parse JSON, replaced",
        );
        for again in [bytes.clone(), other] {
            let (status, body) = registry.publish(Some(&token), (&ns, "json", "0.1.0"), again);
            assert_eq!(status, StatusCode::CONFLICT, "{body}");
            assert_eq!(error_code(&body), "version_exists");
            let message = body["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(&format!("{id}@0.1.0")), "{message}");
        }
        let (status, meta) = registry.get(&format!("/api/v1/packages/{id}/0.1.0"));
        assert_eq!(status, StatusCode::OK, "{meta}");
        assert_eq!(meta["sha256"], json!(sha));
        assert_eq!(meta["size"], json!(bytes.len()));
        assert_eq!(meta["publisher"], json!(user));
        assert_eq!(meta["clientVersion"], json!("9.8.7-test"));
        assert_eq!(meta["yanked"], json!(false));
        assert_eq!(meta["manifest"]["description"], json!("Parse JSON, first"));
        let at = meta["publishedAt"].as_str().unwrap_or_default();
        assert!(
            at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T',
            "{at}"
        );
        let (status, served) = registry.get_bytes(&format!("/api/v1/packages/{id}/0.1.0/archive"));
        assert_eq!(status, StatusCode::OK);
        assert_eq!(served, bytes);
        let newer = package(
            &registry.sandbox,
            &ns,
            "json",
            "0.10.0",
            "Parse JSON, newer",
        );
        assert_eq!(
            registry
                .publish(Some(&token), (&ns, "json", "0.10.0"), newer)
                .0,
            StatusCode::CREATED
        );
        let (_, listing) = registry.get(&format!("/api/v1/packages/{id}"));
        let versions: Vec<&str> = listing["versions"]
            .as_array()
            .map(|v| v.iter().filter_map(|v| v["version"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(versions, ["0.10.0", "0.1.0"], "{listing}");
        let (_, found) = registry.get(&format!("/api/v1/search?q={}", ns.to_uppercase()));
        assert_eq!(found["packages"][0]["latest"], json!("0.10.0"), "{found}");
        let (status, missing) = registry.get(&format!("/api/v1/packages/{id}/9.9.9"));
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(error_code(&missing), "not_found");
    }
}

#[test]
fn racing_publishes_of_one_version_exactly_one_wins_and_its_bytes_stay() {
    for database in databases() {
        let registry = Registry::start(database.as_deref());
        let (user, ns) = (unique("erin"), unique("erins"));
        registry.add_user(&user, &ns);
        let token = registry.login(&user);
        let archives: Vec<Vec<u8>> = (0..12)
            .map(|i| {
                package(
                    &registry.sandbox,
                    &ns,
                    "race",
                    "1.0.0",
                    &format!("Contender {i}"),
                )
            })
            .collect();
        let results = block(async {
            let requests = archives.iter().map(|bytes| {
                receive(registry.publish_request(
                    Some(&token),
                    (&ns, "race", "1.0.0"),
                    bytes.clone(),
                ))
            });
            futures_util::future::join_all(requests).await
        });
        let winners: Vec<usize> = results
            .iter()
            .enumerate()
            .filter(|(_, (status, _))| *status == StatusCode::CREATED)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(winners.len(), 1, "{results:?}");
        for (status, body) in &results {
            assert!(
                *status == StatusCode::CREATED
                    || (*status == StatusCode::CONFLICT && error_code(body) == "version_exists"),
                "{status} {body}"
            );
        }
        let winner = &archives[winners[0]];
        let (_, meta) = registry.get(&format!("/api/v1/packages/{ns}/race/1.0.0"));
        assert_eq!(meta["sha256"], json!(archive::sha256_hex(winner)));
        let served = registry
            .get_bytes(&format!("/api/v1/packages/{ns}/race/1.0.0/archive"))
            .1;
        assert_eq!(&served, winner);
    }
}

#[test]
fn publishing_needs_a_valid_token_and_an_owned_namespace() {
    for database in databases() {
        let registry = Registry::start(database.as_deref());
        let (alice, bob) = (unique("alice"), unique("bob"));
        let (ours, theirs) = (unique("ours"), unique("theirs"));
        registry.add_user(&alice, &ours);
        registry.add_user(&bob, &theirs);
        let token = registry.login(&alice);
        let bytes = package(&registry.sandbox, &theirs, "json", "0.1.0", "Not yours");
        let (status, body) =
            registry.publish(Some(&token), (&theirs, "json", "0.1.0"), bytes.clone());
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(error_code(&body), "namespace_forbidden");
        for bad in [
            None,
            Some("splice_0000"),
            Some(""),
            Some(&token[..token.len() - 1]),
        ] {
            let (status, body) = registry.publish(bad, (&theirs, "json", "0.1.0"), bytes.clone());
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
            assert_eq!(error_code(&body), "unauthenticated");
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("splice login")
            );
        }
        let (status, _) = registry.get(&format!("/api/v1/packages/{theirs}/json"));
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(blob_count(&registry.data), 0);
        // A second namespace for an existing user: it owns both, its password unchanged.
        let out = registry.run(&["user", "add", &alice, "--namespace", &theirs], None);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let (status, body) = registry.publish(Some(&token), (&theirs, "json", "0.1.0"), bytes);
        assert_eq!(status, StatusCode::CREATED, "{body}");
        // bob, an owner too, may yank it; a token of neither namespace may not.
        let (status, body) = send(
            client()
                .post(format!(
                    "{}/api/v1/packages/{ours}/json/0.1.0/yank",
                    registry.url
                ))
                .bearer_auth("splice_nope"),
        );
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    }
}

#[test]
fn hostile_or_mislabelled_archives_are_refused_at_upload_and_nothing_is_stored() {
    for database in databases() {
        let registry = Registry::start(database.as_deref());
        let (user, ns) = (unique("frank"), unique("franks"));
        registry.add_user(&user, &ns);
        let token = registry.login(&user);
        let good = package(&registry.sandbox, &ns, "json", "0.1.0", "Fine");
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            (
                "dotdot",
                hostile(&[(b"../evil", EntryType::Regular, b"x")]),
                "..",
            ),
            (
                "symlink",
                hostile(&[(b"SKILL.md", EntryType::Symlink, b"")]),
                "symlink",
            ),
            ("regzipped", regzipped(&good), "deterministic"),
            ("not gzip", b"just text".to_vec(), ""),
            ("empty", Vec::new(), ""),
            (
                "other version",
                package(&registry.sandbox, &ns, "json", "0.2.0", "Mislabelled"),
                "0.2.0",
            ),
            (
                "other namespace",
                package(&registry.sandbox, "splice", "json", "0.1.0", "Mislabelled"),
                "splice",
            ),
        ];
        for (what, bytes, why) in cases {
            let (status, body) = registry.publish(Some(&token), (&ns, "json", "0.1.0"), bytes);
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {body}");
            assert_eq!(error_code(&body), "invalid_package", "{what}");
            let issues = body["error"]["issues"].to_string();
            assert!(issues.contains(why), "{what}: {issues}");
        }
        assert!(!registry.data.join("evil").exists() && !registry.data.join("tmp/evil").exists());
        let (status, _) = registry.get(&format!("/api/v1/packages/{ns}/json"));
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(blob_count(&registry.data), 0);
        let scratch: Vec<_> = std::fs::read_dir(registry.data.join("tmp"))
            .map(|d| d.collect())
            .unwrap_or_default();
        assert!(scratch.is_empty(), "scratch left behind: {scratch:?}");
        // The genuine archive still goes in afterwards.
        assert_eq!(
            registry
                .publish(Some(&token), (&ns, "json", "0.1.0"), good)
                .0,
            StatusCode::CREATED
        );
    }
}

#[test]
fn an_upload_over_64_mib_is_refused_with_413() {
    let registry = Registry::start(None);
    let (user, ns) = (unique("gina"), unique("ginas"));
    registry.add_user(&user, &ns);
    let token = registry.login(&user);
    let huge = vec![0u8; 64 * 1024 * 1024 + 1];
    // Who may publish is checked before the body is taken: no 64 MiB from strangers.
    let (status, body) = registry.publish(None, (&ns, "json", "0.1.0"), huge.clone());
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, body) =
        registry.publish(Some(&token), ("elsewhere", "json", "0.1.0"), huge.clone());
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = registry.publish(Some(&token), (&ns, "json", "0.1.0"), huge);
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(error_code(&body), "too_large");
    // A JSON body past the small limit on another endpoint: refused too, as JSON.
    let (status, body) = registry.post_json(
        "/api/v1/device/token",
        Some(json!({"device_code": "x".repeat(100_000)})),
    );
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

#[test]
fn a_yanked_version_is_hidden_from_resolution_but_unchanged() {
    for database in databases() {
        let registry = Registry::start(database.as_deref());
        let (user, ns) = (unique("hank"), unique("hanks"));
        let (other, other_ns) = (unique("ivan"), unique("ivans"));
        registry.add_user(&user, &ns);
        registry.add_user(&other, &other_ns);
        let token = registry.login(&user);
        let old = package(&registry.sandbox, &ns, "json", "1.0.0", "Old");
        let new = package(&registry.sandbox, &ns, "json", "1.1.0", "New");
        assert_eq!(
            registry
                .publish(Some(&token), (&ns, "json", "1.0.0"), old)
                .0,
            StatusCode::CREATED
        );
        assert_eq!(
            registry
                .publish(Some(&token), (&ns, "json", "1.1.0"), new.clone())
                .0,
            StatusCode::CREATED
        );
        let before = registry.get(&format!("/api/v1/packages/{ns}/json/1.1.0")).1;
        let yank = |token: &str| {
            send(
                client()
                    .post(format!(
                        "{}/api/v1/packages/{ns}/json/1.1.0/yank",
                        registry.url
                    ))
                    .bearer_auth(token),
            )
        };
        let (status, body) = yank(&registry.login(&other));
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        let (status, body) = yank(&token);
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body,
            json!({"id": format!("{ns}/json"), "version": "1.1.0", "yanked": true})
        );
        let (_, found) = registry.get(&format!("/api/v1/search?q={ns}"));
        assert_eq!(found["packages"][0]["latest"], json!("1.0.0"), "{found}");
        let mut after = registry.get(&format!("/api/v1/packages/{ns}/json/1.1.0")).1;
        assert_eq!(after["yanked"], json!(true));
        after["yanked"] = json!(false);
        assert_eq!(after, before, "yanking changed more than the flag");
        let served = registry
            .get_bytes(&format!("/api/v1/packages/{ns}/json/1.1.0/archive"))
            .1;
        assert_eq!(served, new);
        // Republishing a yanked version is still refused: it exists.
        let again = package(&registry.sandbox, &ns, "json", "1.1.0", "Again");
        assert_eq!(
            registry
                .publish(Some(&token), (&ns, "json", "1.1.0"), again)
                .0,
            StatusCode::CONFLICT
        );
    }
}

#[test]
fn errors_are_json_with_a_code_and_a_message() {
    let registry = Registry::start(None);
    for (status, body) in [
        registry.get("/api/v1/nothing-here"),
        registry.get("/api/v1/packages/nobody/nothing"),
        registry.get("/api/v1/me"),
    ] {
        assert!(status.is_client_error(), "{status}");
        assert!(!error_code(&body).is_empty(), "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.len() > 10),
            "{body}"
        );
    }
    let (status, body) = registry.post_json("/api/v1/device/token", None);
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].is_string(), "{body}");
}

#[test]
fn sigterm_stops_the_server_cleanly_with_exit_0() {
    for signal in [rustix::process::Signal::TERM, rustix::process::Signal::INT] {
        let mut registry = Registry::start(None);
        assert_eq!(registry.get("/api/v1/search?q=").0, StatusCode::OK);
        let pid = rustix::process::Pid::from_raw(i32::try_from(registry.pid()).unwrap_or(0))
            .expect("no pid");
        rustix::process::kill_process(pid, signal).expect("signal pid");
        let status = registry.wait();
        assert_eq!(status.code(), Some(0), "{signal:?}: {status:?}");
    }
}

// ---- load ---------------------------------------------------------------------------------

/// Latencies of one kind of request, sorted: (p50, p99, max) in milliseconds.
fn figures(mut times: Vec<std::time::Duration>) -> (f64, f64, f64) {
    times.sort();
    let at = |p: f64| {
        let index = ((times.len() as f64 - 1.0) * p).round() as usize;
        times[index.min(times.len() - 1)].as_secs_f64() * 1000.0
    };
    (at(0.5), at(0.99), at(1.0))
}

/// 50 concurrent clients on loopback: 1,000 metadata reads and 200 archive downloads while 20
/// new versions are published. No error, every download byte-identical, every publish there
/// with its own sha256, nothing else changed. Bounded in count; prints the latencies (no timing
/// is asserted: `cargo bench --bench registry_burst` measures a release build).
#[test]
fn load_concurrent_reads_downloads_and_publishes_lose_and_change_nothing() {
    for database in databases() {
        let registry = Registry::start(database.as_deref());
        let (user, ns) = (unique("load"), unique("loads"));
        registry.add_user(&user, &ns);
        let token = registry.login(&user);
        let base = package(&registry.sandbox, &ns, "json", "1.0.0", "Base");
        assert_eq!(
            registry
                .publish(Some(&token), (&ns, "json", "1.0.0"), base.clone())
                .0,
            StatusCode::CREATED
        );
        let fresh: Vec<(String, Vec<u8>)> = (0..20)
            .map(|i| {
                let version = format!("2.0.{i}");
                let bytes = package(
                    &registry.sandbox,
                    &ns,
                    "json",
                    &version,
                    &format!("Load {i}"),
                );
                (version, bytes)
            })
            .collect();
        let url = registry.url.clone();
        let meta = format!("{url}/api/v1/packages/{ns}/json/1.0.0");
        let download = format!("{meta}/archive");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("build the tokio runtime");
        let (metas, downloads, publishes) = runtime.block_on(async {
            let client = client();
            let semaphore = std::sync::Arc::new(tokio::sync::Semaphore::new(50));
            let mut tasks = tokio::task::JoinSet::new();
            // 0: metadata, 1: download, 2: publish
            let mut jobs: Vec<(u8, usize)> = (0..1000).map(|i| (0, i)).collect();
            jobs.extend((0..200).map(|i| (1, i)));
            jobs.extend((0..20).map(|i| (2, i)));
            // Interleaved, so publishes land while reads run.
            jobs.sort_by_key(|(kind, i)| {
                (
                    i * 1000
                        / if *kind == 0 {
                            1000
                        } else if *kind == 1 {
                            200
                        } else {
                            20
                        },
                    *kind,
                )
            });
            for (kind, i) in jobs {
                let permit = semaphore
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("acquire a semaphore permit");
                let client = client.clone();
                let (meta, download, base) = (meta.clone(), download.clone(), base.clone());
                let publish = (kind == 2).then(|| fresh[i].clone());
                let put = format!("{url}/api/v1/packages/{ns}/json");
                let token = token.clone();
                tasks.spawn(async move {
                    let started = std::time::Instant::now();
                    let ok = match (kind, publish) {
                        (0, _) => {
                            let r = client.get(&meta).send().await.expect("GET meta");
                            let status = r.status();
                            let body: Value =
                                serde_json::from_slice(&r.bytes().await.unwrap_or_default())
                                    .unwrap_or_default();
                            status == StatusCode::OK
                                && body["sha256"] == json!(archive::sha256_hex(&base))
                        }
                        (1, _) => {
                            let r = client.get(&download).send().await.expect("GET download");
                            r.status() == StatusCode::OK
                                && r.bytes().await.unwrap_or_default() == base
                        }
                        (_, Some((version, bytes))) => {
                            let r = client
                                .put(format!("{put}/{version}"))
                                .bearer_auth(&token)
                                .body(bytes)
                                .send()
                                .await
                                .expect("PUT <put>/<version>");
                            r.status() == StatusCode::CREATED
                        }
                        _ => false,
                    };
                    drop(permit);
                    (kind, i, ok, started.elapsed())
                });
            }
            let (mut metas, mut downloads, mut publishes) = (Vec::new(), Vec::new(), Vec::new());
            while let Some(done) = tasks.join_next().await {
                let (kind, i, ok, took) = done.expect("a request of the burst");
                assert!(ok, "request {kind}/{i} failed");
                [&mut metas, &mut downloads, &mut publishes][usize::from(kind)].push(took);
            }
            (metas, downloads, publishes)
        });
        assert_eq!(
            (metas.len(), downloads.len(), publishes.len()),
            (1000, 200, 20)
        );
        for (version, bytes) in &fresh {
            let (_, meta) = registry.get(&format!("/api/v1/packages/{ns}/json/{version}"));
            assert_eq!(
                meta["sha256"],
                json!(archive::sha256_hex(bytes)),
                "{version}"
            );
            let served = registry
                .get_bytes(&format!("/api/v1/packages/{ns}/json/{version}/archive"))
                .1;
            assert_eq!(&served, bytes, "{version}");
        }
        let (_, listing) = registry.get(&format!("/api/v1/packages/{ns}/json"));
        assert_eq!(listing["versions"].as_array().map(Vec::len), Some(21));
        let kind = database.as_deref().map_or("sqlite", |_| "postgres");
        for (what, times) in [
            ("metadata", metas),
            ("download", downloads),
            ("publish", publishes),
        ] {
            let (p50, p99, max) = figures(times);
            eprintln!("load on {kind}: {what}: p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms");
        }
    }
}

#[test]
fn a_data_directory_with_url_characters_holds_its_own_index() {
    let sandbox = Sandbox::new();
    let data = sandbox.dir.path().join("reg?mode=ro#x %41");
    let mut command = sandbox.command("http://127.0.0.1:9");
    command
        .args([
            "registry",
            "user",
            "add",
            "zed",
            "--namespace",
            "zeds",
            "--password-stdin",
            "--data",
        ])
        .arg(&data);
    let out = run_raw(command, Some("pw\n"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        data.join("registry.db").is_file(),
        "the index is not in {}",
        data.display()
    );
    let strays: Vec<_> = std::fs::read_dir(sandbox.dir.path())
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        strays
            .iter()
            .all(|n| !n.to_string_lossy().starts_with("reg")
                || *n == *data.file_name().unwrap_or_default()),
        "{strays:?}"
    );
}

// ---- the API's types -------------------------------------------------------------------------

/// The status and the body, as text.
fn raw(request: reqwest::RequestBuilder) -> (StatusCode, String) {
    block(async {
        let response = request.send().await.expect("send request");
        let status = response.status();
        (status, response.text().await.unwrap_or_default())
    })
}

/// `body` read into `T` and written back is byte for byte what the server sent: no field
/// more, none renamed, none reordered.
fn exactly<T: serde::Serialize + serde::de::DeserializeOwned>(what: &str, body: &str) -> T {
    let parsed: T = serde_json::from_str(body).unwrap_or_else(|e| panic!("{what}: {e}: {body}"));
    let written = serde_json::to_string(&parsed).expect("serialise parsed");
    assert_eq!(written, body, "{what}");
    parsed
}

/// An error answer: exactly an `ErrorBody`, with its code's status.
fn api_error(what: &str, (status, body): (StatusCode, String)) -> splice::registry::api::ErrorCode {
    let error: splice::registry::api::ErrorBody = exactly(what, &body);
    assert_eq!(status.as_u16(), error.error.code.status(), "{what}: {body}");
    error.error.code
}

/// Every answer of the API is one of `registry::api`'s types exactly, so the server and the
/// client (which reads the same types) cannot drift apart.
#[test]
fn every_answer_is_exactly_its_api_type() {
    use splice::registry::api::{self, ErrorCode};
    let registry = Registry::start(None);
    let (user, ns) = (unique("tess"), unique("tesss"));
    registry.add_user(&user, &ns);
    let url = |path: &str| format!("{}{}{path}", registry.url, api::PREFIX);
    let token_request = |body: String| {
        client()
            .post(url("/device/token"))
            .header("content-type", "application/json")
            .body(body)
    };

    let (status, body) = raw(client().post(url("/device/code")));
    assert_eq!(status, StatusCode::OK, "{body}");
    let code: api::DeviceCodeResponse = exactly("device code", &body);
    for (what, request) in [
        ("no body", "{}".to_string()),
        (
            "unknown code",
            json!({"device_code": "0".repeat(64)}).to_string(),
        ),
    ] {
        let (status, body) = raw(token_request(request));
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        exactly::<api::DeviceError>(what, &body);
    }
    let approved = registry.run(&["approve", &code.user_code, "--user", &user], None);
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    let request = api::DeviceTokenRequest {
        device_code: code.device_code.clone(),
    };
    let (status, body) = raw(token_request(
        serde_json::to_string(&request).unwrap_or_default(),
    ));
    assert_eq!(status, StatusCode::OK);
    let token: api::DeviceToken = exactly("token", &body);
    assert_eq!(token.token_type, api::TOKEN_TYPE);
    let bearer = |request: reqwest::RequestBuilder| request.bearer_auth(&token.access_token);

    let (status, body) = raw(bearer(client().get(url("/me"))));
    assert_eq!(status, StatusCode::OK, "{body}");
    exactly::<api::Me>("me", &body);
    assert_eq!(
        api_error("no token", raw(client().get(url("/me")))),
        ErrorCode::Unauthenticated
    );

    let bytes = package(&registry.sandbox, &ns, "json", "0.1.0", "Parse JSON");
    let put = |version: &str, bytes: Vec<u8>| {
        bearer(client().put(url(&format!("/packages/{ns}/json/{version}"))))
            .header("content-type", "application/gzip")
            .body(bytes)
    };
    let (status, body) = raw(put("0.1.0", bytes.clone()));
    assert_eq!(status, StatusCode::CREATED, "{body}");
    exactly::<api::Published>("published", &body);
    assert_eq!(
        api_error("republish", raw(put("0.1.0", bytes))),
        ErrorCode::VersionExists
    );
    assert_eq!(
        api_error("garbage", raw(put("0.2.0", b"not an archive".to_vec()))),
        ErrorCode::InvalidPackage
    );
    assert_eq!(
        api_error("build metadata", raw(put("0.2.0+x", Vec::new()))),
        ErrorCode::InvalidPackage
    );
    let other = unique("others");
    let (status, body) = raw(bearer(
        client().put(url(&format!("/packages/{other}/json/0.1.0"))),
    ));
    assert_eq!(
        api_error("not yours", (status, body)),
        ErrorCode::NamespaceForbidden
    );

    let (status, body) = raw(client().get(url(&format!("/packages/{ns}/json"))));
    assert_eq!(status, StatusCode::OK, "{body}");
    exactly::<api::PackageVersions>("package", &body);
    let (status, body) = raw(client().get(url(&format!("/packages/{ns}/json/0.1.0"))));
    assert_eq!(status, StatusCode::OK, "{body}");
    exactly::<api::VersionMeta>("version", &body);
    assert_eq!(
        api_error(
            "no version",
            raw(client().get(url(&format!("/packages/{ns}/json/9.9.9"))))
        ),
        ErrorCode::NotFound
    );
    let (status, body) = raw(client().get(url(&format!("/search?q={ns}"))));
    assert_eq!(status, StatusCode::OK, "{body}");
    let found: api::SearchResults = exactly("search", &body);
    assert_eq!(found.packages.len(), 1, "{body}");
    let (status, body) = raw(bearer(
        client().post(url(&format!("/packages/{ns}/json/0.1.0/yank"))),
    ));
    assert_eq!(status, StatusCode::OK, "{body}");
    exactly::<api::Yanked>("yank", &body);
    assert_eq!(
        api_error("no endpoint", raw(client().get(url("/nothing-here")))),
        ErrorCode::NotFound
    );

    let (status, body) = raw(bearer(client().delete(url("/tokens/current"))));
    assert_eq!(status, StatusCode::OK, "{body}");
    exactly::<api::Revoked>("revoked", &body);
    assert_eq!(
        api_error(
            "revoked twice",
            raw(bearer(client().delete(url("/tokens/current"))))
        ),
        ErrorCode::Unauthenticated
    );
}
