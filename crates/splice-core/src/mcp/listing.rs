//! A server's `tools/list` made into Splice's tools: strings made safe, descriptions and the
//! number of tools capped, names that would collide on the wire kept once. What was left out is
//! said in a note (shown as the server's last error).

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use super::tool::{Annotations, McpTool, wire_name};
use crate::sanitize::terminal::strip_controls;

/// Most tools taken from one server.
pub const MAX_TOOLS: usize = 200;
/// Longest tool description kept, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 2000;
/// Longest tool name taken (the MCP spec's own limit): names are quoted in notes and errors.
pub const MAX_NAME_CHARS: usize = 128;
/// Largest input schema of one tool (compact JSON): a larger one leaves the tool out.
pub const MAX_SCHEMA_BYTES: usize = 32 * 1024;
/// Most description and schema bytes of one server's tools together: what every model request
/// carries for it. The tools past it are left out.
pub const MAX_SERVER_SPEC_BYTES: usize = 256 * 1024;
/// Most `tools/list` pages read: a server may not keep handing out cursors.
pub const MAX_PAGES: usize = 50;

/// `tools/list`, every page, but no more than [`MAX_TOOLS`] + 1 tools (enough to tell there
/// were more) and [`MAX_PAGES`] pages, so a server that pages for ever cannot grow memory.
pub async fn list_bounded(
    peer: &rmcp::service::Peer<rmcp::service::RoleClient>,
) -> Result<Vec<rmcp::model::Tool>, rmcp::service::ServiceError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor);
        let page = peer.list_tools(Some(params)).await?;
        tools.extend(page.tools);
        cursor = page.next_cursor;
        if cursor.is_none() || tools.len() > MAX_TOOLS {
            break;
        }
    }
    Ok(tools)
}

pub struct Listing {
    pub tools: Vec<Arc<McpTool>>,
    /// What was left out and why; `None` when everything was taken.
    pub note: Option<String>,
}

pub fn tools_of(server: &str, listed: Vec<rmcp::model::Tool>) -> Listing {
    let mut tools: Vec<Arc<McpTool>> = Vec::new();
    let mut wires = HashSet::new();
    let mut notes = Vec::new();
    let mut spec_bytes = 0usize;
    let total = listed.len();
    for tool in listed {
        let name = tool.name.to_string();
        if name.is_empty() || strip_controls(&name) != name {
            notes.push(format!(
                "a tool named `{}` has control characters in its name and was left out",
                strip_controls(&name)
            ));
            continue;
        }
        if name.chars().count() > MAX_NAME_CHARS {
            notes.push(format!(
                "a tool named `{}…` has a name over {MAX_NAME_CHARS} characters and was left out",
                name.chars().take(40).collect::<String>()
            ));
            continue;
        }
        if tools.len() == MAX_TOOLS {
            notes.push(format!(
                "it lists {total} tools or more; only the first {MAX_TOOLS} are offered"
            ));
            break;
        }
        let wire = wire_name(server, &name);
        if !wires.insert(wire.clone()) {
            notes.push(format!(
                "tool `{name}` has the same name on the wire as an earlier tool (`{wire}`) and was left out"
            ));
            continue;
        }
        let description = cap(&strip_controls(tool.description.as_deref().unwrap_or("")));
        // Providers refuse a whole request with a tool whose schema is not an object: such a
        // tool would fail every request of the run, not just itself.
        let mut schema = (*tool.input_schema).clone();
        match schema.get("type") {
            None => {
                schema.insert("type".into(), Value::from("object"));
            }
            Some(kind) if kind == "object" => {}
            Some(_) => {
                notes.push(format!(
                    "tool `{name}` has an input schema that is not an object and was left out"
                ));
                continue;
            }
        }
        let input_schema = Value::Object(schema);
        let schema_bytes = input_schema.to_string().len();
        if schema_bytes > MAX_SCHEMA_BYTES {
            notes.push(format!(
                "tool `{name}` has an input schema of {schema_bytes} bytes (more than \
                 {MAX_SCHEMA_BYTES}) and was left out"
            ));
            continue;
        }
        if spec_bytes + schema_bytes + description.len() > MAX_SERVER_SPEC_BYTES {
            notes.push(format!(
                "tool `{name}` and the rest were left out: their descriptions and schemas \
                 come to more than {MAX_SERVER_SPEC_BYTES} bytes"
            ));
            break;
        }
        spec_bytes += schema_bytes + description.len();
        let annotations = tool
            .annotations
            .map(|a| Annotations {
                title: a.title.map(|t| cap(&strip_controls(&t))),
                read_only: a.read_only_hint,
                destructive: a.destructive_hint,
                idempotent: a.idempotent_hint,
                open_world: a.open_world_hint,
            })
            .unwrap_or_default();
        tools.push(Arc::new(McpTool {
            server: server.to_string(),
            name,
            wire,
            description,
            input_schema,
            annotations,
        }));
    }
    Listing {
        tools,
        note: (!notes.is_empty()).then(|| super::hub::cap_message(notes.join("; "))),
    }
}

fn cap(text: &str) -> String {
    if text.chars().count() <= MAX_DESCRIPTION_CHARS {
        return text.to_string();
    }
    let mut kept: String = text.chars().take(MAX_DESCRIPTION_CHARS - 1).collect();
    kept.push('…');
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(tools: serde_json::Value) -> Vec<rmcp::model::Tool> {
        serde_json::from_value(tools).expect("parse tools")
    }

    #[test]
    fn names_descriptions_and_counts_are_made_safe() {
        let schema = serde_json::json!({"type": "object"});
        let mut tools = vec![
            serde_json::json!({"name": "a.b", "description": "\u{1b}]52;c;x\u{7}hi", "inputSchema": schema,
                "annotations": {"readOnlyHint": true}}),
            serde_json::json!({"name": "a_b", "inputSchema": schema}),
            serde_json::json!({"name": "bad\u{1b}[2J", "inputSchema": schema}),
            serde_json::json!({"name": "long", "description": "d".repeat(5000), "inputSchema": schema}),
        ];
        for i in 0..MAX_TOOLS {
            tools.push(serde_json::json!({"name": format!("t{i}"), "inputSchema": schema}));
        }
        let listing = tools_of("srv", listed(serde_json::Value::Array(tools)));
        assert_eq!(listing.tools.len(), MAX_TOOLS);
        assert_eq!(listing.tools[0].wire, "mcp__srv__a_b");
        assert_eq!(listing.tools[0].name, "a.b");
        assert_eq!(listing.tools[0].description, "hi");
        assert!(listing.tools[0].claims_read_only());
        assert_eq!(listing.tools[1].name, "long");
        assert_eq!(
            listing.tools[1].description.chars().count(),
            MAX_DESCRIPTION_CHARS
        );
        let note = listing.note.unwrap_or_default();
        assert!(
            note.contains("tool `a_b` has the same name on the wire"),
            "{note}"
        );
        assert!(note.contains("control characters"), "{note}");
        assert!(note.contains("only the first 200 are offered"), "{note}");
    }

    #[test]
    fn long_names_are_left_out_and_the_note_is_capped() {
        let schema = serde_json::json!({"type": "object"});
        let mut tools = vec![
            serde_json::json!({"name": "n".repeat(MAX_NAME_CHARS + 1), "inputSchema": schema}),
        ];
        for i in 0..300 {
            tools.push(serde_json::json!({"name": format!("bad{i}\u{1b}"), "inputSchema": schema}));
        }
        let listing = tools_of("srv", listed(serde_json::Value::Array(tools)));
        assert!(listing.tools.is_empty());
        let note = listing.note.unwrap_or_default();
        assert!(note.contains("has a name over 128 characters"), "{note}");
        assert!(note.chars().count() <= super::super::hub::MAX_MESSAGE_CHARS + 1);
    }

    #[test]
    fn schemas_must_be_objects_and_an_untyped_one_becomes_one() {
        let listing = tools_of(
            "srv",
            listed(serde_json::json!([
                {"name": "scalar", "inputSchema": {"type": "string"}},
                {"name": "untyped", "inputSchema": {"properties": {}}}
            ])),
        );
        let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["untyped"]);
        assert_eq!(listing.tools[0].input_schema["type"], "object");
        let note = listing.note.unwrap_or_default();
        assert!(note.contains("tool `scalar` has an input schema that is not an object"));
    }

    #[test]
    fn giant_schemas_and_a_server_over_its_budget_are_left_out() {
        let big =
            serde_json::json!({"type": "object", "description": "y".repeat(MAX_SCHEMA_BYTES)});
        let near = serde_json::json!({"type": "object", "description": "z".repeat(MAX_SCHEMA_BYTES - 100)});
        let mut tools = vec![serde_json::json!({"name": "giant", "inputSchema": big})];
        for i in 0..20 {
            tools.push(serde_json::json!({"name": format!("t{i}"), "inputSchema": near}));
        }
        let listing = tools_of("srv", listed(serde_json::Value::Array(tools)));
        let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
        assert!(!names.contains(&"giant"));
        let kept = MAX_SERVER_SPEC_BYTES / MAX_SCHEMA_BYTES;
        assert_eq!(names.len(), kept, "{names:?}");
        let note = listing.note.unwrap_or_default();
        assert!(
            note.contains("tool `giant` has an input schema of"),
            "{note}"
        );
        assert!(
            note.contains(&format!("tool `t{kept}` and the rest were left out")),
            "{note}"
        );
        assert!(!note.contains('\u{1b}'));
    }
}
