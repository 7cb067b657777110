//! A package directory against every rule: its files (plain, packable), `manifest.json`, the
//! files the manifest names, `SKILL.md`, and `examples/*.json` against the tools' schemas.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde_json::Value;

use super::archive::{self, Entry};
use super::manifest::{self, Manifest};
use super::skill_md::{self, Skill};
use super::{Issue, key_path};

/// `manifest.json`, `SKILL.md` and each example are read up to this size.
pub const MAX_TEXT_FILE: u64 = 1024 * 1024;

/// What validation found: the typed manifest and skill when they are valid, and every issue.
#[derive(Debug, Default)]
pub struct Report {
    pub manifest: Option<Manifest>,
    pub skill: Option<Skill>,
    pub issues: Vec<Issue>,
}

impl Report {
    pub fn valid(&self) -> bool {
        self.issues.is_empty()
    }
}

pub fn check_dir(root: &Path) -> Report {
    let mut report = Report::default();
    if !root.is_dir() {
        report
            .issues
            .push(Issue::new(root.display().to_string(), "is not a directory"));
        return report;
    }
    let (entries, issues) = archive::scan(root);
    report.issues.extend(issues);
    let is_file = |path: &str| entries.iter().any(|e| e.path == path && !e.dir);
    let manifest = read_json(root, "manifest.json", &entries, &mut report.issues).and_then(|v| {
        let (manifest, issues) = manifest::check(&v);
        report.issues.extend(issues);
        manifest
    });
    if let Some(manifest) = &manifest {
        for (i, tool) in manifest.tools.iter().enumerate() {
            if !tool.entry.is_empty() && !is_file(&tool.entry) {
                report.issues.push(Issue::new(
                    format!("tools[{i}].entry"),
                    format!(
                        "`{}` is not a plain file of the package (missing, a directory or a link)",
                        tool.entry
                    ),
                ));
            }
        }
    }
    if let Some(text) = read_text(root, "SKILL.md", &entries, &mut report.issues) {
        let names: Vec<&str> = manifest
            .as_ref()
            .map(|m| {
                m.tools
                    .iter()
                    .map(|t| t.name.as_str())
                    .filter(|n| !n.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let (skill, issues) = skill_md::check(&text, &names);
        report.issues.extend(issues);
        report.skill = Some(skill);
    }
    if let Some(manifest) = &manifest {
        for example in entries.iter().filter(|e| {
            !e.dir
                && e.path
                    .strip_prefix("examples/")
                    .is_some_and(|name| !name.contains('/') && name.ends_with(".json"))
        }) {
            check_example(root, &example.path, &entries, manifest, &mut report.issues);
        }
    }
    report.manifest = manifest.filter(|_| report.issues.is_empty());
    if !report.issues.is_empty() {
        report.skill = None;
    }
    report
}

/// `{tool, input, output?}`: a tool of the manifest, an input and output that fit its schemas.
fn check_example(
    root: &Path,
    path: &str,
    entries: &[Entry],
    manifest: &Manifest,
    issues: &mut Vec<Issue>,
) {
    let Some(value) = read_json(root, path, entries, issues) else {
        return;
    };
    let at = |inner: &str| format!("{path}#{inner}");
    let Some(map) = value.as_object() else {
        issues.push(Issue::new(path, "must be an object {tool, input, output?}"));
        return;
    };
    for key in map.keys() {
        if !["tool", "input", "output"].contains(&key.as_str()) {
            issues.push(Issue::new(
                at(&key_path("", key)),
                "unknown key (allowed: tool, input, output)",
            ));
        }
    }
    let Some(name) = map.get("tool").and_then(Value::as_str) else {
        issues.push(Issue::new(at("tool"), "is required: the name of a tool"));
        return;
    };
    let Some(tool) = manifest.tools.iter().find(|t| t.name == name) else {
        issues.push(Issue::new(
            at("tool"),
            format!("`{name}` is not a tool of the manifest"),
        ));
        return;
    };
    match map.get("input") {
        Some(input) => issues.extend(
            tool.input
                .validate(input, "input")
                .into_iter()
                .map(|i| Issue::new(at(&i.path), i.message)),
        ),
        None => issues.push(Issue::new(at("input"), "is required")),
    }
    if let Some(output) = map.get("output") {
        issues.extend(
            tool.output
                .validate(output, "output")
                .into_iter()
                .map(|i| Issue::new(at(&i.path), i.message)),
        );
    }
}

fn read_json(root: &Path, path: &str, entries: &[Entry], issues: &mut Vec<Issue>) -> Option<Value> {
    let text = read_text(root, path, entries, issues)?;
    match serde_json::from_str(&text) {
        Ok(value) => Some(value),
        Err(e) => {
            issues.push(Issue::new(path, format!("is not valid JSON: {e}")));
            None
        }
    }
}

/// A text file the walk found as a plain file, read without following links.
fn read_text(
    root: &Path,
    path: &str,
    entries: &[Entry],
    issues: &mut Vec<Issue>,
) -> Option<String> {
    if !entries.iter().any(|e| e.path == path && !e.dir) {
        // A link or special file there is reported by the walk already.
        if root.join(path).symlink_metadata().is_err() {
            issues.push(Issue::new(path, "is missing"));
        } else if root.join(path).is_dir() {
            issues.push(Issue::new(path, "is a directory, not a file"));
        }
        return None;
    }
    let mut bytes = Vec::new();
    let read = std::fs::OpenOptions::new()
        .read(true)
        // A link or FIFO swapped in after the walk fails to open.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(root.join(path))
        .and_then(|f| f.take(MAX_TEXT_FILE + 1).read_to_end(&mut bytes));
    if let Err(e) = read {
        issues.push(Issue::new(path, format!("cannot read: {e}")));
        return None;
    }
    if bytes.len() as u64 > MAX_TEXT_FILE {
        issues.push(Issue::new(
            path,
            format!("is larger than {MAX_TEXT_FILE} bytes"),
        ));
        return None;
    }
    match String::from_utf8(bytes) {
        Ok(text) => Some(text),
        Err(_) => {
            issues.push(Issue::new(path, "is not UTF-8"));
            None
        }
    }
}
