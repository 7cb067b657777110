//! The package runtime: one tool call is one fresh, sandboxed Node process.
//!
//! Input is checked against the tool's schema before anything starts; Node runs the harness
//! (`harness.cjs`, passed with `-e`, so there is no file to swap) through the launcher
//! (`launch.rs`) with Node's permission model: reads of the package and the declared
//! `fs.read` paths only, writes of the declared `fs.write` paths only, no child processes,
//! workers, addons or WASI; an environment holding only the declared variables; no network
//! unless declared (a network namespace); the tool's timeout, enforced by killing its process
//! group. The result comes back on a channel of its own and is checked against the output
//! schema after the process ended.

pub(crate) mod capture;
use splice_sandbox::launch;
mod node;
mod strip;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::manifest::Tool;
use super::package::Package;
use super::secrets;
use crate::sanitize::redact::Redactor;

pub use launch::{LAUNCH_ARG, LAUNCHER_BIN, NO_NETNS_ENV, launcher_beside, main as launcher_main};
pub use node::{MINIMUM as MINIMUM_NODE, NODE_ENV, NodeBinary, find_node, parse_version};

/// Largest output a tool may return.
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

pub struct CallRequest<'a> {
    pub package: &'a Package,
    pub tool: &'a str,
    pub input: Value,
    /// What `permissions.fs` paths and `ctx.paths.project` are relative to; the cwd of the call.
    pub project_root: &'a Path,
    pub node: &'a NodeBinary,
}

#[derive(Debug)]
pub struct CallOutcome {
    pub result: Result<Value, CallError>,
    /// What the tool printed (`console.*`, `ctx.log`, stderr), capped.
    pub logs: Vec<String>,
    pub ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct CallError {
    pub code: CallErrorCode,
    pub message: String,
}

impl CallError {
    pub fn new(code: CallErrorCode, message: impl Into<String>) -> CallError {
        CallError {
            code,
            message: message.into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallErrorCode {
    InvalidInput,
    InvalidOutput,
    ToolError,
    Timeout,
    PermissionDenied,
    NodeMissing,
    NodeTooOld,
}

impl CallErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            CallErrorCode::InvalidInput => "INVALID_INPUT",
            CallErrorCode::InvalidOutput => "INVALID_OUTPUT",
            CallErrorCode::ToolError => "TOOL_ERROR",
            CallErrorCode::Timeout => "TIMEOUT",
            CallErrorCode::PermissionDenied => "PERMISSION_DENIED",
            CallErrorCode::NodeMissing => "NODE_MISSING",
            CallErrorCode::NodeTooOld => "NODE_TOO_OLD",
        }
    }

    fn from_harness(code: &str) -> CallErrorCode {
        match code {
            "INVALID_OUTPUT" => CallErrorCode::InvalidOutput,
            "PERMISSION_DENIED" => CallErrorCode::PermissionDenied,
            _ => CallErrorCode::ToolError,
        }
    }
}

impl std::fmt::Display for CallErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Variables a package may not be given even when it declares them: Node and the dynamic
/// loader read them to load code or change Node's flags (`NODE_OPTIONS=--allow-child-process`
/// would undo the sandbox).
const LOADER_PREFIXES: [&str; 5] = ["NODE_", "LD_", "DYLD_", "OPENSSL_", "UV_"];

/// Run one tool call. Cancel-safe: dropping the future kills the tool's process group, and the
/// process is reaped.
pub async fn call(request: CallRequest<'_>) -> CallOutcome {
    let started = Instant::now();
    let mut logs = Vec::new();
    let result = run(&request, &mut logs).await;
    let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    redacted(CallOutcome { result, logs, ms }, &Redactor::from_env())
}

/// The outcome without the secrets Splice knows (its environment's secret values, token
/// shapes): whatever a tool returns, logs or says in an error reaches stdout, a terminal or
/// the model only after this, whether it was given a secret or found one.
fn redacted(mut outcome: CallOutcome, redactor: &Redactor) -> CallOutcome {
    let scrub = |text: &mut String| {
        if let Some(clean) = redactor.redact_str(text) {
            *text = clean;
        }
    };
    match &mut outcome.result {
        Ok(output) => {
            redactor.redact_json(output);
        }
        Err(error) => scrub(&mut error.message),
    }
    outcome.logs.iter_mut().for_each(scrub);
    outcome
}

/// What `node --test` said about a package's own tests.
pub struct TestRun {
    pub passed: bool,
    /// Its report (TAP), capped like logs.
    pub output: Vec<String>,
}

/// Longest a package's `node --test` run may take.
const TESTS_TIMEOUT: Duration = Duration::from_secs(300);

/// `node --test FILES…` (relative to the package) in the package directory, in the tools'
/// sandbox with nothing granted beyond reading the package, every test in one process (the
/// permission model allows no child processes).
pub async fn run_node_tests(
    package: &Package,
    node: &NodeBinary,
    files: &[String],
) -> Result<TestRun, CallError> {
    let grants = Grants::package_only(package);
    let mut tail: Vec<&OsStr> = vec![
        "--disable-warning=ExperimentalWarning".as_ref(),
        "--experimental-test-isolation=none".as_ref(),
        "--test-reporter=spec".as_ref(),
        "--test".as_ref(),
    ];
    tail.extend(files.iter().map(|f| OsStr::new(f.as_str())));
    let command = grants.command(node, &package.dir, &tail)?;
    let finished = capture::run(command, String::new(), TESTS_TIMEOUT).await;
    match finished.ended {
        capture::Ended::Exited {
            result: Some(line), ..
        } => Err(read_result_error(&line)),
        capture::Ended::Exited { success, .. } => Ok(TestRun {
            passed: success,
            output: finished.logs,
        }),
        capture::Ended::TimedOut => Err(CallError::new(
            CallErrorCode::Timeout,
            format!("the tests took longer than {} s", TESTS_TIMEOUT.as_secs()),
        )),
        capture::Ended::OutputTooLarge => Err(CallError::new(
            CallErrorCode::ToolError,
            "the tests wrote on the result channel",
        )),
        capture::Ended::Failed(why) => Err(CallError::new(CallErrorCode::ToolError, why)),
    }
}

/// A line on the result channel outside a tool call: only the launcher's refusal writes one.
fn read_result_error(line: &[u8]) -> CallError {
    let value: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
    let message = value["message"]
        .as_str()
        .unwrap_or("the tests wrote on the result channel");
    CallError::new(
        CallErrorCode::from_harness(value["code"].as_str().unwrap_or_default()),
        message,
    )
}

async fn run(request: &CallRequest<'_>, logs: &mut Vec<String>) -> Result<Value, CallError> {
    let package = request.package;
    let tool = package.tool(request.tool).ok_or_else(|| {
        let names: Vec<&str> = package
            .manifest
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        CallError::new(
            CallErrorCode::InvalidInput,
            format!(
                "{} has no tool `{}` (tools: {})",
                package.id(),
                request.tool,
                names.join(", ")
            ),
        )
    })?;
    let issues = tool.input.validate(&request.input, "input");
    if !issues.is_empty() {
        let text: Vec<String> = issues.iter().map(ToString::to_string).collect();
        return Err(CallError::new(CallErrorCode::InvalidInput, text.join("; ")));
    }
    check_node(package, request.node)?;
    let root = request.project_root.canonicalize().map_err(|e| {
        CallError::new(
            CallErrorCode::PermissionDenied,
            format!(
                "the project root {} cannot be used: {e}",
                request.project_root.display()
            ),
        )
    })?;
    let grants = Grants::new(package, &root)?;
    let modules = strip::prepared(package, request.node).await;
    let stdin = json!({
        "entry": package.dir.join(&tool.entry),
        "input": request.input,
        "ctx": {
            "package": {"id": package.id(), "version": package.manifest.version},
            "tool": tool.name,
            "paths": {"project": root, "package": package.dir},
            "permissions": {
                "fs": {"read": package.manifest.permissions.fs_read, "write": package.manifest.permissions.fs_write},
                "network": package.manifest.permissions.network,
                "env": package.manifest.permissions.env,
            },
        },
        "modules": modules,
        // Where the declared paths really are, for the harness's PERMISSION_DENIED messages.
        "grants": {"read": grants.read, "write": grants.write},
    });
    let harness: [&OsStr; 3] = [
        "--disable-warning=ExperimentalWarning".as_ref(),
        "-e".as_ref(),
        include_str!("harness.cjs").as_ref(),
    ];
    let command = grants.command(request.node, &root, &harness)?;
    let finished = capture::run(command, stdin.to_string(), timeout(tool)).await;
    logs.extend(finished.logs);
    let line = match finished.ended {
        capture::Ended::TimedOut => {
            return Err(CallError::new(
                CallErrorCode::Timeout,
                format!("{} took longer than {} ms", tool.name, tool.timeout_ms),
            ));
        }
        capture::Ended::OutputTooLarge => {
            return Err(CallError::new(
                CallErrorCode::InvalidOutput,
                format!("the output is over {MAX_OUTPUT_BYTES} bytes"),
            ));
        }
        capture::Ended::Failed(why) => return Err(CallError::new(CallErrorCode::ToolError, why)),
        capture::Ended::Exited { result, status, .. } => match result {
            Some(line) => line,
            None => {
                return Err(CallError::new(
                    CallErrorCode::ToolError,
                    format!("the tool's process ended without a result ({status})"),
                ));
            }
        },
    };
    read_result(tool, &line)
}

/// The harness's line: `{"ok":true,"output":…}` or `{"ok":false,"code","message"}`.
fn read_result(tool: &Tool, line: &[u8]) -> Result<Value, CallError> {
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        CallError::new(
            CallErrorCode::InvalidOutput,
            format!("the result is not JSON: {e}"),
        )
    })?;
    if value.get("ok") == Some(&Value::Bool(true)) {
        let output = value.get("output").cloned().unwrap_or(Value::Null);
        if output.to_string().len() > MAX_OUTPUT_BYTES {
            return Err(CallError::new(
                CallErrorCode::InvalidOutput,
                format!("the output is over {MAX_OUTPUT_BYTES} bytes"),
            ));
        }
        let issues = tool.output.validate(&output, "output");
        if !issues.is_empty() {
            let text: Vec<String> = issues.iter().map(ToString::to_string).collect();
            return Err(CallError::new(
                CallErrorCode::InvalidOutput,
                text.join("; "),
            ));
        }
        return Ok(output);
    }
    let code = value
        .get("code")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let message = value
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the tool failed");
    Err(CallError::new(
        CallErrorCode::from_harness(code),
        capped(message, 4096),
    ))
}

fn capped(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn timeout(tool: &Tool) -> Duration {
    Duration::from_millis(tool.timeout_ms.max(1))
}

/// Node 22.18 is checked by `find_node`; the manifest may ask for more.
fn check_node(package: &Package, node: &NodeBinary) -> Result<(), CallError> {
    let wanted = package
        .manifest
        .min_node_version
        .as_deref()
        .and_then(parse_version)
        .unwrap_or(node::MINIMUM)
        .max(node::MINIMUM);
    if node.version < wanted {
        return Err(CallError::new(
            CallErrorCode::NodeTooOld,
            format!(
                "{} needs Node {}.{}.{} or newer; {} is {}",
                package.id(),
                wanted.0,
                wanted.1,
                wanted.2,
                node.path.display(),
                node.version_text()
            ),
        ));
    }
    Ok(())
}

/// The declared `permissions.fs.FIELD` paths where they really are beneath the project root
/// (`root`, canonical): a path that leads out, through a link or `..`, is refused for reads
/// and writes alike, naming the manifest field. A link may still lead elsewhere inside the
/// root; the grant then names where it leads.
fn beneath_root(root: &Path, field: &str, paths: &[String]) -> Result<Vec<PathBuf>, CallError> {
    paths
        .iter()
        .map(|path| {
            crate::confine::beneath::resolve_beneath(root, Path::new(path)).map_err(|e| {
                let why = match crate::confine::beneath::Escape::of(&e) {
                    Some(_) => "leads out of the project root (through a link or `..`)".to_string(),
                    None => format!("cannot be resolved beneath the project root: {e}"),
                };
                CallError::new(
                    CallErrorCode::PermissionDenied,
                    format!(
                        "permissions.fs.{field} declares `{path}`, which {why}; refused (project root {})",
                        root.display()
                    ),
                )
            })
        })
        .collect()
}

/// What the manifest grants, resolved against the project root, and refused when it cannot be
/// given safely.
struct Grants {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    network: bool,
    env: Vec<(String, OsString)>,
    package_dir: PathBuf,
}

impl Grants {
    fn new(package: &Package, root: &Path) -> Result<Grants, CallError> {
        let denied = |message: String| CallError::new(CallErrorCode::PermissionDenied, message);
        let permissions = &package.manifest.permissions;
        let read = beneath_root(root, "read", &permissions.fs_read)?;
        let write = beneath_root(root, "write", &permissions.fs_write)?;
        // Node splits flag values at commas in some versions and reads `*` as a wildcard.
        for path in read.iter().chain(&write).chain([&package.dir]) {
            let text = path.to_string_lossy();
            if text.contains([',', '*']) || path.to_str().is_none() {
                return Err(denied(format!(
                    "{text} cannot be given to Node's permission model (a comma, `*` or non-UTF-8)"
                )));
            }
        }
        // A tool that could write its own package or Splice's own places (config, saved
        // logins, approvals, installed packages, caches; `permissions/own.rs`) could change
        // what runs later with other permissions, wherever they lie (HOME inside the project).
        let kept = crate::permissions::own::protected();
        let own = kept.own();
        // Nor the files the project's approved hooks run, which run as the person.
        let hook_files = kept.hook_files();
        let hook_dirs = kept.hook_dirs();
        let protected: Vec<PathBuf> = std::iter::once(&package.dir)
            .chain(own.all())
            .chain(&hook_files)
            .chain(&hook_dirs)
            .map(|p| crate::permissions::own::resolved(p))
            .collect();
        for path in &write {
            let path = &crate::permissions::own::resolved(path);
            for protected in &protected {
                if protected.starts_with(path) || path.starts_with(protected) {
                    return Err(denied(format!(
                        "fs.write grants {}, which holds or is inside {}; refused so no tool rewrites code or Splice's settings",
                        path.display(),
                        protected.display()
                    )));
                }
            }
        }
        // Nor read the saved logins (a registry token), as confined commands cannot.
        let hidden: Vec<(PathBuf, PathBuf)> = crate::permissions::sandbox::hidden_files()
            .into_iter()
            .map(|h| (crate::permissions::own::resolved(&h), h))
            .collect();
        for path in &read {
            let path = &crate::permissions::own::resolved(path);
            if let Some((_, named)) = hidden.iter().find(|(real, _)| real.starts_with(path)) {
                return Err(denied(format!(
                    "fs.read grants {}, which holds Splice's saved logins {}; refused",
                    path.display(),
                    named.display()
                )));
            }
        }
        // As the file tools never write a git dir (its hooks and config run programs at the
        // person's next `git` command), no grant may reach the project's; the model's calls are
        // blocked before this, `pkg run` and any other caller here.
        if let Some(path) = crate::packages::offer::write_reaching_git_dir(root, permissions) {
            return Err(denied(format!(
                "fs.write grants `{path}`, which reaches the project's git dir {}; refused so no \
                 tool writes git hooks or config",
                root.join(".git").display()
            )));
        }
        let mut env = Vec::new();
        let passed = crate::permissions::sandbox::passed_env();
        for name in &permissions.env {
            if LOADER_PREFIXES.iter().any(|p| name.starts_with(p)) {
                return Err(denied(format!(
                    "the package declares env `{name}`, which Node or the loader reads to change how code loads"
                )));
            }
            // A secret (a provider key, a token) only when the person passed it on.
            if !secrets::may_pass(name, passed) {
                continue;
            }
            if let Some(value) = std::env::var_os(name) {
                env.push((name.clone(), value));
            }
        }
        Ok(Grants {
            read,
            write,
            network: !permissions.network.is_empty(),
            env,
            package_dir: package.dir.clone(),
        })
    }

    /// Nothing beyond reading the package: how its own tests run.
    fn package_only(package: &Package) -> Grants {
        Grants {
            read: Vec::new(),
            write: Vec::new(),
            network: false,
            env: Vec::new(),
            package_dir: package.dir.clone(),
        }
    }

    /// The launcher running Node with the grants as flags and then `tail`, in `root`, with a
    /// clean environment.
    fn command(
        &self,
        node: &NodeBinary,
        root: &Path,
        tail: &[&OsStr],
    ) -> Result<tokio::process::Command, CallError> {
        let splice = crate::permissions::sandbox::launcher().ok_or_else(|| {
            CallError::new(
                CallErrorCode::PermissionDenied,
                "no launcher (the splice binary) to start the sandbox with",
            )
        })?;
        let mut command = tokio::process::Command::new(launch::launcher_beside(splice));
        command
            .arg(LAUNCH_ARG)
            .arg("--parent")
            .arg(std::process::id().to_string());
        if self.network {
            command.arg("--network");
        }
        if std::env::var_os(NO_NETNS_ENV).is_some_and(|v| !v.is_empty()) {
            command.arg("--no-netns");
        }
        if crate::permissions::sandbox::unix_sockets_allowed() {
            command.arg(crate::permissions::sandbox::ALLOW_UNIX_SOCKETS_ARG);
        }
        if crate::permissions::seccomp::pretend_unavailable() {
            command.arg(crate::permissions::seccomp::NO_SECCOMP_ARG);
        }
        for path in &self.write {
            command.arg("--write").arg(path);
        }
        for path in crate::permissions::reads::hidden_paths() {
            command.arg("--hide").arg(path);
        }
        for path in crate::permissions::reads::allowed_reads() {
            command.arg(crate::permissions::reads::READ_ARG).arg(path);
        }
        // node:sqlite opens files itself, unseen by the permission model: off.
        command
            .arg("--")
            .arg(&node.path)
            .args(["--permission", "--no-experimental-sqlite"]);
        let mut flag = |name: &str, path: &Path| {
            let mut arg = OsString::from(format!("--allow-fs-{name}="));
            arg.push(path);
            command.arg(arg);
        };
        flag("read", &self.package_dir);
        for path in &self.read {
            flag("read", path);
        }
        for path in &self.write {
            flag("write", path);
        }
        command
            .args(tail)
            .current_dir(root)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        Ok(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_redacted_of_known_secrets() {
        let redactor =
            Redactor::from_vars([("ANTHROPIC_API_KEY".into(), "ant-secret-0123".into())]);
        let outcome = redacted(
            CallOutcome {
                result: Ok(json!({"env": {"ANTHROPIC_API_KEY": "ant-secret-0123"}})),
                logs: vec!["key ant-secret-0123".into()],
                ms: 1,
            },
            &redactor,
        );
        assert_eq!(
            outcome.result,
            Ok(json!({"env": {"ANTHROPIC_API_KEY": "[REDACTED]"}}))
        );
        assert_eq!(outcome.logs, ["key [REDACTED]"]);
        let failed = redacted(
            CallOutcome {
                result: Err(CallError::new(CallErrorCode::ToolError, "ant-secret-0123")),
                logs: Vec::new(),
                ms: 1,
            },
            &redactor,
        );
        assert_eq!(
            failed.result.err().map(|e| e.message),
            Some("[REDACTED]".to_string())
        );
    }

    #[test]
    fn codes_read_as_the_interface_spells_them() {
        assert_eq!(CallErrorCode::NodeTooOld.to_string(), "NODE_TOO_OLD");
        let error = CallError::new(CallErrorCode::ToolError, "BAD: no");
        assert_eq!(error.to_string(), "TOOL_ERROR: BAD: no");
        assert_eq!(
            CallErrorCode::from_harness("SOMETHING"),
            CallErrorCode::ToolError
        );
    }
}
