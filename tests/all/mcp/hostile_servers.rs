//! Attacks on the MCP support (issue 13) through the real binary: a hostile repository, a
//! hostile server, a hostile model. Each test names what it tried; each failed before its fix.

use crate::support;

use serde_json::{Value, json};
use splice::mcp::{ServerConfig, ServerEntry};
use support::fake_provider::{FakeProvider, Reply, anthropic};
use support::{Outcome, Sandbox, run, run_raw, stream_json};

fn server_value(entry: &ServerEntry) -> Value {
    match &entry.config {
        ServerConfig::Stdio {
            command, args, env, ..
        } => {
            json!({"command": command, "args": args, "env": env})
        }
        ServerConfig::Http { url, headers } => json!({"url": url, "headers": headers}),
    }
}

fn servers_file(servers: &[(&str, Value)]) -> String {
    let map: serde_json::Map<String, Value> = servers
        .iter()
        .map(|(name, value)| (name.to_string(), value.clone()))
        .collect();
    json!({ "mcpServers": map }).to_string()
}

/// The user's config file names these servers.
fn configure(sandbox: &Sandbox, servers: &[(&str, Value)]) {
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        servers_file(servers),
    )
    .expect("write config.json");
}

fn exec(sandbox: &Sandbox, provider: &FakeProvider, args: &[&str]) -> Outcome {
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command)
        .args(["--provider", "anthropic", "--tier", "light"])
        .args(args);
    let out = run(command, None);
    out.assert_well_formed();
    out
}

fn warnings(out: &Outcome, code: &str) -> Vec<String> {
    out.of_type("warning")
        .iter()
        .filter(|w| w["code"] == code)
        .filter_map(|w| w["message"].as_str().map(str::to_string))
        .collect()
}

fn offered_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

/// A `.mcp.json` server whose command creates `marker` (then is no server at all).
fn marker_server(marker: &std::path::Path) -> Value {
    json!({"command": "sh", "args": ["-c", format!("touch '{}'", marker.display())]})
}

/// A repository's `.mcp.json` is a file Splice reads on its own, so it is opened beneath the
/// root as a regular file: a link out of the root is not read (even with
/// `--trust-project-mcp`, its server never starts), and a FIFO (or `/dev/zero`) cannot hang the
/// run or grow its memory. Each is a warning naming the file; the run completes.
#[test]
fn a_project_mcp_json_is_read_only_as_a_regular_file_beneath_the_root() {
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("started.marker");
    let outside = sandbox.dir.path().join("elsewhere.json");
    std::fs::write(&outside, servers_file(&[("proj", marker_server(&marker))]))
        .expect("write outside");
    std::os::unix::fs::symlink(&outside, sandbox.root.join(".mcp.json"))
        .expect("link .mcp.json to outside");
    let provider = FakeProvider::start(vec![
        anthropic::answer(&["Hi."]),
        anthropic::answer(&["Hi again."]),
    ]);
    let out = exec(&sandbox, &provider, &["--trust-project-mcp", "Hello."]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        !marker.exists(),
        "a .mcp.json linked from outside the root ran"
    );
    let failed = warnings(&out, "mcp_server_failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].contains(".mcp.json"), "{failed:?}");

    std::fs::remove_file(sandbox.root.join(".mcp.json")).expect("remove .mcp.json");
    let made = std::process::Command::new("mkfifo")
        .arg(sandbox.root.join(".mcp.json"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    // Before the fix the run blocked here for ever, opening the FIFO for a writer.
    let out = exec(&sandbox, &provider, &["Hello."]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let failed = warnings(&out, "mcp_server_failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].contains("not a regular file"), "{failed:?}");
    assert_eq!(out.final_result()["status"], "completed");
}

/// An HTTP server that redirects elsewhere must not get the configured headers sent on to the
/// other host: reqwest drops only `Authorization` and cookies on a cross-host redirect, so an
/// `X-Api-Key` went along. Splice follows no redirect: the server fails, naming the status.
#[test]
fn an_http_servers_redirect_does_not_carry_its_headers_to_another_host() {
    let sandbox = Sandbox::new();
    let elsewhere = FakeProvider::start(vec![
        Reply::Status {
            code: 404,
            headers: vec![],
            body: "{}".into(),
        };
        4
    ]);
    let port = elsewhere.url.rsplit(':').next().unwrap_or_default();
    let location = format!("http://localhost:{port}/mcp");
    let redirecting = FakeProvider::start(vec![
        Reply::Status {
            code: 307,
            headers: vec![("location".into(), location)],
            body: String::new(),
        };
        4
    ]);
    configure(
        &sandbox,
        &[(
            "docs",
            json!({"type": "http", "url": format!("{}/mcp", redirecting.url), "headers": {
                "Authorization": "Bearer sekrit-bearer-1234",
                "X-Api-Key": "sekrit-apikey-5678"
            }}),
        )],
    );
    let mut command = sandbox.command("http://127.0.0.1:9");
    command.args(["mcp", "list", "--json"]);
    let out = run_raw(command, None);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        !redirecting.requests().is_empty(),
        "the server was not asked"
    );
    for request in elsewhere.requests() {
        for (name, value) in &request.headers {
            assert!(
                !value.contains("sekrit"),
                "the redirect carried `{name}: {value}` to another host"
            );
        }
    }
    let listed: Value = serde_json::from_str(&out.stdout).expect("parse out.stdout as JSON");
    assert_eq!(listed["servers"][0]["state"], "failed", "{listed}");
    assert!(!out.stdout.contains("sekrit") && !out.stderr.contains("sekrit"));
}

/// A secret in a server's configured `env` (a name such as `HOSTILE_TOKEN`) or in its headers
/// is not in Splice's own environment, so the output redaction did not know it: a server that
/// echoes it in a result, or on stderr before dying (quoted in the warning and the call's
/// error), put it on stdout. Such values are redacted from what a server says.
#[test]
fn a_servers_configured_secrets_do_not_reach_the_event_stream() {
    let sandbox = Sandbox::new();
    let secret = "hush-hush-4321-abcd";
    let server = support::mcp::hostile("leaky", &["leak"], &[("HOSTILE_TOKEN", secret)]);
    configure(&sandbox, &[("leaky", server_value(&server))]);
    let provider = FakeProvider::start(vec![
        anthropic::tool_call("toolu_1", "mcp__leaky__leak", &["{}"]),
        anthropic::tool_call("toolu_2", "mcp__leaky__leak-crash", &["{}"]),
        anthropic::answer(&["Done."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        &["--allow", "mcp__leaky__*", "Leak it."],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let results = out.of_type("tool_result");
    assert_eq!(results.len(), 2, "{}", out.stdout);
    assert_eq!(results[0]["status"], "ok", "{}", results[0]);
    assert!(
        results[0]["output"]
            .as_str()
            .unwrap_or_default()
            .starts_with("token="),
        "{}",
        results[0]
    );
    assert_eq!(results[1]["status"], "error", "{}", results[1]);
    assert_eq!(warnings(&out, "mcp_server_failed").len(), 1);
    assert!(!out.stdout.contains(secret), "{}", out.stdout);
    assert!(!out.stderr.contains(secret), "{}", out.stderr);
    for request in provider.requests() {
        assert!(
            !request.body.to_string().contains(secret),
            "sent to the model"
        );
    }
}

/// A server name ending in `_` made wire names that rules for another server cover:
/// `--allow 'mcp__a__*'` (meant for the user's server `a`) matched `mcp__a___env`, the tool
/// `env` of a project server `a_`, and two servers `a` (tool `_env`) and `a_` (tool `env`)
/// offered the same name twice. Server names may not start or end with `_`.
#[test]
fn a_server_named_with_a_trailing_underscore_is_not_covered_by_anothers_rule() {
    let sandbox = Sandbox::new();
    let mine = support::mcp::hostile("a", &[], &[]);
    configure(&sandbox, &[("a", server_value(&mine))]);
    let theirs = support::mcp::hostile("a_", &["env-dump"], &[]);
    sandbox.write(".mcp.json", &servers_file(&[("a_", server_value(&theirs))]));
    let provider = FakeProvider::start(vec![
        anthropic::tool_call("toolu_1", "mcp__a___env", &["{}"]),
        anthropic::answer(&["Done."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        &["--trust-project-mcp", "--allow", "mcp__a__*", "Run env."],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let result = out.first("tool_result");
    assert_ne!(
        result["status"], "ok",
        "another server's rule ran it: {result}"
    );
    let failed = warnings(&out, "mcp_server_failed");
    assert!(
        failed.iter().any(|w| w.contains("a_")),
        "the name is refused, naming it: {failed:?}"
    );

    let mut command = sandbox.command("http://127.0.0.1:9");
    command.args(["mcp", "add", "_b", "--", "true"]);
    let out = run_raw(command, None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("`_b`"), "{}", out.stderr);
}

/// Descriptions were capped but input schemas were not: 200 tools of 60 KB schemas put 12 MB
/// into every model request. A tool whose schema is too large is left out (said in the
/// server's last error), and the rest of the server's tools are offered.
#[test]
fn giant_tool_schemas_do_not_flood_the_model_request() {
    let sandbox = Sandbox::new();
    let server = support::mcp::hostile("big", &["giant-schemas"], &[]);
    configure(&sandbox, &[("big", server_value(&server))]);
    let provider = FakeProvider::start(vec![anthropic::answer(&["Hi."])]);
    let out = exec(&sandbox, &provider, &["Hello."]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let requests = provider.requests();
    let body = requests[0].body.to_string();
    assert!(
        body.len() < 1024 * 1024,
        "{} bytes in one request",
        body.len()
    );
    assert!(offered_tools(&requests[0].body).contains(&"mcp__big__echo".to_string()));
}

/// `tools/list` was read page after page for as long as the server handed out cursors: a
/// server that never stops grew memory until the startup timeout failed it. Splice reads at
/// most 200 tools' worth and 50 pages, and the server is ready with what it read.
#[test]
fn a_server_that_pages_for_ever_is_cut_off_and_ready() {
    let sandbox = Sandbox::new();
    let server = support::mcp::hostile("pages", &["endless-pages"], &[]);
    configure(&sandbox, &[("pages", server_value(&server))]);
    let provider = FakeProvider::start(vec![anthropic::answer(&["Hi."])]);
    let out = exec(&sandbox, &provider, &["Hello."]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        warnings(&out, "mcp_server_failed").is_empty(),
        "{}",
        out.stdout
    );
    let offered = offered_tools(&provider.requests()[0].body);
    let ours: Vec<&String> = offered
        .iter()
        .filter(|t| t.starts_with("mcp__pages__"))
        .collect();
    assert!(ours.iter().any(|t| *t == "mcp__pages__echo"), "{offered:?}");
    assert!(ours.len() <= 200, "{} tools", ours.len());
}

/// The descriptors of this (test) process that its children inherit: those without
/// close-on-exec (`O_CLOEXEC` is 02000000 in `/proc/self/fdinfo`'s octal `flags`).
fn inheritable_fds() -> std::collections::BTreeSet<String> {
    let entries = std::fs::read_dir("/proc/self/fdinfo").expect("list /proc/self/fdinfo");
    entries
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().to_string_lossy().into_owned();
            let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{name}")).ok()?;
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?.trim();
            let flags = u32::from_str_radix(flags, 8).ok()?;
            (flags & 0o2000000 == 0).then_some(name)
        })
        .collect()
}

/// A stdio server inherits no file descriptor Splice opened (its log, a socket to the
/// provider, the session store): beyond its three pipes it has at most what Splice itself
/// inherited from its parent without close-on-exec (not enforced; see docs/mcp.md).
#[test]
fn a_server_inherits_no_descriptor_splice_opened() {
    let sandbox = Sandbox::new();
    let server = support::mcp::hostile("h", &["fds"], &[]);
    configure(&sandbox, &[("h", server_value(&server))]);
    let provider = FakeProvider::start(vec![
        anthropic::tool_call("toolu_1", "mcp__h__fds", &["{}"]),
        anthropic::answer(&["Done."]),
    ]);
    let passed_on = inheritable_fds();
    let out = exec(
        &sandbox,
        &provider,
        &["--allow", "mcp__h__fds", "List fds."],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let result = out.first("tool_result");
    assert_eq!(result["status"], "ok", "{result}");
    let seen: serde_json::Map<String, Value> =
        serde_json::from_str(result["output"].as_str().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}: {result}"));
    for fd in seen.keys() {
        assert!(
            passed_on.contains(fd),
            "the server got fd {fd} ({}), which Splice opened",
            seen[fd]
        );
    }
}

/// A result of 100000 tiny images: only 8 are given to the model, but each of the rest was
/// named on a line of its own after the 30 KiB cap, so the `tool_result` (and the model's
/// next request) carried megabytes of `[image: …]` lines. The lines are capped too.
#[test]
fn a_flood_of_tiny_images_does_not_bypass_the_output_cap() {
    let sandbox = Sandbox::new();
    let server = support::mcp::hostile("pics", &["many-images"], &[]);
    configure(&sandbox, &[("pics", server_value(&server))]);
    let provider = FakeProvider::start(vec![
        anthropic::tool_call("toolu_1", "mcp__pics__images", &["{}"]),
        anthropic::answer(&["Done."]),
    ]);
    let out = exec(&sandbox, &provider, &["--allow", "mcp__pics__*", "Images."]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.first("tool_result");
    assert_eq!(result["status"], "ok");
    let output = result["output"].as_str().unwrap_or_default();
    assert!(output.len() < 40 * 1024, "{} bytes of output", output.len());
    assert!(output.contains("99984 more images"), "{output}");
    let requests = provider.requests();
    assert!(
        requests[1].body.to_string().len() < 200 * 1024,
        "{} bytes sent to the model",
        requests[1].body.to_string().len()
    );
}

/// A server that ignores SIGTERM and leaves a grandchild in a session of its own holding its
/// stdout: the run still ends (everything killed, the connection's wait bounded), and the
/// grandchild, out of the server's group, ends with it (the supervisor owns every descendant).
#[test]
fn a_stubborn_server_with_an_escaped_grandchild_does_not_hold_the_run() {
    let sandbox = Sandbox::new();
    let pid_file = sandbox.dir.path().join("grandchild.pid");
    let pid_path = pid_file.display().to_string();
    let server = support::mcp::hostile("stub", &["stubborn"], &[("HOSTILE_PID_FILE", &pid_path)]);
    configure(&sandbox, &[("stub", server_value(&server))]);
    let provider = FakeProvider::start(vec![anthropic::answer(&["Hi."])]);
    let out = exec(&sandbox, &provider, &["Hello."]);
    let grandchild = std::fs::read_to_string(&pid_file)
        .unwrap_or_default()
        .trim()
        .parse::<i32>()
        .ok();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.final_result()["status"], "completed");
    let Some(pid) = grandchild else {
        panic!("the server did not start its grandchild");
    };
    assert!(
        support::ended(pid),
        "the server's grandchild {pid} outlived the run"
    );
}

/// A server may send progress notifications as fast as it can write: each became a
/// `tool_progress` event, so 100000 of them put 100000 lines on stdout (and as many tasks in
/// flight behind a slow reader). A call passes on at most 1000 reports, and only those that
/// change what is shown (the whole percent or the message).
#[test]
fn a_progress_flood_is_bounded() {
    let sandbox = Sandbox::new();
    let server = support::mcp::hostile("noisy", &["progress-flood"], &[]);
    configure(&sandbox, &[("noisy", server_value(&server))]);
    let provider = FakeProvider::start(vec![
        anthropic::tool_call("toolu_1", "mcp__noisy__flood", &["{}"]),
        anthropic::answer(&["Done."]),
    ]);
    let out = exec(&sandbox, &provider, &["--allow", "mcp__noisy__*", "Flood."]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.first("tool_result")["status"], "ok");
    let reports = out.of_type("tool_progress");
    assert!(!reports.is_empty(), "progress still reaches the stream");
    assert!(
        reports.len() <= 1000,
        "{} tool_progress events",
        reports.len()
    );
}

/// The input schemas of every MCP tool offered, by wire name.
fn offered_schemas(body: &Value) -> Vec<(String, Value)> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t["name"].as_str()?.to_string(), t["input_schema"].clone())))
        .filter(|(name, _)| name.starts_with("mcp__"))
        .collect()
}

/// Providers refuse a whole request whose tool has an input schema that is not an object
/// (Anthropic: `input_schema.type: Input should be 'object'`), so one server's bad tool failed
/// every request of the run rather than failing alone. Such a tool is left out; a schema
/// without a `type` gets `"type": "object"`.
#[test]
fn a_tool_whose_schema_is_not_an_object_is_left_out() {
    let sandbox = Sandbox::new();
    let server = support::mcp::hostile("h", &["bad-schema"], &[]);
    configure(&sandbox, &[("h", server_value(&server))]);
    let provider = FakeProvider::start(vec![anthropic::answer(&["Hi."])]);
    let out = exec(&sandbox, &provider, &["Hello."]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let schemas = offered_schemas(&provider.requests()[0].body);
    let names: Vec<&str> = schemas.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"mcp__h__echo"), "{names:?}");
    assert!(names.contains(&"mcp__h__untyped"), "{names:?}");
    assert!(!names.contains(&"mcp__h__scalar"), "{names:?}");
    for (name, schema) in &schemas {
        assert_eq!(schema["type"], "object", "{name}: {schema}");
    }
}

/// An approval named its root by the path's lossy text, so an approval for `proj\xff` also
/// approved `proj\xfe` (both read `proj�`): a server approved there (whose relative command
/// finds a different file in each) started in the other directory. A root that is not UTF-8
/// is never approved (`--trust-project-mcp` still starts its servers for one run).
#[test]
fn an_approval_for_a_non_utf8_root_does_not_cover_a_lookalike() {
    use std::os::unix::ffi::OsStrExt;
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("started.marker");
    let approved_root = sandbox
        .dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"proj\xff"));
    let lookalike = sandbox
        .dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"proj\xfe"));
    let file = servers_file(&[("proj", marker_server(&marker))]);
    for root in [&approved_root, &lookalike] {
        std::fs::create_dir_all(root).expect("create root");
        std::fs::write(root.join(".mcp.json"), &file).expect("write .mcp.json");
    }
    let entry = ServerEntry {
        name: "proj".into(),
        config: ServerConfig::Stdio {
            command: "sh".into(),
            args: vec!["-c".into(), format!("touch '{}'", marker.display())],
            env: Default::default(),
            env_passthrough: Vec::new(),
        },
        source: splice::mcp::Source::Project,
        pins: Vec::new(),
    };
    let canonical = approved_root
        .canonicalize()
        .expect("canonicalize approved_root");
    // Refused now; before, recorded under the lossy text.
    let _ = splice::mcp::approval::Approvals::load(&splice::layout::Layout::at(&sandbox.data))
        .approve(&canonical, &entry);
    let provider = FakeProvider::start(vec![anthropic::answer(&["Hi."])]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command)
        .args(["--provider", "anthropic", "--tier", "light", "Hello."])
        .current_dir(&lookalike);
    let out = run(command, None);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        !marker.exists(),
        "the lookalike's server started on another root's approval"
    );
    assert_eq!(
        warnings(&out, "mcp_server_unapproved").len(),
        1,
        "{}",
        out.stdout
    );
}

/// A command nobody approved (auto mode, confined) must not reach into a server's pipes through
/// `/proc/PID/fd`: writing to the server's stdout would forge JSON-RPC messages to Splice
/// (results, `tools/list_changed`), reading its stdin would steal the calls. The server is
/// outside the command's Landlock domain, so the kernel refuses the open.
#[test]
fn a_confined_command_cannot_reach_a_servers_pipes() {
    let sandbox = Sandbox::new();
    let pid_file = sandbox.dir.path().join("server.pid");
    let pid_path = pid_file.display().to_string();
    let server = support::mcp::hostile("h", &["pid"], &[("HOSTILE_PID_FILE", &pid_path)]);
    configure(&sandbox, &[("h", server_value(&server))]);
    let forge = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
    sandbox.write(
        "poke.sh",
        &format!(
            "p=$(cat '{pid_path}')\n\
             printf '%s\\n' '{forge}' > /proc/$p/fd/1 && echo WROTE\n\
             ( : < /proc/$p/fd/0 ) && echo READ\n\
             echo checked\n"
        ),
    );
    let command = "sh poke.sh";
    let provider = FakeProvider::start(vec![
        anthropic::tool_call(
            "toolu_1",
            "run_command",
            &[&json!({ "command": command }).to_string()],
        ),
        anthropic::answer(&["Done."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        &["--permission-mode", "auto", "Poke it."],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(pid_file.exists(), "the server did not start");
    let result = out.first("tool_result");
    let output = result["output"].as_str().unwrap_or_default();
    assert!(output.contains("checked"), "{result}");
    assert!(output.contains("Permission denied"), "{result}");
    assert!(
        !output.contains("WROTE"),
        "a confined command wrote to the server's stdout: {result}"
    );
    assert!(
        !output.contains("READ"),
        "a confined command read the server's stdin: {result}"
    );
}

/// What a server answers may end up in its failure: a `tools/list` error of 1 MB became a
/// `warning` of 1 MB (and the server's last error). A server's failure message is capped.
#[test]
fn a_huge_error_from_a_server_does_not_make_a_huge_warning() {
    let sandbox = Sandbox::new();
    let server = support::mcp::hostile("h", &["list-error"], &[]);
    configure(&sandbox, &[("h", server_value(&server))]);
    let provider = FakeProvider::start(vec![anthropic::answer(&["Hi."])]);
    let out = exec(&sandbox, &provider, &["Hello."]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let failed = warnings(&out, "mcp_server_failed");
    assert_eq!(failed.len(), 1, "{}", out.stdout.len());
    assert!(failed[0].contains("no tools"), "{}", &failed[0][..200]);
    assert!(
        failed[0].len() < 4096,
        "{} bytes of warning",
        failed[0].len()
    );
}

/// A tool that claims to only read (`get-sum` has `readOnlyHint: true`) does not run unasked in
/// `accept-edits` mode either (held): the claim is the server's, so without an allow rule a
/// headless run denies it.
#[test]
fn a_read_only_claim_does_not_run_unasked_in_accept_edits_mode() {
    let sandbox = Sandbox::new();
    let server = support::mcp::everything("everything");
    configure(&sandbox, &[("everything", server_value(&server))]);
    let provider = FakeProvider::start(vec![
        anthropic::tool_call("toolu_1", "mcp__everything__get-sum", &[r#"{"a":2,"b":3}"#]),
        anthropic::answer(&["Done."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        &["--permission-mode", "accept-edits", "Add."],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let call = out.first("tool_call");
    assert_eq!(call["sideEffect"], "read", "{call}");
    assert_eq!(out.first("tool_result")["status"], "denied");
}
