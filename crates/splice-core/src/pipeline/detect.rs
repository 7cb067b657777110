//! What the repository offers: its static analyzers and its test command, from its files.

use std::path::Path;

fn has(root: &Path, name: &str) -> bool {
    root.join(name).exists()
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Build manifests worth reading are small; more than this is not read.
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// A build file of the repository, read beneath the root as a regular file (a link out of the
/// root or a FIFO reads as absent).
fn read(root: &Path, name: &str) -> Option<String> {
    let bytes =
        crate::confine::beneath::read_prefix(root, &root.join(name), MAX_MANIFEST_BYTES).ok()?;
    String::from_utf8(bytes).ok()
}

fn package_json(root: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&read(root, "package.json")?).ok()
}

/// A Makefile rule named `test`, wherever it stands (the first line included).
fn makefile_has_test(root: &Path) -> bool {
    read(root, "Makefile").is_some_and(|text| {
        text.lines()
            .any(|line| line.starts_with("test:") || line.starts_with("test :"))
    })
}

/// Python sources at the top level or one directory down.
fn has_python(root: &Path) -> bool {
    if has(root, "pyproject.toml") || has(root, "setup.py") || has(root, "setup.cfg") {
        return true;
    }
    let is_py = |p: &Path| p.extension().is_some_and(|e| e == "py");
    let Ok(entries) = std::fs::read_dir(root) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let path = entry.path();
        if path.is_dir() {
            std::fs::read_dir(&path)
                .map(|inner| inner.flatten().any(|e| is_py(&e.path())))
                .unwrap_or(false)
        } else {
            is_py(&path)
        }
    })
}

/// The analyzer commands of the project, in a stable order.
pub fn analyzers(root: &Path) -> Vec<String> {
    let mut commands = Vec::new();
    if has(root, "Cargo.toml") {
        commands.push("cargo clippy --all-targets --message-format short".to_string());
    }
    if has(root, "go.mod") {
        commands.push("go vet ./...".to_string());
    }
    if let Some(package) = package_json(root) {
        let uses_eslint = ["dependencies", "devDependencies"]
            .iter()
            .any(|key| package[key].get("eslint").is_some());
        if uses_eslint {
            commands.push("npx --no-install eslint .".to_string());
        }
    }
    if has_python(root) {
        // ruff when installed; otherwise the interpreter's own compile check is still a real
        // static pass (syntax errors) that needs nothing else.
        if on_path("ruff") {
            commands.push("ruff check .".to_string());
        } else {
            commands.push("python3 -m compileall -q -x '/\\.' .".to_string());
        }
    }
    commands
}

/// The project's test command, when one can be told from its files.
pub fn test_command(root: &Path) -> Option<String> {
    if has(root, "Cargo.toml") {
        return Some("cargo test".into());
    }
    if has(root, "go.mod") {
        return Some("go test ./...".into());
    }
    if let Some(package) = package_json(root)
        && package["scripts"].get("test").is_some()
    {
        return Some("npm test".into());
    }
    if has_python(root) {
        let pytest_configured = has(root, "pytest.ini")
            || has(root, "conftest.py")
            || read(root, "pyproject.toml").is_some_and(|t| t.contains("[tool.pytest"));
        return Some(if pytest_configured {
            "python3 -m pytest -q".into()
        } else {
            "python3 -m unittest discover -v".into()
        });
    }
    if makefile_has_test(root) {
        return Some("make test".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_python_and_rust_projects() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path();
        assert_eq!(test_command(root), None);
        assert!(analyzers(root).is_empty());
        std::fs::create_dir_all(root.join("pkg")).expect("create pkg");
        std::fs::write(root.join("pkg/mod.py"), "x = 1\n").expect("write pkg/mod.py");
        assert_eq!(
            test_command(root).as_deref(),
            Some("python3 -m unittest discover -v")
        );
        assert_eq!(analyzers(root).len(), 1);
        std::fs::write(root.join("Cargo.toml"), "[package]\n").expect("write Cargo.toml");
        assert_eq!(test_command(root).as_deref(), Some("cargo test"));
        assert!(analyzers(root)[0].starts_with("cargo clippy"));
    }

    #[test]
    fn a_makefile_test_rule_counts_on_any_line_and_links_out_are_not_read() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).expect("create root");
        std::fs::write(root.join("Makefile"), "test:\n\tpython3 t.py\n").expect("write Makefile");
        assert_eq!(test_command(&root).as_deref(), Some("make test"));
        std::fs::write(root.join("Makefile"), "build:\n\tcc x.c\ntests:\n\ttrue\n")
            .expect("write Makefile");
        assert_eq!(test_command(&root), None);
        // A package.json that points out of the root is not read.
        std::fs::write(
            dir.path().join("outside.json"),
            r#"{"scripts":{"test":"x"}}"#,
        )
        .expect("write outside.json");
        std::os::unix::fs::symlink("../outside.json", root.join("package.json"))
            .expect("link package.json");
        assert_eq!(test_command(&root), None);
    }
}
