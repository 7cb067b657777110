//! Where Splice keeps its files, worked out once from the environment: the config file
//! (`SPLICE_CONFIG`, else `<config dir>/splice/config.json`), the price table
//! (`SPLICE_PRICING_FILE`, else beside the default config), the data directory
//! (`SPLICE_DATA_DIR`, else `<data dir>/splice`) and the log (beside the data when
//! `SPLICE_DATA_DIR` relocates it, else `<state dir>/splice/log`). Every path Splice reads or
//! writes of its own is a method here; docs/user-guide.md lists them.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::config::ConfigError;

/// Splice's config, data, state and cache locations for one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    data: PathBuf,
    /// `SPLICE_DATA_DIR` named the data directory (then the log lives in it).
    data_named: bool,
    /// `<config dir>/splice`, when the platform has a config dir.
    config_home: Option<PathBuf>,
    config: Option<PathBuf>,
    config_named: bool,
    pricing: Option<PathBuf>,
    pricing_named: bool,
    /// `<state dir>/splice`, when the platform has one.
    state_home: Option<PathBuf>,
}

/// An environment variable naming a path; unset and empty count as not set.
fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

impl Layout {
    /// The locations this process's environment gives.
    pub fn from_env() -> Layout {
        let config_home = dirs::config_dir().map(|d| d.join("splice"));
        let (config, pricing) = (env_path("SPLICE_CONFIG"), env_path("SPLICE_PRICING_FILE"));
        let data = env_path("SPLICE_DATA_DIR");
        Layout {
            data_named: data.is_some(),
            data: data
                .or_else(|| dirs::data_dir().map(|d| d.join("splice")))
                .unwrap_or_else(|| PathBuf::from(".splice")),
            config_named: config.is_some(),
            config: config.or_else(|| config_home.as_ref().map(|d| d.join("config.json"))),
            pricing_named: pricing.is_some(),
            pricing: pricing.or_else(|| config_home.as_ref().map(|d| d.join("pricing.json"))),
            config_home,
            state_home: dirs::state_dir().map(|d| d.join("splice")),
        }
    }

    /// The process's layout, for the code that runs with no session to hand it one (a
    /// subcommand's helpers, the sandbox's own places, the package runtime's caches). The
    /// environment does not change while Splice runs.
    pub fn process() -> &'static Layout {
        static PROCESS: OnceLock<Layout> = OnceLock::new();
        PROCESS.get_or_init(Layout::from_env)
    }

    /// This layout with its data directory at `data` (as `SPLICE_DATA_DIR` would put it).
    pub fn with_data(&self, data: &Path) -> Layout {
        Layout {
            data: data.to_path_buf(),
            data_named: true,
            ..self.clone()
        }
    }

    /// The process's layout with its data directory at `data`: tests and benches.
    pub fn at(data: &Path) -> Layout {
        Layout::process().with_data(data)
    }

    /// The data directory: checkpoints, sessions, worktrees, packages, approvals, caches.
    pub fn data(&self) -> &Path {
        &self.data
    }

    /// An approvals file of the data directory (`mcp-approvals.json`, …).
    pub fn approvals(&self, file: &str) -> PathBuf {
        self.data.join(file)
    }

    /// Saved sessions, one `<sessionId>.jsonl` each.
    pub fn sessions(&self) -> PathBuf {
        self.data.join("sessions")
    }

    /// Session `id`'s log.
    pub fn session_log(&self, id: &str) -> PathBuf {
        self.sessions().join(format!("{id}.jsonl"))
    }

    /// Every run's checkpoints, `<runId>/<sequence>/` each.
    pub fn checkpoints(&self) -> PathBuf {
        self.data.join("checkpoints")
    }

    /// The checkpoints of run `run_id`.
    pub fn run_checkpoints(&self, run_id: &str) -> PathBuf {
        self.checkpoints().join(run_id)
    }

    /// Worktrees of `--worktree` runs and design-plan tasks, with their records and locks.
    pub fn worktrees(&self) -> PathBuf {
        self.data.join("worktrees")
    }

    /// Installed packages, `NS/NAME/VERSION/` each.
    pub fn packages(&self) -> PathBuf {
        self.data.join("packages")
    }

    /// Where each installed version came from (a registry install writes it), outside the
    /// package directories.
    pub fn package_sources(&self) -> PathBuf {
        self.data.join("package-sources")
    }

    /// Where a run's tool (`tool`) keeps what it made, by the run's file stem.
    pub fn run_keep(&self, run_stem: &str, tool: &str) -> PathBuf {
        self.data.join("runs").join(run_stem).join(tool)
    }

    /// A process's own runtime directory (`name`: the network proxy's socket).
    pub fn runtime(&self, name: &str) -> PathBuf {
        self.data.join("run").join(name)
    }

    /// A cache of the data directory (`node-version`, `ts-strip`).
    pub fn cache(&self, name: &str) -> PathBuf {
        self.data.join("cache").join(name)
    }

    /// The log's directory: beside the data when `SPLICE_DATA_DIR` relocates it (the tests do,
    /// so they never write the real HOME), else the user's state directory.
    pub fn log_dir(&self) -> PathBuf {
        match &self.state_home {
            Some(state) if !self.data_named => state.join("log"),
            _ => self.data.join("log"),
        }
    }

    /// `<config dir>/splice`, Splice's own config folder whatever `SPLICE_CONFIG` says.
    pub fn config_home(&self) -> Option<&Path> {
        self.config_home.as_deref()
    }

    /// The config file: `SPLICE_CONFIG`, else `<config dir>/splice/config.json`.
    pub fn config_file(&self) -> Option<&Path> {
        self.config.as_deref()
    }

    /// Whether `SPLICE_CONFIG` named the config file.
    pub fn config_named(&self) -> bool {
        self.config_named
    }

    /// The config file to read: the one `SPLICE_CONFIG` names, which must exist (a typo there
    /// must not silently drop the deny rules it holds), else the default file, which may be
    /// absent.
    pub fn user_config_file(&self) -> Result<Option<&Path>, ConfigError> {
        named_must_exist(self.config_file(), self.config_named, "SPLICE_CONFIG")
    }

    /// The price table: `SPLICE_PRICING_FILE`, else `<config dir>/splice/pricing.json`.
    pub fn pricing_file(&self) -> Option<&Path> {
        self.pricing.as_deref()
    }

    /// Whether `SPLICE_PRICING_FILE` named the price table.
    pub fn pricing_named(&self) -> bool {
        self.pricing_named
    }

    /// The price table to read: the one `SPLICE_PRICING_FILE` names, which must exist, else
    /// the default file, which may be absent.
    pub fn user_pricing_file(&self) -> Result<Option<&Path>, ConfigError> {
        named_must_exist(
            self.pricing_file(),
            self.pricing_named,
            "SPLICE_PRICING_FILE",
        )
    }

    /// A folder beside the config file (`commands`, `agents`): `SPLICE_CONFIG`'s folder, else
    /// `<config dir>/splice/`.
    pub fn beside_config(&self, name: &str) -> Option<PathBuf> {
        Some(self.config.as_deref()?.parent()?.join(name))
    }

    /// The registry logins, beside the config file.
    pub fn credentials_file(&self) -> Option<PathBuf> {
        const FILE: &str = "credentials.json";
        self.config.as_ref().map(|_| {
            self.beside_config(FILE)
                .unwrap_or_else(|| PathBuf::from(FILE))
        })
    }
}

fn named_must_exist<'a>(
    path: Option<&'a Path>,
    named: bool,
    variable: &str,
) -> Result<Option<&'a Path>, ConfigError> {
    match path {
        Some(path) if named && !path.exists() => Err(ConfigError::Read {
            path: path.display().to_string(),
            message: format!("no such file (named by {variable})"),
        }),
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(data: &str, config: Option<&str>) -> Layout {
        Layout {
            data: PathBuf::from(data),
            data_named: false,
            config_home: Some(PathBuf::from("/home/u/.config/splice")),
            config: Some(PathBuf::from(
                config.unwrap_or("/home/u/.config/splice/config.json"),
            )),
            config_named: config.is_some(),
            pricing: Some(PathBuf::from("/home/u/.config/splice/pricing.json")),
            pricing_named: false,
            state_home: Some(PathBuf::from("/home/u/.local/state/splice")),
        }
    }

    #[test]
    fn data_paths_are_those_the_user_guide_lists() {
        let l = layout("/d", None);
        assert_eq!(l.sessions(), Path::new("/d/sessions"));
        assert_eq!(l.session_log("s1"), Path::new("/d/sessions/s1.jsonl"));
        assert_eq!(l.run_checkpoints("r"), Path::new("/d/checkpoints/r"));
        assert_eq!(l.worktrees(), Path::new("/d/worktrees"));
        assert_eq!(l.packages(), Path::new("/d/packages"));
        assert_eq!(l.package_sources(), Path::new("/d/package-sources"));
        assert_eq!(
            l.approvals("mcp-approvals.json"),
            Path::new("/d/mcp-approvals.json")
        );
        assert_eq!(
            l.run_keep("r", "transcribe"),
            Path::new("/d/runs/r/transcribe")
        );
        assert_eq!(l.runtime("net-1"), Path::new("/d/run/net-1"));
        assert_eq!(l.cache("ts-strip"), Path::new("/d/cache/ts-strip"));
    }

    #[test]
    fn the_log_follows_a_named_data_dir_else_the_state_dir() {
        let l = layout("/d", None);
        assert_eq!(l.log_dir(), Path::new("/home/u/.local/state/splice/log"));
        assert_eq!(l.with_data(Path::new("/e")).log_dir(), Path::new("/e/log"));
    }

    #[test]
    fn credentials_commands_and_agents_sit_beside_the_config_file() {
        let l = layout("/d", None);
        assert_eq!(
            l.credentials_file(),
            Some(PathBuf::from("/home/u/.config/splice/credentials.json"))
        );
        let named = layout("/d", Some("/etc/x/conf.json"));
        assert_eq!(
            named.beside_config("commands"),
            Some(PathBuf::from("/etc/x/commands"))
        );
    }

    #[test]
    fn a_named_config_file_must_exist_and_a_default_one_need_not() {
        let named = layout("/d", Some("/nonexistent/splice/conf.json"));
        assert!(named.user_config_file().is_err());
        let default = layout("/d", None);
        assert_eq!(
            default.user_config_file().ok().flatten(),
            Some(Path::new("/home/u/.config/splice/config.json"))
        );
    }
}
