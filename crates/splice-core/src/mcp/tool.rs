//! One tool of an MCP server as Splice offers it: its wire name, its spec for a model request,
//! and what its annotations (the server's claims) make of its side effect and risk.

use serde_json::Value;

use crate::protocol::SideEffect;
use crate::protocol::events::Risk;
use crate::provider::ToolSpec;

/// How every MCP tool's wire name starts (and no other tool's).
pub const WIRE_PREFIX: &str = crate::protocol::tool::MCP_PREFIX;

/// Most characters of a wire name: the strictest provider (OpenAI) takes 64.
pub const MAX_WIRE_NAME: usize = 64;

/// The server's hints about a tool (MCP `ToolAnnotations`); claims, not facts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Annotations {
    pub title: Option<String>,
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The server's name in the config.
    pub server: String,
    /// The tool's own name on its server: what `tools/call` sends.
    pub name: String,
    /// `mcp__<server>__<tool>`, with characters providers refuse replaced (see [`wire_name`]).
    pub wire: String,
    pub description: String,
    /// The tool's `inputSchema` (a JSON Schema object).
    pub input_schema: Value,
    pub annotations: Annotations,
}

impl McpTool {
    /// `readOnlyHint` → read, `openWorldHint` → network, anything else → execute.
    pub fn side_effect(&self) -> SideEffect {
        if self.claims_read_only() {
            SideEffect::Read
        } else if self.annotations.open_world == Some(true) {
            SideEffect::Network
        } else {
            SideEffect::Execute
        }
    }

    /// Only an explicit `readOnlyHint: true` counts: read-only mode runs nothing else.
    pub fn claims_read_only(&self) -> bool {
        self.annotations.read_only == Some(true)
    }

    /// The label shown with a prompt: low for a read-only claim, high for one that says it is
    /// destructive, medium otherwise (MCP's own default for `destructiveHint` is true, but a
    /// label of high on every unannotated tool would say nothing).
    pub fn risk(&self) -> Risk {
        if self.claims_read_only() {
            Risk::Low
        } else if self.annotations.destructive == Some(true) {
            Risk::High
        } else {
            Risk::Medium
        }
    }

    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.wire.clone(),
            description: self.description.clone(),
            parameters: self.input_schema.clone(),
        }
    }
}

/// `mcp__<server>__<tool>`: characters outside `[A-Za-z0-9_-]` become `_` (providers accept
/// only those), and a name longer than [`MAX_WIRE_NAME`] is cut and ends in a short hash of the
/// whole so two long names stay apart.
pub fn wire_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let full = format!("{WIRE_PREFIX}{}__{}", clean(server), clean(tool));
    if full.len() <= MAX_WIRE_NAME {
        return full;
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    // ASCII only by now, so any byte index is a char boundary.
    format!("{}_{hash}", &full[..MAX_WIRE_NAME - hash.len() - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(annotations: Annotations) -> McpTool {
        McpTool {
            server: "s".into(),
            name: "t".into(),
            wire: wire_name("s", "t"),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            annotations,
        }
    }

    #[test]
    fn annotations_set_side_effect_and_risk() {
        let plain = tool(Annotations::default());
        assert_eq!(plain.side_effect(), SideEffect::Execute);
        assert_eq!(plain.risk(), Risk::Medium);
        let read = tool(Annotations {
            read_only: Some(true),
            open_world: Some(true),
            ..Annotations::default()
        });
        assert_eq!(read.side_effect(), SideEffect::Read);
        assert_eq!(read.risk(), Risk::Low);
        let web = tool(Annotations {
            open_world: Some(true),
            destructive: Some(true),
            ..Annotations::default()
        });
        assert_eq!(web.side_effect(), SideEffect::Network);
        assert_eq!(web.risk(), Risk::High);
        let not_read = tool(Annotations {
            read_only: Some(false),
            ..Annotations::default()
        });
        assert!(!not_read.claims_read_only());
    }

    #[test]
    fn wire_names_are_provider_safe_and_bounded() {
        assert_eq!(
            wire_name("everything", "get-sum"),
            "mcp__everything__get-sum"
        );
        assert_eq!(wire_name("fs", "read.file/x"), "mcp__fs__read_file_x");
        let long_a = wire_name("server", &"a".repeat(100));
        let long_b = wire_name("server", &format!("{}b", "a".repeat(99)));
        assert_eq!(long_a.len(), MAX_WIRE_NAME);
        assert_ne!(long_a, long_b);
        assert!(long_a.starts_with("mcp__server__aaa"));
    }
}
