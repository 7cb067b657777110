//! `manifest.json`: every rule of packages.md, checked on the parsed JSON so that every
//! violation is reported with its path, then turned into a typed [`Manifest`]. Unknown keys are
//! refused at every level, as in schemas. Files the manifest names are checked against the
//! directory by `validate`.

use serde_json::{Map, Value};

use super::names::{
    MAX_WIRE_NAME, env_name_problem, host_problem, name_problem, package_version_problem,
    relative_path_problem, semver_problem,
};
use super::schema::{self, Schema, Type};
use super::{Issue, index_path, key_path};

pub const SPEC_VERSION: u64 = 1;
/// `timeoutMs` bounds, inclusive.
pub const MAX_TIMEOUT_MS: u64 = 300_000;
/// Extensions a tool entry may have (Node strips the types of `.ts`/`.mts` itself).
pub const ENTRY_EXTENSIONS: [&str; 4] = [".ts", ".mts", ".js", ".mjs"];

#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub namespace: String,
    pub name: String,
    pub version: String,
    pub description: String,
    pub license: String,
    pub min_node_version: Option<String>,
    pub permissions: Permissions,
    pub tools: Vec<Tool>,
}

impl Manifest {
    /// `namespace/name`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// What the tools may touch; absent keys grant nothing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Permissions {
    pub fs_read: Vec<String>,
    pub fs_write: Vec<String>,
    pub network: Vec<String>,
    pub env: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub entry: String,
    pub input: Schema,
    pub output: Schema,
    /// The schemas as written, for providers and for `ctx`.
    pub input_json: Value,
    pub output_json: Value,
    pub timeout_ms: u64,
}

/// Check a parsed `manifest.json`: every issue, and the manifest as far as it could be read
/// (`None` unless it is an object; a value that broke a rule is left empty or default), so
/// the files it names can be checked too. Trust it only when there is no issue.
pub fn check(value: &Value) -> (Option<Manifest>, Vec<Issue>) {
    let mut issues = Vec::new();
    let manifest = read(value, &mut issues);
    (manifest, issues)
}

fn read(value: &Value, issues: &mut Vec<Issue>) -> Option<Manifest> {
    let map = object(
        value,
        "",
        &[
            "specVersion",
            "namespace",
            "name",
            "version",
            "description",
            "license",
            "runtime",
            "permissions",
            "tools",
        ],
        &[
            "specVersion",
            "namespace",
            "name",
            "version",
            "description",
            "license",
            "runtime",
            "tools",
        ],
        issues,
    )?;
    if let Some(spec) = map.get("specVersion")
        && spec.as_u64() != Some(SPEC_VERSION)
    {
        issues.push(Issue::new(
            "specVersion",
            format!("must be {SPEC_VERSION} (got {spec})"),
        ));
    }
    let namespace = checked_string(
        map,
        "",
        "namespace",
        super::names::namespace_problem,
        issues,
    );
    let name = checked_string(map, "", "name", name_problem, issues);
    let version = checked_string(map, "", "version", package_version_problem, issues);
    let description = text(map, "", "description", issues);
    let license = text(map, "", "license", issues);
    let min_node_version = map.get("runtime").and_then(|r| runtime(r, issues));
    let permissions = map
        .get("permissions")
        .map(|p| permissions(p, issues))
        .unwrap_or_default();
    let prefix_len = namespace.len() + name.len() + 4;
    let tools = map
        .get("tools")
        .map(|t| tools(t, prefix_len, issues))
        .unwrap_or_default();
    Some(Manifest {
        namespace,
        name,
        version,
        description,
        license,
        min_node_version: min_node_version.flatten(),
        permissions,
        tools,
    })
}

/// `runtime`: `{type: "node", minNodeVersion?}`. A `minNodeVersion` below 22.18 is allowed
/// (the runtime needs 22.18 anyway, so it changes nothing).
fn runtime(value: &Value, issues: &mut Vec<Issue>) -> Option<Option<String>> {
    let map = object(
        value,
        "runtime",
        &["type", "minNodeVersion"],
        &["type"],
        issues,
    )?;
    if let Some(kind) = map.get("type")
        && kind != "node"
    {
        issues.push(Issue::new("runtime.type", "must be \"node\""));
    }
    Some(
        map.contains_key("minNodeVersion")
            .then(|| checked_string(map, "runtime", "minNodeVersion", semver_problem, issues)),
    )
}

fn permissions(value: &Value, issues: &mut Vec<Issue>) -> Permissions {
    let mut out = Permissions::default();
    let Some(map) = object(value, "permissions", &["fs", "network", "env"], &[], issues) else {
        return out;
    };
    if let Some(fs) = map.get("fs")
        && let Some(fs) = object(fs, "permissions.fs", &["read", "write"], &[], issues)
    {
        out.fs_read = list(fs, "permissions.fs", "read", relative_path_problem, issues);
        out.fs_write = list(fs, "permissions.fs", "write", relative_path_problem, issues);
    }
    out.network = list(map, "permissions", "network", host_problem, issues);
    out.env = list(map, "permissions", "env", env_name_problem, issues);
    out
}

fn tools(value: &Value, prefix_len: usize, issues: &mut Vec<Issue>) -> Vec<Tool> {
    let Some(items) = value.as_array().filter(|items| !items.is_empty()) else {
        issues.push(Issue::new("tools", "must be a non-empty array of tools"));
        return Vec::new();
    };
    let mut out: Vec<Tool> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = index_path("tools", i);
        let Some(map) = object(
            item,
            &path,
            &[
                "name",
                "description",
                "entry",
                "input",
                "output",
                "timeoutMs",
            ],
            &[
                "name",
                "description",
                "entry",
                "input",
                "output",
                "timeoutMs",
            ],
            issues,
        ) else {
            continue;
        };
        let name = checked_string(map, &path, "name", name_problem, issues);
        if !name.is_empty() && prefix_len + name.len() > MAX_WIRE_NAME {
            issues.push(Issue::new(
                key_path(&path, "name"),
                format!(
                    "`namespace__name__{name}` is {} characters; providers allow {MAX_WIRE_NAME}",
                    prefix_len + name.len()
                ),
            ));
        }
        if !name.is_empty() && out.iter().any(|t| t.name == name) {
            issues.push(Issue::new(
                key_path(&path, "name"),
                format!("`{name}` names an earlier tool too"),
            ));
        }
        let description = text(map, &path, "description", issues);
        let entry = checked_string(map, &path, "entry", entry_problem, issues);
        let (input, input_json) = tool_schema(map, &path, "input", issues);
        let (output, output_json) = tool_schema(map, &path, "output", issues);
        let timeout_ms = timeout(map, &path, issues);
        out.push(Tool {
            name,
            description,
            entry,
            input,
            output,
            input_json,
            output_json,
            timeout_ms,
        });
    }
    out
}

/// A path inside the package that will be packed, with a script extension.
fn entry_problem(value: &str) -> Option<String> {
    if let Some(problem) = relative_path_problem(value) {
        return Some(problem.replace("the project root", "the package"));
    }
    if value
        .split('/')
        .any(|c| c.starts_with('.') || c == "node_modules")
    {
        return Some(format!(
            "`{value}` is hidden or under node_modules, which are never packed"
        ));
    }
    (!ENTRY_EXTENSIONS.iter().any(|ext| value.ends_with(ext))).then(|| {
        format!(
            "`{value}` must end with one of {}",
            ENTRY_EXTENSIONS.join(", ")
        )
    })
}

/// `input` (an object schema: providers take object arguments) or `output` (any schema).
fn tool_schema(
    map: &Map<String, Value>,
    path: &str,
    key: &str,
    issues: &mut Vec<Issue>,
) -> (Schema, Value) {
    let Some(value) = map.get(key) else {
        return (Schema::default(), Value::Null);
    };
    let at = key_path(path, key);
    let (compiled, found) = schema::compile_partial(value, &at);
    issues.extend(found);
    if key == "input" && value.is_object() && compiled.kind != Some(Type::Object) {
        issues.push(Issue::new(
            key_path(&at, "type"),
            "a tool's input must be `type: object`",
        ));
    }
    (compiled, value.clone())
}

fn timeout(map: &Map<String, Value>, path: &str, issues: &mut Vec<Issue>) -> u64 {
    let Some(value) = map.get("timeoutMs") else {
        return 0;
    };
    match value
        .as_u64()
        .filter(|ms| (1..=MAX_TIMEOUT_MS).contains(ms))
    {
        Some(ms) => ms,
        None => {
            issues.push(Issue::new(
                key_path(path, "timeoutMs"),
                format!("must be an integer from 1 to {MAX_TIMEOUT_MS} (got {value})"),
            ));
            0
        }
    }
}

/// `value` as an object with only `allowed` keys and every `required` one; `None` (reported)
/// when it is not an object.
fn object<'a>(
    value: &'a Value,
    path: &str,
    allowed: &[&str],
    required: &[&str],
    issues: &mut Vec<Issue>,
) -> Option<&'a Map<String, Value>> {
    let Some(map) = value.as_object() else {
        let at = if path.is_empty() {
            "manifest.json"
        } else {
            path
        };
        issues.push(Issue::new(at, "must be a JSON object"));
        return None;
    };
    for key in map.keys() {
        if !allowed.contains(&key.as_str()) {
            issues.push(Issue::new(
                key_path(path, key),
                format!("unknown key (allowed: {})", allowed.join(", ")),
            ));
        }
    }
    for key in required {
        if !map.contains_key(*key) {
            issues.push(Issue::new(key_path(path, key), "is required"));
        }
    }
    Some(map)
}

/// A string key checked by `rule`; empty when absent (reported by `object`) or wrong.
fn checked_string(
    map: &Map<String, Value>,
    path: &str,
    key: &str,
    rule: fn(&str) -> Option<String>,
    issues: &mut Vec<Issue>,
) -> String {
    let Some(value) = map.get(key) else {
        return String::new();
    };
    let at = key_path(path, key);
    match value.as_str() {
        Some(text) => match rule(text) {
            Some(problem) => {
                issues.push(Issue::new(at, problem));
                String::new()
            }
            None => text.to_string(),
        },
        None => {
            issues.push(Issue::new(at, "must be a string"));
            String::new()
        }
    }
}

/// A string that says something (not blank).
fn text(map: &Map<String, Value>, path: &str, key: &str, issues: &mut Vec<Issue>) -> String {
    checked_string(
        map,
        path,
        key,
        |t| t.trim().is_empty().then(|| "must not be blank".into()),
        issues,
    )
}

/// An optional array of strings, each checked by `rule`.
fn list(
    map: &Map<String, Value>,
    path: &str,
    key: &str,
    rule: fn(&str) -> Option<String>,
    issues: &mut Vec<Issue>,
) -> Vec<String> {
    let Some(value) = map.get(key) else {
        return Vec::new();
    };
    let at = key_path(path, key);
    let Some(items) = value.as_array() else {
        issues.push(Issue::new(at, "must be an array of strings"));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(text) => match rule(text) {
                Some(problem) => issues.push(Issue::new(index_path(&at, i), problem)),
                None => out.push(text.to_string()),
            },
            None => issues.push(Issue::new(index_path(&at, i), "must be a string")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub fn valid() -> Value {
        json!({
            "specVersion": 1,
            "namespace": "splice",
            "name": "json",
            "version": "0.1.0",
            "description": "JSON tools",
            "license": "MIT",
            "runtime": {"type": "node", "minNodeVersion": "22.18.0"},
            "permissions": {"fs": {"read": ["data"], "write": []}, "network": ["api.example.com"], "env": ["HOME_DIR"]},
            "tools": [{
                "name": "parse",
                "description": "Parse JSON",
                "entry": "tools/parse.ts",
                "input": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 10}}, "required": ["text"], "additionalProperties": false},
                "output": {"type": "object", "properties": {"value": {}, "type": {"type": "string"}}, "required": ["value", "type"]},
                "timeoutMs": 5000
            }]
        })
    }

    fn issues(value: &Value) -> Vec<String> {
        check(value).1.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_valid_manifest_reads_into_its_type() {
        let (manifest, issues) = check(&valid());
        assert!(issues.is_empty(), "{issues:?}");
        let manifest = manifest.unwrap_or_else(|| panic!("no manifest"));
        assert_eq!(manifest.id(), "splice/json");
        assert_eq!(manifest.permissions.fs_read, ["data"]);
        assert_eq!(manifest.tools[0].timeout_ms, 5000);
        assert_eq!(manifest.min_node_version.as_deref(), Some("22.18.0"));
    }

    #[test]
    fn every_violation_is_reported_with_its_path() {
        let mut m = valid();
        m["specVersion"] = json!(2);
        m["namespace"] = json!("Splice");
        m["name"] = json!("-json");
        m["version"] = json!("1.0");
        m["description"] = json!(" ");
        m["license"] = json!(1);
        m["runtime"] = json!({"type": "deno", "minNodeVersion": "22", "extra": true});
        m["permissions"] = json!({"fs": {"read": ["/etc"], "write": ["../up"], "exec": []}, "network": ["https://x.com"], "env": ["A-B"]});
        m["homepage"] = json!("x");
        m["tools"][0]["input"]["properties"]["text"]["pattern"] = json!("^a");
        m["tools"][0]["timeoutMs"] = json!(300001);
        m["tools"][0]["entry"] = json!("../parse.ts");
        m["tools"][0]["description"] = json!("");
        let found = issues(&m);
        let paths: Vec<&str> = found
            .iter()
            .map(|i| i.split(": ").next().unwrap_or(""))
            .collect();
        for expected in [
            "homepage",
            "specVersion",
            "namespace",
            "name",
            "version",
            "description",
            "license",
            "runtime.extra",
            "runtime.type",
            "runtime.minNodeVersion",
            "permissions.fs.exec",
            "permissions.fs.read[0]",
            "permissions.fs.write[0]",
            "permissions.network[0]",
            "permissions.env[0]",
            "tools[0].description",
            "tools[0].entry",
            "tools[0].input.properties.text.pattern",
            "tools[0].timeoutMs",
        ] {
            assert!(
                paths.contains(&expected),
                "{expected} missing from {found:#?}"
            );
        }
        assert_eq!(found.len(), 19, "{found:#?}");
    }

    #[test]
    fn missing_keys_and_wrong_shapes() {
        assert_eq!(issues(&json!([])), ["manifest.json: must be a JSON object"]);
        let found = issues(&json!({"specVersion": 1}));
        for key in [
            "namespace",
            "name",
            "version",
            "description",
            "license",
            "runtime",
            "tools",
        ] {
            assert!(
                found.contains(&format!("{key}: is required")),
                "{key}: {found:?}"
            );
        }
        let mut m = valid();
        m["tools"] = json!([]);
        assert_eq!(issues(&m), ["tools: must be a non-empty array of tools"]);
        let mut m = valid();
        m["tools"][0] = json!({"name": "parse"});
        assert_eq!(issues(&m).len(), 5);
        let mut m = valid();
        m["permissions"] = json!({"network": "x.com", "env": [1]});
        assert_eq!(
            issues(&m),
            [
                "permissions.network: must be an array of strings",
                "permissions.env[0]: must be a string"
            ]
        );
    }

    #[test]
    fn tool_rules() {
        let mut m = valid();
        let tool = m["tools"][0].clone();
        m["tools"] = json!([tool.clone(), tool]);
        m["tools"][1]["input"] = json!({"type": "array"});
        m["tools"][1]["timeoutMs"] = json!(0);
        m["tools"][1]["entry"] = json!("tools/.hidden/x.ts");
        assert_eq!(
            issues(&m),
            [
                "tools[1].name: `parse` names an earlier tool too",
                "tools[1].entry: `tools/.hidden/x.ts` is hidden or under node_modules, which are never packed",
                "tools[1].input.type: a tool's input must be `type: object`",
                "tools[1].timeoutMs: must be an integer from 1 to 300000 (got 0)",
            ]
        );
        let mut m = valid();
        m["tools"][0]["entry"] = json!("tools/parse.py");
        m["tools"][0]["timeoutMs"] = json!(1.5);
        assert_eq!(issues(&m).len(), 2);
        // The provider-side name `namespace__name__tool` must fit in 64 characters.
        let mut m = valid();
        m["tools"][0]["name"] = json!("a".repeat(50));
        assert!(issues(&m).is_empty(), "splice__json__ + 50 is 64");
        m["tools"][0]["name"] = json!("a".repeat(51));
        assert!(
            issues(&m)[0].contains("is 65 characters; providers allow 64"),
            "{:?}",
            issues(&m)
        );
        let mut m = valid();
        m["tools"][0]["timeoutMs"] = json!(300000);
        m["runtime"]["minNodeVersion"] = json!("18.0.0");
        assert!(issues(&m).is_empty());
        m["permissions"] = json!({});
        m.as_object_mut().map(|o| o.remove("permissions"));
        assert!(issues(&m).is_empty());
    }
}
