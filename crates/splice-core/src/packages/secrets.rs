//! Secrets a package asks for. A manifest may list any variable in `permissions.env`, but one
//! whose name marks it secret (the redaction rule's names: KEY, TOKEN, SECRET, PASSWORD,
//! CREDENTIAL; the provider keys are among them) reaches a tool only when the person passes it
//! on, as for commands: `--pass-env NAME` or the config file's `passEnv`. Installing such a
//! package, and running it without them, says which it asks for and how to pass them.

use std::path::Path;

use super::manifest::Permissions;
use super::package::Package;
use crate::sanitize::redact::is_secret_name;

/// The declared variables whose names mark them secret.
pub fn asked(permissions: &Permissions) -> Vec<&str> {
    permissions
        .env
        .iter()
        .map(String::as_str)
        .filter(|name| is_secret_name(name))
        .collect()
}

/// The declared secret variables the person did not pass on: a tool does not get them.
pub fn withheld<'a>(permissions: &'a Permissions, passed: &[String]) -> Vec<&'a str> {
    asked(permissions)
        .into_iter()
        .filter(|name| !passed.iter().any(|p| p == name))
        .collect()
}

/// Whether a declared variable may be given to a tool.
pub fn may_pass(name: &str, passed: &[String]) -> bool {
    !is_secret_name(name) || passed.iter().any(|p| p == name)
}

/// What to tell the person about `names` (secret variables `id` asks for), or `None`.
pub fn notice(id: &str, names: &[&str]) -> Option<String> {
    let first = names.first()?;
    let flags: Vec<String> = names.iter().map(|n| format!("--pass-env {n}")).collect();
    Some(format!(
        "{id} asks for secret environment variables ({}); its tools get them only when you \
         pass them on: `{}` (splice exec, splice pkg run, splice), or `\"passEnv\": [\"{first}\"]` \
         in the config file",
        names.join(", "),
        flags.join(" ")
    ))
}

/// What installing the package at `dir` tells the person (on stderr) about the secrets it asks
/// for, whether or not they are passed on today.
pub fn install_notice(dir: &Path) -> Option<String> {
    let package = Package::load(dir).ok()?;
    notice(&package.id(), &asked(&package.manifest.permissions))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(names: &[&str]) -> Permissions {
        Permissions {
            env: names.iter().map(|n| n.to_string()).collect(),
            ..Permissions::default()
        }
    }

    #[test]
    fn secret_names_are_withheld_unless_passed() {
        let p = env(&["LANG", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GH_TOKEN"]);
        assert_eq!(
            asked(&p),
            ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GH_TOKEN"]
        );
        let passed = vec!["GH_TOKEN".to_string()];
        assert_eq!(
            withheld(&p, &passed),
            ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]
        );
        assert!(may_pass("LANG", &[]));
        assert!(may_pass("GH_TOKEN", &passed));
        assert!(!may_pass("OPENAI_API_KEY", &passed));
        let text = notice("acme/x", &["OPENAI_API_KEY", "GH_TOKEN"]).unwrap_or_default();
        assert!(
            text.contains("--pass-env OPENAI_API_KEY --pass-env GH_TOKEN"),
            "{text}"
        );
        assert!(text.contains("passEnv"), "{text}");
        assert_eq!(notice("acme/x", &[]), None);
    }
}
