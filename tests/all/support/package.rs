//! Packages written by a test: a manifest (with the permissions under test) and tool sources,
//! plus a SKILL.md complete enough to pass validation.

use std::path::Path;

use serde_json::{Value, json};

/// A manifest for `test/hostile` with `tools` (name, timeout in ms), each taking any object
/// and returning any JSON, and `permissions` as given.
pub fn manifest(permissions: Value, tools: &[(&str, u64)]) -> Value {
    let tools: Vec<Value> = tools
        .iter()
        .map(|(name, timeout)| {
            json!({
                "name": name,
                "description": format!("The {name} tool"),
                "entry": format!("tools/{name}.ts"),
                "input": {"type": "object"},
                "output": {},
                "timeoutMs": timeout,
            })
        })
        .collect();
    json!({
        "specVersion": 1,
        "namespace": "test",
        "name": "hostile",
        "version": "0.1.0",
        "description": "Tools written by a test",
        "license": "MIT",
        "runtime": {"type": "node", "minNodeVersion": "22.18.0"},
        "permissions": permissions,
        "tools": tools,
    })
}

/// Write the package into `dir`: `manifest.json`, `SKILL.md`, `tools/<name>.ts` per source.
pub fn write_package(dir: &Path, manifest: &Value, sources: &[(&str, &str)]) {
    std::fs::create_dir_all(dir.join("tools")).expect("create tools");
    let text = serde_json::to_string_pretty(manifest).expect("serialise manifest");
    std::fs::write(dir.join("manifest.json"), text).expect("write manifest.json");
    let names: Vec<String> = manifest["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| format!("- `{}`", t["name"].as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    let skill = format!(
        "# test/hostile\n\n## When to use it\n\nNever: it attacks the sandbox.\n\n\
         ## Tools\n\n{}\n\n## Errors\n\nAnything.\n\n## Limits\n\nNone.\n\n\
         ## Permissions and security boundaries\n\nWhat the manifest declares.\n",
        names.join("\n")
    );
    std::fs::write(dir.join("SKILL.md"), skill).expect("write SKILL.md");
    for (name, source) in sources {
        std::fs::write(dir.join("tools").join(format!("{name}.ts")), source).expect("write tools");
    }
}
