//! The packages offered to the model in one run: the highest installed version of each
//! package, and the run's `--package` directories (which take the place of an installed
//! package with the same id). Each tool is offered as `namespace__name__tool` (providers allow
//! only `[A-Za-z0-9_-]`) and shown as `namespace.name.tool`; names are lowercase `[a-z0-9-]`
//! words, so the two map onto each other unambiguously. Node is found once per run: without
//! it no package tool is offered, and a warning says why.

use std::path::Path;
use std::sync::Arc;

use super::installed::package_dir;
use super::inventory;
use super::manifest::{Permissions, Tool};
use super::package::Package;
use super::runtime::{NodeBinary, find_node, parse_version};
use super::secrets;
use crate::layout::Layout;
use crate::protocol::{SideEffect, WarningCode};
use crate::provider::ToolSpec;

/// Most characters of one package's "when to use it" section in the system prompt.
pub const GUIDANCE_PER_PACKAGE: usize = 1_500;
/// Most characters of all packages' sections together.
pub const GUIDANCE_TOTAL: usize = 6_000;

/// One package tool as the model and the policy see it.
#[derive(Debug, Clone)]
pub struct PackageTool {
    pub package: Arc<Package>,
    /// The tool's name in its manifest.
    pub tool: String,
    /// `namespace.name.tool`: events, the TUI and permission rules.
    pub dotted: String,
    /// `namespace__name__tool`: model requests.
    pub wire: String,
    pub side_effect: SideEffect,
}

impl PackageTool {
    fn new(package: &Arc<Package>, tool: &Tool) -> PackageTool {
        let m = &package.manifest;
        PackageTool {
            package: Arc::clone(package),
            tool: tool.name.clone(),
            dotted: format!("{}.{}.{}", m.namespace, m.name, tool.name),
            wire: wire_name(&m.namespace, &m.name, &tool.name),
            side_effect: side_effect(&m.permissions),
        }
    }

    pub fn spec(&self) -> ToolSpec {
        let tool = self.package.tool(&self.tool);
        ToolSpec {
            name: self.wire.clone(),
            description: tool.map(|t| t.description.clone()).unwrap_or_default(),
            parameters: tool
                .map(|t| t.input_json.clone())
                .unwrap_or_else(|| serde_json::json!({"type": "object"})),
        }
    }
}

pub fn wire_name(namespace: &str, name: &str, tool: &str) -> String {
    format!("{namespace}__{name}__{tool}")
}

/// docs/packages.md: `write` if the package may write files, else `network` if it may reach a host,
/// else `read`.
pub fn side_effect(permissions: &Permissions) -> SideEffect {
    if !permissions.fs_write.is_empty() {
        SideEffect::Write
    } else if !permissions.network.is_empty() {
        SideEffect::Network
    } else {
        SideEffect::Read
    }
}

/// What a run offers: the tools, the Node that runs them, and the system prompt's section.
#[derive(Debug, Clone, Default)]
pub struct Offered {
    pub tools: Vec<PackageTool>,
    pub node: Option<NodeBinary>,
    pub guidance: Option<String>,
}

/// Find what the run offers: `extra` are the `--package` packages; `config_node` the config
/// file's `node`. Warnings say what is not offered and why. Blocking (reads the data dir,
/// starts `node --version`).
pub fn prepare(
    layout: &Layout,
    extra: &[Arc<Package>],
    config_node: Option<&Path>,
) -> (Offered, Vec<(WarningCode, String)>) {
    let mut warnings = Vec::new();
    let mut packages: Vec<Arc<Package>> = extra.to_vec();
    for (ns, name) in inventory::ids(layout) {
        if packages.iter().any(|p| p.id() == format!("{ns}/{name}")) {
            continue;
        }
        let Some(version) = inventory::highest(layout, &ns, &name) else {
            continue;
        };
        match Package::load(&package_dir(layout, &ns, &name, &version)) {
            // Its manifest must name the place it is installed at: one edited into another
            // package's id would shadow that package.
            Ok(package) if !installed_as(&package, &ns, &name, &version) => warnings.push((
                WarningCode::PackageSkipped,
                format!(
                    "{ns}/{name}@{version} is not offered: its manifest now says {}@{}",
                    package.id(),
                    package.manifest.version
                ),
            )),
            Ok(package) => packages.push(Arc::new(package)),
            // Fail closed: a package changed on disk into something invalid is not offered.
            Err(issues) => warnings.push((
                WarningCode::PackageSkipped,
                format!(
                    "{ns}/{name}@{version} is not offered: it no longer passes validation ({})",
                    issues.first().map(ToString::to_string).unwrap_or_default()
                ),
            )),
        }
    }
    if packages.is_empty() {
        return (Offered::default(), warnings);
    }
    let node = match find_node(config_node) {
        Ok(node) => node,
        Err(e) => {
            let ids: Vec<String> = packages.iter().map(|p| p.id()).collect();
            warnings.push((
                WarningCode::PackagesUnavailable,
                format!(
                    "package tools are not offered ({}): {e}; set SPLICE_NODE or the config key `node` to Node 22.18 or newer",
                    ids.join(", ")
                ),
            ));
            return (Offered::default(), warnings);
        }
    };
    packages.retain(|p| {
        let needed = p
            .manifest
            .min_node_version
            .as_deref()
            .and_then(parse_version);
        let too_old = needed.is_some_and(|needed| node.version < needed);
        if too_old {
            let (a, b, c) = node.version;
            warnings.push((
                WarningCode::PackageSkipped,
                format!(
                    "{} is not offered: it needs Node {} and {} is {a}.{b}.{c}",
                    p.id(),
                    p.manifest.min_node_version.as_deref().unwrap_or_default(),
                    node.path.display()
                ),
            ));
        }
        !too_old
    });
    packages.sort_by_key(|p| p.id());
    // Offered all the same, without the secrets the person did not pass on (`package_skipped`:
    // those variables are left out; the spec has no code of its own for it).
    let passed = crate::permissions::sandbox::passed_env();
    for package in &packages {
        let withheld = secrets::withheld(&package.manifest.permissions, passed);
        if let Some(text) = secrets::notice(&package.id(), &withheld) {
            warnings.push((
                WarningCode::PackageSkipped,
                format!("{text}; its tools are offered without them"),
            ));
        }
    }
    let tools = packages
        .iter()
        .flat_map(|p| p.manifest.tools.iter().map(|t| PackageTool::new(p, t)))
        .collect();
    let guidance = guidance(&packages);
    (
        Offered {
            tools,
            node: Some(node),
            guidance,
        },
        warnings,
    )
}

/// The first declared `fs.write` path that reaches the project's git dir (`ROOT/.git`): the
/// path is the git dir, inside it or above it, as written or through a link. The file tools
/// never write a git dir (its config and hooks make a later approved `git` command run
/// anything), so such a call is blocked. A git dir nested deeper (another repository inside a
/// write path) is not looked for.
pub fn write_reaching_git_dir(root: &Path, permissions: &Permissions) -> Option<String> {
    let git = root.join(".git");
    git.symlink_metadata().ok()?;
    let real_git = git.canonicalize().unwrap_or_else(|_| git.clone());
    permissions.fs_write.iter().find_map(|path| {
        let full = root.join(path);
        let real = full.canonicalize().unwrap_or_else(|_| full.clone());
        let reaches = |a: &Path, b: &Path| a.starts_with(b) || b.starts_with(a);
        (reaches(&full, &git) || reaches(&real, &real_git)).then(|| path.clone())
    })
}

fn installed_as(package: &Package, ns: &str, name: &str, version: &str) -> bool {
    let m = &package.manifest;
    m.namespace == ns && m.name == name && m.version == version
}

/// The system prompt's section: each package's "when to use it", capped per package and in
/// all (a package past the total is still offered, its tools' descriptions say the rest).
fn guidance(packages: &[Arc<Package>]) -> Option<String> {
    if packages.is_empty() {
        return None;
    }
    let mut out = String::from(
        "## Skill packages\n\nTools named NAMESPACE__NAME__TOOL come from skill packages. When to use each package:\n",
    );
    let mut used = 0;
    for package in packages {
        let m = &package.manifest;
        let tools: Vec<String> = m
            .tools
            .iter()
            .map(|t| wire_name(&m.namespace, &m.name, &t.name))
            .collect();
        let when = package
            .skill
            .section("when-to-use")
            .unwrap_or_default()
            .trim();
        let room = GUIDANCE_PER_PACKAGE.min(GUIDANCE_TOTAL.saturating_sub(used));
        if room == 0 {
            out.push_str(&format!(
                "\n### {} ({})\n(omitted: the packages' guidance is capped)\n",
                m.id(),
                tools.join(", ")
            ));
            continue;
        }
        let text = cap_chars(when, room);
        used += text.chars().count();
        out.push_str(&format!(
            "\n### {} ({})\n{text}\n",
            m.id(),
            tools.join(", ")
        ));
    }
    Some(out)
}

/// At most `max` characters of `text`, with `…` in place of the rest.
fn cap_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut capped: String = text.chars().take(max.saturating_sub(1)).collect();
    capped.push('…');
    capped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn official() -> Arc<Package> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/packages/json");
        Arc::new(Package::load(&dir).unwrap_or_else(|e| panic!("{e:?}")))
    }

    #[test]
    fn writes_reaching_the_git_dir_are_found() {
        let root = tempfile::tempdir().expect("create a temporary directory");
        let root = root.path();
        let writes = |paths: &[&str]| Permissions {
            fs_write: paths.iter().map(|p| p.to_string()).collect(),
            ..Permissions::default()
        };
        // No git dir: nothing to reach.
        assert_eq!(write_reaching_git_dir(root, &writes(&["."])), None);
        std::fs::create_dir_all(root.join(".git/hooks")).expect("create .git/hooks");
        for reaching in [".", ".git", ".git/hooks", "./.git/config"] {
            assert_eq!(
                write_reaching_git_dir(root, &writes(&["out", reaching])).as_deref(),
                Some(reaching)
            );
        }
        assert_eq!(
            write_reaching_git_dir(root, &writes(&["out", ".github"])),
            None
        );
        std::os::unix::fs::symlink(".git", root.join("out")).expect("link out");
        assert_eq!(
            write_reaching_git_dir(root, &writes(&["out/hooks"])).as_deref(),
            Some("out/hooks")
        );
    }

    #[test]
    fn side_effect_follows_the_declared_permissions() {
        let mut p = Permissions::default();
        assert_eq!(side_effect(&p), SideEffect::Read);
        p.network = vec!["example.com".into()];
        assert_eq!(side_effect(&p), SideEffect::Network);
        p.fs_write = vec!["out".into()];
        assert_eq!(side_effect(&p), SideEffect::Write);
    }

    #[test]
    fn names_and_guidance_of_the_official_package() {
        let package = official();
        let tool = PackageTool::new(&package, &package.manifest.tools[0]);
        assert_eq!(tool.dotted, "splice.json.parse");
        assert_eq!(tool.wire, "splice__json__parse");
        assert_eq!(tool.spec().parameters, package.manifest.tools[0].input_json);
        let text = guidance(std::slice::from_ref(&package)).unwrap_or_default();
        assert!(text.contains("### splice/json (splice__json__parse, splice__json__query)"));
        let when = package.skill.section("when-to-use").unwrap_or_default();
        assert!(text.contains(when.trim()), "{text}");
    }

    #[test]
    fn guidance_is_capped_per_package_and_in_all() {
        let mut packages = Vec::new();
        for i in 0..6 {
            let mut package = (*official()).clone();
            package.manifest.name = format!("p{i}");
            package.skill.sections = vec![("when-to-use", "x".repeat(5_000))];
            packages.push(Arc::new(package));
        }
        let text = guidance(&packages).unwrap_or_default();
        let xs = text.chars().filter(|c| *c == 'x').count();
        assert_eq!(
            xs,
            GUIDANCE_TOTAL - 4,
            "four packages of 1,499 x and an ellipsis"
        );
        assert!(text.contains("### splice/p5"));
        assert!(text.contains("(omitted: the packages' guidance is capped)"));
        assert_eq!(parse_version("22.18.0"), Some((22, 18, 0)));
        assert_eq!(parse_version("22.18.0-rc.1"), Some((22, 18, 0)));
    }
}
