//! A tool's identity: which tool a name in events, permission rules and the TUI means, parsed
//! once. The names are exactly those on the wire (docs/stream-json.md): built-in tools by their own
//! name, package tools `namespace.package.tool`, MCP tools `mcp__server__tool`.

use std::fmt;

/// How every MCP tool's name starts (and no other tool's).
pub const MCP_PREFIX: &str = "mcp__";

/// The tools Splice itself provides: the real tools, the stages' and the design plan's submit
/// tools, and `transcribe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    ReadFile,
    WriteFile,
    EditFile,
    ListFiles,
    SearchFiles,
    RunCommand,
    SubmitCode,
    SubmitTests,
    SubmitAnalysis,
    SubmitAudit,
    SubmitVerdict,
    Transcribe,
    SubmitPlan,
    SubmitCritique,
}

impl Builtin {
    /// In the order permission rules' errors list them.
    pub const ALL: [Builtin; 14] = [
        Builtin::ReadFile,
        Builtin::WriteFile,
        Builtin::EditFile,
        Builtin::ListFiles,
        Builtin::SearchFiles,
        Builtin::RunCommand,
        Builtin::SubmitCode,
        Builtin::SubmitTests,
        Builtin::SubmitAnalysis,
        Builtin::SubmitAudit,
        Builtin::SubmitVerdict,
        Builtin::Transcribe,
        Builtin::SubmitPlan,
        Builtin::SubmitCritique,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Builtin::ReadFile => "read_file",
            Builtin::WriteFile => "write_file",
            Builtin::EditFile => "edit_file",
            Builtin::ListFiles => "list_files",
            Builtin::SearchFiles => "search_files",
            Builtin::RunCommand => "run_command",
            Builtin::SubmitCode => "submit_code",
            Builtin::SubmitTests => "submit_tests",
            Builtin::SubmitAnalysis => "submit_analysis",
            Builtin::SubmitAudit => "submit_audit",
            Builtin::SubmitVerdict => "submit_verdict",
            Builtin::Transcribe => "transcribe",
            Builtin::SubmitPlan => "submit_plan",
            Builtin::SubmitCritique => "submit_critique",
        }
    }

    pub fn parse(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|tool| tool.as_str() == name)
    }

    /// Whether a call of this tool passes the permission policy, so a rule may name it: the
    /// design plan's submit tools only hand their answer back.
    pub fn is_judged(self) -> bool {
        !matches!(self, Builtin::SubmitPlan | Builtin::SubmitCritique)
    }
}

impl fmt::Display for Builtin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool a name means. Package and MCP names are kept whole, as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolIdentity {
    Builtin(Builtin),
    /// `namespace.package.tool`.
    Package(String),
    /// `mcp__server__tool`: its side effect is its server's claim.
    Mcp(String),
}

impl ToolIdentity {
    /// The tool `name` means, if it has one of the shapes above; a segment may be a glob
    /// (`mcp__everything__*`), as in permission rules.
    pub fn parse(name: &str) -> Option<ToolIdentity> {
        if let Some(tool) = Builtin::parse(name) {
            return Some(ToolIdentity::Builtin(tool));
        }
        let segment = |s: &str| !s.is_empty() && !s.contains('.');
        if let Some(rest) = name.strip_prefix(MCP_PREFIX) {
            return rest
                .split_once("__")
                .filter(|(server, tool)| segment(server) && segment(tool))
                .map(|_| ToolIdentity::Mcp(name.to_string()));
        }
        let parts: Vec<&str> = name.split('.').collect();
        (parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && !p.contains("__")))
            .then(|| ToolIdentity::Package(name.to_string()))
    }

    /// The name in events, rules and the TUI.
    pub fn name(&self) -> &str {
        match self {
            ToolIdentity::Builtin(tool) => tool.as_str(),
            ToolIdentity::Package(name) | ToolIdentity::Mcp(name) => name,
        }
    }

    /// Whether this is the built-in `tool`.
    pub fn is(&self, tool: Builtin) -> bool {
        *self == ToolIdentity::Builtin(tool)
    }
}

impl From<Builtin> for ToolIdentity {
    fn from(tool: Builtin) -> ToolIdentity {
        ToolIdentity::Builtin(tool)
    }
}

impl fmt::Display for ToolIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_into_their_kind_and_print_as_written() {
        for tool in Builtin::ALL {
            let identity = ToolIdentity::parse(tool.as_str());
            assert_eq!(identity, Some(ToolIdentity::Builtin(tool)));
            assert_eq!(
                identity.map(|i| i.to_string()).as_deref(),
                Some(tool.as_str())
            );
        }
        assert_eq!(
            ToolIdentity::parse("mcp__github__create_issue"),
            Some(ToolIdentity::Mcp("mcp__github__create_issue".into()))
        );
        assert_eq!(
            ToolIdentity::parse("acme.tools.lint").map(|i| i.name().to_string()),
            Some("acme.tools.lint".into())
        );
        assert!(matches!(
            ToolIdentity::parse("mcp__everything__*"),
            Some(ToolIdentity::Mcp(_))
        ));
        for unknown in [
            "bash",
            "Write_file",
            "mcp__x",
            "mcp____x",
            "mcp__a.b__c",
            "a.b",
            "a.b.c.d",
            "a..c",
            "a__b.c.d",
        ] {
            assert_eq!(ToolIdentity::parse(unknown), None, "{unknown}");
        }
        assert!(ToolIdentity::from(Builtin::RunCommand).is(Builtin::RunCommand));
        assert!(!Builtin::SubmitPlan.is_judged() && Builtin::Transcribe.is_judged());
    }
}
