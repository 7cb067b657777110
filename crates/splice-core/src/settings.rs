//! What a run is started with, resolved from flags, config and environment before it starts.
//! Both the run lifecycle and the pipeline read it; it depends on neither.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{ConfigError, ConfigFile};
use crate::conversation::Conversation;
use crate::mcp::{McpHub, ServerEntry};
use crate::packages::package::Package;
use crate::permissions::Policy;
use crate::provider::ProviderConfig;
use crate::provider::pricing::PriceTable;
use crate::usage::Budget;

pub use crate::protocol::tier::Tier;

pub const DEFAULT_MAX_ITERATIONS: u32 = 3;

/// The user's config file as a run or a command reads it: the file read into its raw sections
/// (see [`ConfigFile::load`]), then each feature's section checked by that feature.
pub fn load_config() -> Result<ConfigFile, ConfigError> {
    load_config_at(crate::layout::Layout::process().user_config_file()?)
}

/// The config file at `path` read and checked as [`load_config`] does.
pub fn load_config_at(path: Option<&Path>) -> Result<ConfigFile, ConfigError> {
    let config = ConfigFile::load(path)?;
    let Some(path) = path else {
        return Ok(config);
    };
    crate::registry_client::check_config(&config).map_err(|why| ConfigError::invalid(path, why))?;
    crate::mcp::config::user_servers(&config)
        .map_err(|why| ConfigError::invalid(path, why.to_string()))?;
    crate::hooks::config::user_hooks(config.hooks.as_ref())
        .map_err(|why| ConfigError::invalid(path, why.to_string()))?;
    Ok(config)
}

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
    /// Where Splice keeps its files (the data directory: checkpoints, sessions, worktrees…).
    pub layout: crate::layout::Layout,
    pub pricing: PriceTable,
    pub budget: Budget,
    pub pipeline: PipelineSettings,
    /// Earlier runs of this session (the TUI's follow-ups); empty for a headless run.
    pub conversation: Conversation,
    pub packages: PackageSettings,
    pub mcp: McpSettings,
    /// The user's and the project's hooks.
    pub hooks: crate::hooks::HookSettings,
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
    /// `--jobs` (config `jobs`): most design-plan tasks at once; 1 runs them one after another.
    /// `None`: the default, worked out by [`PipelineSettings::jobs`] when a plan needs it.
    pub jobs: Option<u32>,
    /// Config `maxAgents`: most subagents (the `agent` tool) running at once.
    pub max_agents: u32,
    /// Config `agentTimeoutSecs`: how long a subagent may run.
    pub agent_timeout: std::time::Duration,
}

/// Subagents at once unless the config says otherwise.
pub const DEFAULT_MAX_AGENTS: u32 = 4;
/// How long a subagent may run unless the config says otherwise.
pub const DEFAULT_AGENT_TIMEOUT_SECS: u64 = 600;

impl Default for PipelineSettings {
    fn default() -> PipelineSettings {
        PipelineSettings {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            test_command: None,
            worktree: false,
            merge_back: false,
            design_plan: false,
            jobs: Some(1),
            max_agents: DEFAULT_MAX_AGENTS,
            agent_timeout: std::time::Duration::from_secs(DEFAULT_AGENT_TIMEOUT_SECS),
        }
    }
}

impl PipelineSettings {
    /// Most design-plan tasks at once: as set, else the cores this process may use, at most
    /// [`MAX_DEFAULT_JOBS`]. Worked out only here, as finding the cores reads the cgroup's
    /// quota, which a run without a plan has no need to wait for.
    pub fn jobs(&self) -> u32 {
        self.jobs.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            u32::try_from(cores).map_or(MAX_DEFAULT_JOBS, |n| n.min(MAX_DEFAULT_JOBS))
        })
    }
}

/// More tasks at once than this mostly wait on the provider's rate limit.
pub const MAX_DEFAULT_JOBS: u32 = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_raw_config_keeps_feature_sections_and_each_feature_checks_its_own() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let path = dir.path().join("config.json");
        let check = |text: &str| {
            std::fs::write(&path, text).expect("write path");
            assert!(ConfigFile::load(Some(&path)).is_ok(), "raw: {text}");
            load_config_at(Some(&path))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let error = check(r#"{"registry":"ftp://example.com"}"#);
        assert!(error.starts_with("invalid config file "), "{error}");
        assert!(error.contains("`registry`: registry URL"), "{error}");
        let error = check(r#"{"mcpServers":{"a__b":{"command":"x"}}}"#);
        assert!(error.starts_with("invalid config file "), "{error}");
        assert!(error.contains("a__b"), "{error}");
        std::fs::write(
            &path,
            r#"{"registry":"https://example.com/","mcpServers":{"docs":{"command":"x"}}}"#,
        )
        .expect("write path");
        let config = load_config_at(Some(&path)).expect("load config at");
        assert_eq!(config.registry.as_deref(), Some("https://example.com/"));
        let servers = crate::mcp::config::user_servers(&config).unwrap_or_default();
        assert_eq!(servers.len(), 1);
    }
}
