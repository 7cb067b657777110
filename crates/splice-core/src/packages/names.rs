//! The small grammars of the manifest: package and tool names, versions, host names, variable
//! names and project-relative paths. Each returns why a value is refused, or `None`.

use std::path::{Component, Path};

/// Longest namespace, name or tool name.
pub const MAX_NAME: usize = 64;
/// Providers allow tool names of at most 64 characters; `namespace__name__tool` must fit.
pub const MAX_WIRE_NAME: usize = 64;

/// Lowercase `[a-z0-9]` words joined by single hyphens, 1 to 64 characters: no leading,
/// trailing or doubled hyphen, so `namespace__name__tool` maps back unambiguously.
pub fn name_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return Some("must not be empty".into());
    }
    if value.len() > MAX_NAME {
        return Some(format!("is longer than {MAX_NAME} characters"));
    }
    let words_ok = value.split('-').all(|w| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    });
    (!words_ok).then(|| {
        format!(
            "`{value}` must be lowercase letters and digits, words joined by single hyphens \
             (no leading, trailing or doubled hyphen)"
        )
    })
}

/// Namespaces no package may take. Wire names must identify one tool: MCP tools are
/// `mcp__<server>__<tool>`, so a package in namespace `mcp` would be `mcp__<name>__<tool>`,
/// the very name of an MCP server's tool. Built-in tools (`read_file`, `submit_code`,
/// `transcribe`…) never hold `__`, which every package wire name does, so they need no entry.
pub const RESERVED_NAMESPACES: [&str; 1] = ["mcp"];

/// A namespace: a name ([`name_problem`]) that is not reserved ([`RESERVED_NAMESPACES`]).
pub fn namespace_problem(value: &str) -> Option<String> {
    name_problem(value).or_else(|| {
        RESERVED_NAMESPACES.contains(&value).then(|| {
            format!(
                "`{value}` is reserved: tool names on the wire starting `{value}__` belong to \
                 MCP servers, so a package there could pass for one"
            )
        })
    })
}

/// SemVer 2.0.0, exactly (`1.2.3`, `1.2.3-rc.1+build.5`; no `v`, no leading zeros).
pub fn semver_problem(value: &str) -> Option<String> {
    super::version::parse(value).err().map(|e| e.to_string())
}

/// A package's version: SemVer 2.0.0 without build metadata. `1.0.0+evil` has the same
/// precedence as `1.0.0`, so a range could pick either; a version must name one package.
pub fn package_version_problem(value: &str) -> Option<String> {
    super::version::parse_package(value)
        .err()
        .map(|e| e.to_string())
}

/// A DNS host name (letters, digits, hyphens; labels of 1 to 63 characters, at most 253 in
/// all) or an IPv4 address: no scheme, port, path, wildcard or trailing dot.
pub fn host_problem(value: &str) -> Option<String> {
    let labels_ok = !value.is_empty()
        && value.len() <= 253
        && value.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    (!labels_ok).then(|| {
        format!("`{value}` is not a host name (no scheme, port, path, wildcard or trailing dot)")
    })
}

/// An environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn env_name_problem(value: &str) -> Option<String> {
    let ok = value
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    (!ok).then(|| format!("`{value}` is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"))
}

/// A path relative to a root that stays beneath it: not empty, not absolute, no `..`, no
/// backslash, NUL or wildcard. `.` (the root itself) is allowed.
pub fn relative_path_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return Some("must not be empty".into());
    }
    if value.contains(['\\', '\0', '*', '?']) {
        return Some(format!(
            "`{value}` must be a plain path (no backslash, NUL or wildcard)"
        ));
    }
    let path = Path::new(value);
    if path.is_absolute() || value.starts_with('~') {
        return Some(format!("`{value}` must be relative to the project root"));
    }
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Some(format!("`{value}` must not contain `..`"));
    }
    None
}

/// A file of the package is hidden (a component starting with `.`) or under `node_modules`:
/// neither is ever packed.
pub fn is_unpacked_name(component: &str) -> bool {
    component.starts_with('.') || component == "node_modules"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_lowercase_words_joined_by_single_hyphens() {
        for good in ["json", "a", "web-fetch", "x2", "0day"] {
            assert_eq!(name_problem(good), None, "{good}");
        }
        let long = "a".repeat(65);
        for bad in [
            "",
            "JSON",
            "-a",
            "a-",
            "a--b",
            "a_b",
            "a.b",
            "é",
            long.as_str(),
        ] {
            assert!(name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn the_mcp_namespace_is_reserved() {
        assert!(namespace_problem("mcp").is_some_and(|p| p.contains("reserved")));
        assert_eq!(namespace_problem("mcp-tools"), None);
        assert_eq!(namespace_problem("acme"), None);
        assert!(namespace_problem("MCP").is_some());
        // Still a name where only names are meant: a package may be called `mcp`.
        assert_eq!(name_problem("mcp"), None);
    }

    #[test]
    fn semver_is_strict() {
        for good in [
            "0.1.0",
            "1.0.0-rc.1",
            "1.0.0+build.5",
            "22.18.0",
            "1.0.0-0a.1",
        ] {
            assert_eq!(semver_problem(good), None, "{good}");
        }
        for bad in [
            "1.0", "v1.0.0", "01.0.0", "1.0.0-", "1.0.0-01", "1.0.0+", "1.0.0.0", "a.b.c",
        ] {
            assert!(semver_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn package_versions_carry_no_build_metadata() {
        for good in ["0.1.0", "1.0.0-rc.1", "1.0.0-0a.1"] {
            assert_eq!(package_version_problem(good), None, "{good}");
        }
        for bad in ["1.0.0+evil", "1.0.0-rc.1+b", "1.0", "1.0.0+"] {
            assert!(package_version_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn hosts_variables_and_paths() {
        assert_eq!(host_problem("api.example.com"), None);
        assert_eq!(host_problem("127.0.0.1"), None);
        for bad in [
            "https://x.com",
            "x.com:443",
            "*.x.com",
            "x.com.",
            "",
            "-a.com",
            "a/b",
        ] {
            assert!(host_problem(bad).is_some(), "{bad}");
        }
        assert_eq!(env_name_problem("GITHUB_TOKEN"), None);
        assert_eq!(env_name_problem("_x1"), None);
        for bad in ["", "1A", "A-B", "A B"] {
            assert!(env_name_problem(bad).is_some(), "{bad}");
        }
        for good in [".", "data", "data/in.json", "./out"] {
            assert_eq!(relative_path_problem(good), None, "{good}");
        }
        for bad in ["", "/etc", "../x", "a/../../b", "~/x", "a\\b", "*.json"] {
            assert!(relative_path_problem(bad).is_some(), "{bad}");
        }
    }
}
