//! `splice pkg run PACKAGE TOOL [INPUT_JSON] [--json] [--cwd DIR]`.
//!
//! One line on stdout with `--json`: `{"ok":true,"output","logs","ms"}` or
//! `{"ok":false,"error":{"code","message"},"logs"}`; without it the output JSON alone on
//! stdout and errors on stderr. Exit 0 done; 1 the call failed (`TOOL_ERROR`, `TIMEOUT`,
//! `INVALID_OUTPUT`, `PERMISSION_DENIED`, `NODE_MISSING`, `NODE_TOO_OLD`); 2 bad input or
//! usage (`INVALID_INPUT`, `INVALID_PACKAGE`, `USAGE`). INPUT_JSON `-` reads stdin; absent is
//! `{}`.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::installed;
use super::package::Package;
use super::runtime::{self, CallError, CallErrorCode, CallRequest};

const EXIT_FAILED: i32 = 1;
const EXIT_USAGE: i32 = 2;

pub struct RunArgs<'a> {
    pub package: &'a str,
    pub tool: &'a str,
    /// The input as given: JSON text, or `-` (already read from stdin by the caller).
    pub input: Option<String>,
    pub json: bool,
    pub cwd: Option<&'a Path>,
}

/// A failure before the call: its code and message, always exit 2.
struct Usage {
    code: &'static str,
    message: String,
}

pub async fn run(args: RunArgs<'_>, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let prepared = match prepare(&args) {
        Ok(prepared) => prepared,
        Err(usage) => {
            report_error(args.json, usage.code, &usage.message, &[], out, err);
            return EXIT_USAGE;
        }
    };
    let (package, input, root) = prepared;
    let config_node = crate::config::ConfigFile::load_user()
        .ok()
        .and_then(|c| c.node);
    let node = match runtime::find_node(config_node.as_deref()) {
        Ok(node) => node,
        Err(error) => {
            report_call_error(args.json, &error, &[], out, err);
            return EXIT_FAILED;
        }
    };
    let outcome = runtime::call(CallRequest {
        package: &package,
        tool: args.tool,
        input,
        project_root: &root,
        node: &node,
    })
    .await;
    match outcome.result {
        Ok(output) => {
            if args.json {
                let line =
                    json!({"ok": true, "output": output, "logs": outcome.logs, "ms": outcome.ms});
                let _ = writeln!(out, "{line}");
            } else {
                for log in &outcome.logs {
                    let _ = writeln!(err, "{log}");
                }
                let _ = writeln!(out, "{output}");
            }
            0
        }
        Err(error) => {
            report_call_error(args.json, &error, &outcome.logs, out, err);
            if error.code == CallErrorCode::InvalidInput {
                EXIT_USAGE
            } else {
                EXIT_FAILED
            }
        }
    }
}

fn prepare(args: &RunArgs<'_>) -> Result<(Package, Value, PathBuf), Usage> {
    let usage = |message: String| Usage {
        code: "USAGE",
        message,
    };
    let root = match args.cwd {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().map_err(|e| usage(format!("no current directory: {e}")))?,
    };
    if !root.is_dir() {
        return Err(usage(format!(
            "--cwd {} is not a directory",
            root.display()
        )));
    }
    let dir = package_dir(args.package)?;
    let package = Package::load(&dir).map_err(|issues| Usage {
        code: "INVALID_PACKAGE",
        message: issues
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
    })?;
    let text = args.input.as_deref().unwrap_or("{}");
    let input = serde_json::from_str(text).map_err(|e| Usage {
        code: CallErrorCode::InvalidInput.as_str(),
        message: format!("INPUT_JSON is not JSON: {e}"),
    })?;
    Ok((package, input, root))
}

/// A directory when one exists at that path; else an installed `namespace/name[@version]`.
fn package_dir(spec: &str) -> Result<PathBuf, Usage> {
    let path = Path::new(spec);
    if path.is_dir() {
        return Ok(path.to_path_buf());
    }
    installed::resolve(&crate::config::data_dir(), spec).map_err(|e| Usage {
        code: "INVALID_PACKAGE",
        message: e.to_string(),
    })
}

fn report_call_error(
    as_json: bool,
    error: &CallError,
    logs: &[String],
    out: &mut dyn Write,
    err: &mut dyn Write,
) {
    report_error(as_json, error.code.as_str(), &error.message, logs, out, err);
}

fn report_error(
    as_json: bool,
    code: &str,
    message: &str,
    logs: &[String],
    out: &mut dyn Write,
    err: &mut dyn Write,
) {
    if as_json {
        let line = json!({"ok": false, "error": {"code": code, "message": message}, "logs": logs});
        let _ = writeln!(out, "{line}");
    } else {
        for log in logs {
            let _ = writeln!(err, "{log}");
        }
        let _ = writeln!(err, "splice: {code}: {message}");
    }
}
