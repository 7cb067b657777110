//! `splice pkg install|list|remove`: output and exit codes (0 done, 1 failed or not installed,
//! 2 invalid package or usage). Messages go to stderr; `--json` puts one document on stdout.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::Issue;
use super::install::{self, InstallError, RemoveError};
use super::installed::{ResolveError, package_dir};
use super::inventory;
use super::package::Package;
use crate::exit::Exit;
use crate::layout::Layout;

const EXIT_FAILED: Exit = Exit::Failed;
const EXIT_INVALID: Exit = Exit::Usage;

/// `pkg install SOURCE [--force] [--json]`: prints `installed ID VERSION PATH sha256:HEX` (or
/// `unchanged`, `replaced`), with `--json` `{"id","version","path","sha256","status"}`.
pub fn install(
    layout: &Layout,
    source: &Path,
    force: bool,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    match install::install_path(layout, source, force) {
        Ok(done) => {
            if let Some(text) = super::secrets::install_notice(&done.path) {
                let _ = writeln!(err, "splice: {text}");
            }
            let path = done.path.display().to_string();
            if as_json {
                let line = json!({
                    "id": done.id,
                    "version": done.version,
                    "path": path,
                    "sha256": done.sha256,
                    "status": done.outcome.as_str(),
                });
                let _ = writeln!(out, "{line}");
            } else {
                let _ = writeln!(
                    out,
                    "{} {} {}  {path}  sha256:{}",
                    done.outcome.as_str(),
                    done.id,
                    done.version,
                    done.sha256
                );
            }
            Exit::Success
        }
        Err(InstallError::Invalid(issues)) => {
            super::command::print_issues(&issues, err);
            if as_json {
                let _ = writeln!(out, "{}", json!({"valid": false, "errors": issues}));
            }
            EXIT_INVALID
        }
        Err(e) => {
            let _ = writeln!(err, "splice: cannot install {}: {e}", source.display());
            EXIT_FAILED
        }
    }
}

/// One installed version as `pkg list` shows it.
fn describe(layout: &Layout, ns: &str, name: &str, version: &str) -> Value {
    let dir = package_dir(layout, ns, name, version);
    let mut entry = json!({
        "id": format!("{ns}/{name}"),
        "version": version,
        "path": dir.display().to_string(),
    });
    let loaded = Package::load(&dir).and_then(|package| {
        let m = &package.manifest;
        if (m.namespace.as_str(), m.name.as_str(), m.version.as_str()) == (ns, name, version) {
            Ok(package)
        } else {
            Err(vec![Issue::new(
                "manifest.json",
                format!(
                    "says {}@{} but is installed as {ns}/{name}@{version}",
                    m.id(),
                    m.version
                ),
            )])
        }
    });
    match loaded {
        Ok(package) => {
            let tools: Vec<String> = package
                .manifest
                .tools
                .iter()
                .map(|t| t.name.clone())
                .collect();
            entry["tools"] = json!(tools);
            entry["valid"] = json!(true);
        }
        Err(issues) => {
            entry["tools"] = json!([]);
            entry["valid"] = json!(false);
            entry["errors"] = json!(issues);
        }
    }
    entry
}

/// `pkg list [--json]`: every installed version, `ID VERSION  tools: a, b` a line (an invalid
/// one says so: it is never offered to the model), or `{"packages":[{"id","version","path",
/// "tools","valid","errors"?}]}`.
pub fn list(layout: &Layout, as_json: bool, out: &mut dyn Write) -> Exit {
    let mut packages = Vec::new();
    for (ns, name) in inventory::ids(layout) {
        for version in inventory::versions(layout, &ns, &name) {
            packages.push(describe(layout, &ns, &name, &version));
        }
    }
    if as_json {
        let _ = writeln!(out, "{}", json!({ "packages": packages }));
        return Exit::Success;
    }
    for entry in &packages {
        let text = |key: &str| entry[key].as_str().unwrap_or_default().to_string();
        let tools: Vec<&str> = entry["tools"]
            .as_array()
            .map(|t| t.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let status = if entry["valid"] == json!(true) {
            format!("tools: {}", tools.join(", "))
        } else {
            let first = &entry["errors"][0];
            format!(
                "INVALID ({}: {})",
                first["path"].as_str().unwrap_or_default(),
                first["message"].as_str().unwrap_or_default()
            )
        };
        let _ = writeln!(out, "{} {}  {status}", text("id"), text("version"));
    }
    Exit::Success
}

/// `pkg remove NS/NAME[@VERSION] [--json]`: every version when none is given; prints `removed
/// ID VERSION` a line, or `{"id","removed":[versions]}`. Not installed: exit 1.
pub fn remove(
    layout: &Layout,
    spec: &str,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    match install::remove(layout, spec) {
        Ok(install::Removed { spec, versions }) => {
            let id = spec.id();
            if as_json {
                let _ = writeln!(out, "{}", json!({"id": id, "removed": versions}));
            } else {
                for version in versions {
                    let _ = writeln!(out, "removed {id} {version}");
                }
            }
            Exit::Success
        }
        Err(RemoveError::Resolve(e @ ResolveError::BadSpec { .. })) => {
            let _ = writeln!(err, "splice: {e}");
            EXIT_INVALID
        }
        Err(e) => {
            let _ = writeln!(err, "splice: cannot remove {spec}: {e}");
            EXIT_FAILED
        }
    }
}
