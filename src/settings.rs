//! What a run is started with, resolved from flags, config and environment before it starts.
//! Both the run lifecycle and the pipeline read it; it depends on neither.

use std::path::PathBuf;
use std::sync::Arc;

use crate::conversation::Conversation;
use crate::mcp::{McpHub, ServerEntry};
use crate::packages::package::Package;
use crate::permissions::Policy;
use crate::provider::ProviderConfig;
use crate::provider::pricing::PriceTable;
use crate::usage::Budget;

pub use crate::protocol::tier::Tier;

pub const DEFAULT_MAX_ITERATIONS: u32 = 3;

/// Everything a run needs, resolved from flags, config and environment before it starts.
#[derive(Clone)]
pub struct RunSettings {
    pub session_id: String,
    /// The working root, canonical.
    pub cwd: PathBuf,
    pub provider: ProviderConfig,
    pub policy: Policy,
    pub tier: Tier,
    pub max_turns: u32,
    pub data_dir: PathBuf,
    pub pricing: PriceTable,
    pub budget: Budget,
    pub pipeline: PipelineSettings,
    /// Earlier runs of this session (the TUI's follow-ups); empty for a headless run.
    pub conversation: Conversation,
    pub packages: PackageSettings,
    pub mcp: McpSettings,
}

/// The run's skill packages beyond the installed ones, and where Node is.
#[derive(Debug, Clone, Default)]
pub struct PackageSettings {
    /// `--package DIR`, validated when the run starts: offered for this run, in place of an
    /// installed package with the same id.
    pub extra: Vec<Arc<Package>>,
    /// The config file's `node` (`SPLICE_NODE` comes first, `node` on PATH last).
    pub node: Option<PathBuf>,
}

/// The MCP servers a run may use.
#[derive(Clone, Default)]
pub struct McpSettings {
    /// The session's hub (the session builds one for `McpScope::Session`): used as it is and not ended by
    /// the run. `None`: the run starts its own from the config and ends it.
    pub hub: Option<McpHub>,
    /// The user's configured servers (the config file's `mcpServers`).
    pub servers: Vec<ServerEntry>,
    /// `--trust-project-mcp`: start the project's `.mcp.json` servers without an approval.
    pub trust_project: bool,
}

/// Pipeline and worktree options, resolved from flags and config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineSettings {
    pub max_iterations: u32,
    /// `--test-command` (or the config's `testCommand`); detected from the repository when absent.
    pub test_command: Option<String>,
    pub worktree: bool,
    pub merge_back: bool,
    pub design_plan: bool,
}

impl Default for PipelineSettings {
    fn default() -> PipelineSettings {
        PipelineSettings {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            test_command: None,
            worktree: false,
            merge_back: false,
            design_plan: false,
        }
    }
}
