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
use super::secrets;
use crate::exit::Exit;
use crate::sanitize::terminal::strip_controls;

const EXIT_FAILED: Exit = Exit::Failed;
const EXIT_USAGE: Exit = Exit::Usage;

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

pub async fn run(args: RunArgs<'_>, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let prepared = match prepare(&args) {
        Ok(prepared) => prepared,
        Err(usage) => {
            report_error(args.json, usage.code, &usage.message, &[], out, err);
            return EXIT_USAGE;
        }
    };
    let (package, input, root) = prepared;
    let withheld = secrets::withheld(
        &package.manifest.permissions,
        crate::permissions::sandbox::passed_env(),
    );
    if let Some(text) = secrets::notice(&package.id(), &withheld) {
        let _ = writeln!(err, "splice: {text}; this call runs without them");
    }
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
                let _ = writeln!(out, "{}", terminal_safe_json(&line));
            } else {
                print_logs(&outcome.logs, err);
                let _ = writeln!(out, "{}", terminal_safe_json(&output));
            }
            Exit::Success
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
    installed::resolve(crate::layout::Layout::process(), spec).map_err(|e| Usage {
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
        let _ = writeln!(out, "{}", terminal_safe_json(&line));
    } else {
        print_logs(logs, err);
        let _ = writeln!(err, "splice: {code}: {}", strip_controls(message));
    }
}

/// A tool's logs as text: without the escape sequences and controls that would retitle the
/// window, write the clipboard or clear the screen (as every text sink strips them).
fn print_logs(logs: &[String], err: &mut dyn Write) {
    for log in logs {
        let _ = writeln!(err, "{}", strip_controls(log));
    }
}

/// `value` as compact JSON with nothing a terminal acts on: JSON escapes C0 controls itself;
/// DEL, the C1 controls (`U+009B` is a CSI) and the bidirectional overrides are written as
/// `\uXXXX` escapes too, which read back as the same value. Outside strings JSON is ASCII, so
/// every such character is inside one.
fn terminal_safe_json(value: &Value) -> String {
    let text = value.to_string();
    let unsafe_char = |c: char| {
        ('\u{7f}'..='\u{9f}').contains(&c)
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    };
    if !text.chars().any(unsafe_char) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_for_a_terminal_escapes_c1_and_reads_back_the_same() {
        let value = json!({"a": "x\u{9b}31m\u{1b}]52;c;x\u{7}\u{202e}y", "b": [1]});
        let text = terminal_safe_json(&value);
        assert!(
            !text
                .chars()
                .any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
            "{text:?}"
        );
        assert_eq!(serde_json::from_str::<Value>(&text).ok(), Some(value));
    }
}
