//! The pipeline's stage names (docs/stream-json.md, Pipeline), as they appear in markers, results and
//! usage events.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    CodeWriter,
    TestGenerator,
    StaticAnalyzer,
    SecurityAuditor,
    TestRunner,
    AcceptanceVerifier,
}

impl Stage {
    /// Every stage, in the order the full tier runs them.
    pub const ALL: [Stage; 6] = [
        Stage::CodeWriter,
        Stage::TestGenerator,
        Stage::StaticAnalyzer,
        Stage::SecurityAuditor,
        Stage::TestRunner,
        Stage::AcceptanceVerifier,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::CodeWriter => "code_writer",
            Stage::TestGenerator => "test_generator",
            Stage::StaticAnalyzer => "static_analyzer",
            Stage::SecurityAuditor => "security_auditor",
            Stage::TestRunner => "test_runner",
            Stage::AcceptanceVerifier => "acceptance_verifier",
        }
    }
}
