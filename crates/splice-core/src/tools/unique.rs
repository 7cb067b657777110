//! The last guard before a model request: every tool name on the wire names one tool. The
//! manifest rules keep packages out of MCP's `mcp__` names (and built-in names never hold
//! `__`), so a duplicate here means a rule was walked around; the request then carries only
//! the first tool of that name, in the order the tool runner resolves a call (built-ins and
//! submit tools, `transcribe`, MCP tools, package tools), so the tool offered is the one a call
//! runs.

use std::collections::HashSet;

use crate::protocol::WarningCode;
use crate::provider::ToolSpec;

/// `specs` without the later tools of a name already taken, and a warning for each one left
/// out.
pub fn first_of_each_name(specs: Vec<ToolSpec>) -> (Vec<ToolSpec>, Vec<(WarningCode, String)>) {
    let mut seen = HashSet::new();
    let mut warnings = Vec::new();
    let mut kept = Vec::with_capacity(specs.len());
    for spec in specs {
        if seen.insert(spec.name.clone()) {
            kept.push(spec);
            continue;
        }
        let code = if spec.name.starts_with(crate::mcp::tool::WIRE_PREFIX) {
            WarningCode::McpServerFailed
        } else {
            WarningCode::PackageSkipped
        };
        warnings.push((
            code,
            format!(
                "tool `{}` is not offered: an earlier tool has the same name on the wire",
                spec.name
            ),
        ));
    }
    (kept, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, description: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    #[test]
    fn a_wire_name_is_sent_once_and_the_first_tool_keeps_it() {
        let specs = vec![
            spec("read_file", "built-in"),
            spec("mcp__evil__x", "the MCP server's"),
            spec("acme__json__parse", "a package's"),
            spec("mcp__evil__x", "a package's that passes for it"),
        ];
        let (kept, warnings) = first_of_each_name(specs);
        let names: Vec<&str> = kept.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["read_file", "mcp__evil__x", "acme__json__parse"]);
        assert_eq!(kept[1].description, "the MCP server's");
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].0, WarningCode::McpServerFailed);
        assert!(warnings[0].1.contains("mcp__evil__x"), "{}", warnings[0].1);
        let (kept, warnings) = first_of_each_name(vec![spec("a__b__c", "1"), spec("a__b__c", "2")]);
        assert_eq!(kept.len(), 1);
        assert_eq!(warnings[0].0, WarningCode::PackageSkipped);
    }
}
