//! `splice pkg test DIR`: validate (which checks every `examples/*.json` against the schemas),
//! run each example through the runtime (its output compared when it gives one), then the
//! package's `tests/*.test.{ts,mts,js,mjs}` with `node --test`, files listed explicitly. Exit 0
//! all passed, 1 something failed (or Node could not run them), 2 not a valid package.
//!
//! Examples run with a fresh empty directory as the project root, so they depend on nothing of
//! yours and a write they are granted lands nowhere that matters.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

use super::package::Package;
use super::runtime::{self, CallRequest};
use crate::exit::Exit;
use crate::sanitize::terminal::strip_controls;

const EXIT_FAILED: Exit = Exit::Failed;
const EXIT_INVALID: Exit = Exit::Usage;
const TEST_SUFFIXES: [&str; 4] = [".test.ts", ".test.mts", ".test.js", ".test.mjs"];

pub async fn test(dir: &Path, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let package = match Package::load(dir) {
        Ok(package) => package,
        Err(issues) => {
            super::command::print_issues(&issues, err);
            return EXIT_INVALID;
        }
    };
    let config_node = crate::config::ConfigFile::load_user()
        .ok()
        .and_then(|c| c.node);
    let node = match runtime::find_node(config_node.as_deref()) {
        Ok(node) => node,
        Err(error) => {
            let _ = writeln!(err, "splice: {error}");
            return EXIT_FAILED;
        }
    };
    let mut failed = 0usize;
    let examples = files_in(&package.dir, "examples", &[".json"]);
    let project = match Scratch::new() {
        Ok(project) => project,
        Err(e) => {
            let _ = writeln!(err, "splice: cannot make a scratch project root: {e}");
            return EXIT_FAILED;
        }
    };
    for name in &examples {
        match run_example(&package, &node, &project.0, name).await {
            Ok(line) => {
                let _ = writeln!(out, "ok    {}", strip_controls(&line));
            }
            Err(why) => {
                failed += 1;
                let _ = writeln!(out, "FAIL  {}", strip_controls(&format!("{name}: {why}")));
            }
        }
    }
    let tests = files_in(&package.dir, "tests", &TEST_SUFFIXES);
    let tests_passed = if tests.is_empty() {
        let _ = writeln!(out, "no tests/*.test.ts");
        true
    } else {
        let _ = writeln!(out, "node --test {}", tests.join(" "));
        match runtime::run_node_tests(&package, &node, &tests).await {
            Ok(run) => {
                for line in &run.output {
                    let _ = writeln!(out, "  {}", strip_controls(line));
                }
                run.passed
            }
            Err(error) => {
                let _ = writeln!(out, "  {}", strip_controls(&error.to_string()));
                false
            }
        }
    };
    let _ = writeln!(
        out,
        "{}: {} of {} examples passed; tests {}",
        package.id(),
        examples.len() - failed,
        examples.len(),
        if tests_passed { "passed" } else { "FAILED" }
    );
    if failed == 0 && tests_passed {
        Exit::Success
    } else {
        EXIT_FAILED
    }
}

/// One example through the runtime: `Ok` with a line to print, or why it failed.
async fn run_example(
    package: &Package,
    node: &runtime::NodeBinary,
    project: &Path,
    name: &str,
) -> Result<String, String> {
    let text = std::fs::read_to_string(package.dir.join(name)).map_err(|e| e.to_string())?;
    let example: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let tool = example["tool"].as_str().unwrap_or_default();
    let outcome = runtime::call(CallRequest {
        package,
        tool,
        input: example["input"].clone(),
        project_root: project,
        node,
    })
    .await;
    let output = outcome.result.map_err(|e| e.to_string())?;
    if let Some(expected) = example.get("output")
        && *expected != output
    {
        return Err(format!(
            "{tool} returned {output}, the example says {expected}"
        ));
    }
    Ok(format!("{name}  {tool}  ({} ms)", outcome.ms))
}

/// `sub/NAME` for the files directly in `dir/sub` ending with one of `suffixes`, sorted.
fn files_in(dir: &Path, sub: &str, suffixes: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join(sub))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| !n.starts_with('.') && suffixes.iter().any(|s| n.ends_with(s)))
                .map(|n| format!("{sub}/{n}"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A private empty directory, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        use std::os::unix::fs::DirBuilderExt;
        let path =
            std::env::temp_dir().join(format!("splice-pkg-test-{}", crate::ids::random_suffix(12)));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
