//! Command-line arguments and their resolution into run settings.

pub mod registry;

use std::path::PathBuf;
use std::sync::Arc;

use std::ffi::OsStr;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Arg, Args, Parser, Subcommand, ValueEnum};

use crate::config::{ConfigFile, env_value};
use crate::ids::new_session_id;
use crate::packages::package::Package;
use crate::permissions::{Effect, PermissionMode, Policy, Rule};
use crate::protocol::Event;
use crate::provider::pricing::PriceTable;
use crate::provider::{ProviderConfig, ProviderKind, api_model_for};
use crate::run::RunFailure;
use crate::settings::{DEFAULT_MAX_ITERATIONS, PipelineSettings};
use crate::settings::{PackageSettings, RunSettings, Tier};
use crate::usage::Budget;

#[derive(Debug, Parser)]
#[command(
    name = "splice",
    version,
    about = "A terminal coding agent: ask for a change, watch a typed pipeline make it.",
    long_about = "A terminal coding agent. `splice` opens the terminal UI; `splice \"PROMPT\"` opens it \
with the prompt submitted. When standard output is not a terminal, the same invocation runs \
headless and writes stream-json (schema 2) to stdout, exactly as \
`splice exec --output-format stream-json` would.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub tui: TuiArgs,
    /// The request to submit.
    pub prompt: Vec<String>,
}

/// Options of the terminal UI only.
#[derive(Debug, Clone, Default, Args)]
pub struct TuiArgs {
    /// UI theme: ansi (default: your terminal's palette), dark, light, high-contrast, or a theme file.
    #[arg(long)]
    pub theme: Option<String>,
    /// Reopen a saved session of this directory, its conversation as the model had it:
    /// `--resume ID` or `--resume=ID` (the word after --resume is always the id); without an
    /// id, a picker of this directory's recent sessions.
    #[arg(long, num_args = 0..=1, default_missing_value = "", require_equals = true)]
    pub resume: Option<String>,
    /// Reopen the newest session with a prompt started in this directory.
    #[arg(long = "continue", conflicts_with = "resume")]
    pub continue_session: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run headless: prompt from the arguments or stdin, output as text or stream-json.
    Exec(Box<ExecArgs>),
    /// Put back the files a run changed, from its checkpoints.
    Restore(RestoreArgs),
    /// Show and handle worktrees that `--worktree` runs left behind.
    Worktree(WorktreeArgs),
    /// Skill packages: new, validate, pack, test, run, install, list, remove, info, search, yank.
    Pkg(PkgArgs),
    /// Log in to a package registry (device code: shows a code and a link, waits for approval).
    Login(LoginArgs),
    /// Log out of a registry: revoke the token there and remove the saved login.
    Logout(RegistryFlag),
    /// Validate, pack and upload a package directory to a registry.
    Publish(PublishArgs),
    /// The package registry: serve it, add users, approve or deny device logins.
    Registry(registry::RegistryArgs),
    /// The Scribiz CLI that Splice hosts (`SCRIBIZ_BIN`, else `scribiz` on PATH).
    Scribiz(ScribizArgs),
    /// MCP servers: add one to your config, remove one, list them (started, with their tools).
    Mcp(McpArgs),
    /// Run as an Agent Client Protocol agent over stdin/stdout, for editors (Zed, Neovim).
    Acp(Box<AcpArgs>),
}

/// `splice acp`: the run flags (`--provider`, `--model`, `--permission-mode`, ...) apply to
/// every session the editor opens; the editor gives each session's directory.
#[derive(Debug, Clone, Args)]
pub struct AcpArgs {
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Clone, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub action: McpAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum McpAction {
    /// Add a server to your config file's `mcpServers`.
    ///
    /// A stdio server (`-- COMMAND [ARGS...]`: started by Splice, with only PATH, HOME, the
    /// locale, the proxy and CA variables, the `--env` variables and the `--env-passthrough`
    /// ones) or a streamable HTTP one (`--url`, `--header`). The rest of the config file is kept
    /// as it was.
    #[command(
        override_usage = "splice mcp add NAME [--env K=V]... [--env-passthrough NAME]... -- COMMAND [ARGS...]\n       \
                          splice mcp add NAME --url URL [--header 'K: V']..."
    )]
    Add {
        /// The server's name: letters, digits, `-` and `_` (no `__`, no `_` at either end), at
        /// most 32; its tools are `mcp__NAME__TOOL`.
        name: String,
        /// A variable the server gets (it gets nothing else of your environment but PATH, HOME,
        /// the locale and the proxy and CA variables; `envPassthrough` in the config passes
        /// more by name). Repeatable.
        #[arg(long = "env", value_name = "K=V")]
        env: Vec<String>,
        /// A variable of your environment the server gets by name, its value read when it
        /// starts (`envPassthrough`; never a secret-named one: give those with --env).
        /// Repeatable.
        #[arg(long = "env-passthrough", value_name = "NAME")]
        env_passthrough: Vec<String>,
        /// The URL of a streamable HTTP server (instead of a command).
        #[arg(long)]
        url: Option<String>,
        /// A header sent to an HTTP server, as `Name: value`. Repeatable.
        #[arg(long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// Replace a server of that name.
        #[arg(long)]
        force: bool,
        /// The command that starts a stdio server, and its arguments (after `--`).
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Remove a server from your config file.
    Remove { name: String },
    /// Start the servers, print their state, tools and last error, and end them.
    ///
    /// Your config's servers and this directory's `.mcp.json` servers (a project's only when
    /// approved, or with --trust-project-mcp), within the startup timeout. Exits 0 even when a
    /// server fails (its state says so); 2 for a broken config.
    List {
        /// Print one JSON document: `{"servers": [...]}`.
        #[arg(long)]
        json: bool,
        /// Start this directory's `.mcp.json` servers even if nobody approved them.
        #[arg(long)]
        trust_project_mcp: bool,
    },
}

#[derive(Debug, Clone, Args)]
pub struct ScribizArgs {
    #[command(subcommand)]
    pub action: ScribizAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ScribizAction {
    /// Sign in to Scribiz (device code: shows a code and a link, waits for approval).
    Login {
        /// Print JSON lines: `device_code`, then `result` (or `error`, exit 3).
        #[arg(long)]
        json: bool,
    },
}

/// `--registry URL` (else `SPLICE_REGISTRY`, else the config's `registry`, else the default
/// login's).
#[derive(Debug, Clone, Default, Args)]
pub struct RegistryFlag {
    /// The registry URL (default: SPLICE_REGISTRY, then the config file's `registry`, then the
    /// registry of your first `splice login`, or the one logged in to with `--default`).
    #[arg(long)]
    pub registry: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct LoginArgs {
    #[command(flatten)]
    pub registry: RegistryFlag,
    /// Make this registry the default (the first login becomes the default without it).
    #[arg(long)]
    pub default: bool,
    /// Print JSON lines: `device_code`, then `result` (or `error`, exit 3).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct PublishArgs {
    pub dir: PathBuf,
    #[command(flatten)]
    pub registry: RegistryFlag,
    /// Validate and pack, print what would be published, upload nothing (no login needed).
    #[arg(long)]
    pub dry_run: bool,
    /// Print `{"id","version","size","sha256",…}` on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct PkgArgs {
    #[command(subcommand)]
    pub action: PkgAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum PkgAction {
    /// Check a package directory against every rule; each violation on stderr as `PATH:
    /// message`; exit 2 if there is any.
    Validate {
        dir: PathBuf,
        /// Print `{"valid":bool,"errors":[{"path","message"}]}` on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Validate, then pack into a deterministic .tar.gz; prints `FILE  SIZE bytes  sha256:HEX`.
    Pack {
        dir: PathBuf,
        /// The archive to write (default: NAMESPACE-NAME-VERSION.tgz).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print `{"path","size","sha256"}` on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Install a package directory, an archive made by `pkg pack`, or (when SOURCE is no path)
    /// `NS/NAME[@VERSION|@RANGE]` from a registry into $SPLICE_DATA_DIR/packages/NS/NAME/VERSION/;
    /// the same version with other contents is refused without --force.
    Install {
        source: PathBuf,
        #[command(flatten)]
        registry: RegistryFlag,
        /// Replace an installed version whose contents differ.
        #[arg(long)]
        force: bool,
        /// Print `{"id","version","path","sha256","status"}` on stdout.
        #[arg(long)]
        json: bool,
    },
    /// List installed packages, their versions and tools.
    List {
        /// Print `{"packages":[{"id","version","path","tools","valid"}]}` on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Remove an installed package: NS/NAME@VERSION, or every version of NS/NAME.
    Remove {
        spec: String,
        /// Print `{"id","removed":[VERSION…]}` on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool of a package in its sandbox. PACKAGE is a directory, or an installed
    /// `namespace/name[@version]`; INPUT_JSON is `-` for stdin, `{}` when left out.
    Run {
        package: String,
        tool: String,
        input: Option<String>,
        /// Print one line: `{"ok":true,"output","logs","ms"}` or `{"ok":false,"error","logs"}`.
        #[arg(long)]
        json: bool,
        /// The project root (what the package's fs permissions are relative to); default: the
        /// current directory.
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Give the tool this variable although its name marks it secret (KEY, TOKEN, SECRET,
        /// PASSWORD or CREDENTIAL), when the manifest declares it in permissions.env; config
        /// `passEnv` counts too. Repeatable.
        #[arg(long = "pass-env", value_name = "NAME")]
        pass_env: Vec<String>,
    },
    /// Run a package's examples through the runtime and its tests/*.test.ts with `node --test`;
    /// exit 0 all passed, 1 a failure, 2 not a valid package.
    Test { dir: PathBuf },
    /// A registry package's metadata and provenance: NS/NAME[@VERSION] (default: the latest).
    Info {
        spec: String,
        #[command(flatten)]
        registry: RegistryFlag,
        /// Print one JSON object (sha256, size, publisher, publishedAt, clientVersion, …).
        #[arg(long)]
        json: bool,
    },
    /// Search a registry's packages.
    Search {
        text: String,
        #[command(flatten)]
        registry: RegistryFlag,
        /// Print `{"packages":[{"id","description","latest"}]}`.
        #[arg(long)]
        json: bool,
    },
    /// Hide NS/NAME@VERSION from resolution on a registry (nothing is deleted); needs login.
    Yank {
        spec: String,
        #[command(flatten)]
        registry: RegistryFlag,
    },
    /// Write a package skeleton (that passes validate) into a new or empty directory.
    New {
        dir: PathBuf,
        #[arg(long)]
        namespace: String,
        /// Default: the directory's name.
        #[arg(long)]
        name: Option<String>,
    },
}

#[derive(Debug, Clone, Args)]
pub struct WorktreeArgs {
    #[command(subcommand)]
    pub action: WorktreeAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum WorktreeAction {
    /// List leftover worktrees: run, branch, path, uncommitted changes, commits.
    List,
    /// Commit what an interrupted run left, remove its worktree, keep its branch.
    Recover {
        /// Only this run (default: every leftover).
        run_id: Option<String>,
    },
    /// Remove leftover worktrees (discarding uncommitted work); branches with commits stay.
    Clean {
        /// Only this run (default: every leftover).
        run_id: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    Text,
    StreamJson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    StreamJson,
}

#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// Model provider: openai (also any OpenAI-compatible server via OPENAI_BASE_URL), anthropic or
    /// gemini. Default: the config file, then SPLICE_PROVIDER, then anthropic when only
    /// ANTHROPIC_API_KEY is set, else openai.
    #[arg(long, value_parser = Named::<ProviderKind>::new("provider"))]
    pub provider: Option<ProviderKind>,
    /// Model name (aliases: sonnet, opus, haiku, gpt, mini, o). Default: the config file, then
    /// SPLICE_MODEL, then gpt-4.1 / claude-sonnet-4-5 / gemini-2.5-flash for the provider.
    #[arg(long)]
    pub model: Option<String>,
    /// ask (default), accept-edits, auto or read-only.
    #[arg(long, value_parser = Named::<PermissionMode>::new("permission mode"))]
    pub permission_mode: Option<PermissionMode>,
    /// Allow a tool or a command pattern without asking, e.g. `run_command(cargo test*)`;
    /// `WebFetch(domain:HOST)` lets confined commands reach HOST through Splice's proxy.
    /// Repeatable.
    #[arg(long)]
    pub allow: Vec<String>,
    /// Refuse a tool or a command pattern, e.g. `run_command(git push*)`. Repeatable.
    #[arg(long)]
    pub deny: Vec<String>,
    /// Request tier: auto (default), light, standard or full.
    #[arg(long, value_parser = Named::<Tier>::new("tier"))]
    pub tier: Option<Tier>,
    /// Most model requests in one conversation (default 40).
    #[arg(long)]
    pub max_turns: Option<u32>,
    /// Working root (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Abort the run once its priced cost passes this many US dollars.
    #[arg(long)]
    pub max_cost_usd: Option<f64>,
    /// Abort the run once it has used this many tokens.
    #[arg(long)]
    pub max_tokens: Option<u64>,
    /// Let commands, and package tools that declare it, see this environment variable although
    /// its name marks it secret (it has KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL in it).
    /// Repeatable.
    #[arg(long = "pass-env", value_name = "NAME")]
    pub pass_env: Vec<String>,
    /// Offer this package directory's tools to the model for this run, without installing it
    /// (in place of an installed package with the same id). Repeatable.
    #[arg(long = "package", value_name = "DIR")]
    pub package: Vec<PathBuf>,
    /// Start the MCP servers of the project's .mcp.json for this run without their approval
    /// (headless; the terminal UI asks once per server instead).
    #[arg(long)]
    pub trust_project_mcp: bool,
    /// Run the hooks of the project's .splice/settings.json for this run without their
    /// approval, as they and the files they name are when the run starts (headless; the
    /// terminal UI asks once for their exact configuration instead).
    #[arg(long)]
    pub trust_project_hooks: bool,
    #[command(flatten)]
    pub pipeline: PipelineArgs,
}

/// The pipeline's and the worktree's flags.
#[derive(Debug, Clone, Default, Args)]
pub struct PipelineArgs {
    /// Most pipeline iterations before the run counts as failed (default 3).
    #[arg(long)]
    pub max_iterations: Option<u32>,
    /// The test command the test_runner stage runs (default: detected from the repository).
    #[arg(long)]
    pub test_command: Option<String>,
    /// Run in a new git worktree on branch `splice/<runId>`.
    #[arg(long)]
    pub worktree: bool,
    /// With --worktree: merge the branch into the source checkout at the end.
    #[arg(long, requires = "worktree")]
    pub merge_back: bool,
    /// Draft a plan of tasks, critique it, and run each task as its own pipeline.
    #[arg(long)]
    pub design_plan: bool,
    /// With --design-plan: most tasks run at once (default: the number of cores, at most 4).
    #[arg(long, value_name = "N")]
    pub jobs: Option<u32>,
}

impl PipelineArgs {
    fn resolve(&self, config: &ConfigFile) -> Result<PipelineSettings, RunFailure> {
        let max_iterations = self
            .max_iterations
            .or(config.max_iterations)
            .unwrap_or(DEFAULT_MAX_ITERATIONS);
        if max_iterations == 0 {
            return Err(RunFailure::usage("--max-iterations must be at least 1"));
        }
        let jobs = self.jobs.or(config.jobs);
        if jobs == Some(0) {
            return Err(RunFailure::usage("--jobs must be at least 1"));
        }
        let test_command = self
            .test_command
            .clone()
            .or(config.test_command.clone())
            .filter(|c| !c.trim().is_empty());
        Ok(PipelineSettings {
            max_iterations,
            test_command,
            worktree: self.worktree,
            merge_back: self.merge_back,
            design_plan: self.design_plan,
            jobs,
            max_agents: config
                .max_agents
                .unwrap_or(crate::settings::DEFAULT_MAX_AGENTS),
            agent_timeout: std::time::Duration::from_secs(
                config
                    .agent_timeout_secs
                    .unwrap_or(crate::settings::DEFAULT_AGENT_TIMEOUT_SECS),
            ),
        })
    }
}

#[derive(Debug, Clone, Args)]
pub struct ExecArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// How the prompt arrives: text (arguments or stdin) or stream-json (JSON Lines on stdin).
    #[arg(long, value_enum, default_value = "text")]
    pub input_format: InputFormat,
    /// text: the answer on stdout, progress on stderr; stream-json: JSON Lines on stdout.
    #[arg(long, value_enum, default_value = "text")]
    pub output_format: OutputFormat,
    /// The request; read from stdin when absent.
    pub prompt: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    /// The run whose changes to undo.
    pub run_id: String,
    /// Restore to the state before checkpoint N (default 1: before the run).
    #[arg(long, default_value_t = 1)]
    pub to: u32,
    /// Also restore files that changed after Splice wrote them.
    #[arg(long)]
    pub force: bool,
    /// Default: stream-json when stdout is not a terminal, else text.
    #[arg(long, value_enum)]
    pub output_format: Option<OutputFormat>,
}

pub const DEFAULT_MAX_TURNS: u32 = 40;

impl RunArgs {
    /// Flag, then config file, then `SPLICE_PROVIDER` (docs/user-guide.md's order), then a default.
    fn provider_name(&self, config: &ConfigFile) -> String {
        self.provider
            .map(|kind| kind.name().to_string())
            .or_else(|| config.provider.clone())
            .or_else(|| env_value("SPLICE_PROVIDER"))
            .unwrap_or_else(|| default_provider().name().to_string())
    }

    /// Flag, then config file, then `SPLICE_MODEL`; `None` means the provider's default.
    fn model_name(&self, config: &ConfigFile) -> Option<String> {
        self.model
            .clone()
            .or_else(|| config.model.clone())
            .or_else(|| env_value("SPLICE_MODEL"))
    }

    /// A `run_start` for a run whose settings could not be resolved, so that even a usage
    /// error's stream starts with `run_start`.
    pub fn fallback_start(&self, session_id: &str) -> Event {
        let config = crate::settings::load_config().unwrap_or_default();
        let provider = self.provider_name(&config);
        let model = self.model_name(&config).unwrap_or_else(|| {
            ProviderKind::parse(&provider)
                .map(|k| k.default_model().to_string())
                .unwrap_or_default()
        });
        let cwd = self
            .cwd
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        Event::RunStart {
            session_id: session_id.to_string(),
            cwd: cwd.display().to_string(),
            api_model: ProviderKind::parse(&provider)
                .and_then(|kind| api_model_for(kind, &model).ok())
                .unwrap_or_else(|| model.clone()),
            provider,
            model,
        }
    }

    /// Flags over config file over environment over defaults; every bad value is a usage error.
    pub fn resolve(&self, session_id: Option<String>) -> Result<RunSettings, RunFailure> {
        let config =
            crate::settings::load_config().map_err(|e| RunFailure::usage(e.to_string()))?;
        check_config(&config)?;
        let provider_name = self.provider_name(&config);
        let kind = ProviderKind::parse(&provider_name).ok_or_else(|| {
            RunFailure::usage(format!(
                "unknown provider `{provider_name}` (expected openai, anthropic or gemini)"
            ))
        })?;
        let model = self.model_name(&config);
        let provider = ProviderConfig::from_env(kind, model.as_deref())
            .map_err(|e| RunFailure::usage(e.to_string()))?;
        // The config's values were checked above; a flag's, by clap.
        let mode = self
            .permission_mode
            .or_else(|| {
                config
                    .permission_mode
                    .as_deref()
                    .and_then(PermissionMode::parse)
            })
            .unwrap_or_default();
        let mut rules = Vec::new();
        for (effect, texts) in [
            (Effect::Deny, config.deny.iter().chain(&self.deny)),
            (Effect::Allow, config.allow.iter().chain(&self.allow)),
        ] {
            for text in texts {
                // Claude Code's network rule: a host confined commands may reach, not a tool's.
                if effect == Effect::Allow
                    && crate::permissions::network::web_fetch_domain(text).is_some()
                {
                    continue;
                }
                rules
                    .push(Rule::parse(effect, text).map_err(|e| RunFailure::usage(e.to_string()))?);
            }
        }
        let tier = self
            .tier
            .or_else(|| config.tier.as_deref().and_then(Tier::parse))
            .unwrap_or(Tier::Auto);
        let cwd = match &self.cwd {
            Some(cwd) => cwd.clone(),
            None => std::env::current_dir()
                .map_err(|e| RunFailure::usage(format!("no current directory: {e}")))?,
        };
        let cwd = cwd
            .canonicalize()
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| {
                RunFailure::usage(format!("--cwd {} is not a directory", cwd.display()))
            })?;
        // The MCP timeouts (`SPLICE_MCP_*_TIMEOUT_MS`): a bad value is refused, not replaced.
        crate::mcp::HubOptions::from_env(cwd.clone())
            .map_err(|e| RunFailure::usage(e.to_string()))?;
        let layout = crate::layout::Layout::process().clone();
        let pricing_file = layout
            .user_pricing_file()
            .map_err(|e| RunFailure::usage(e.to_string()))?;
        let pricing =
            PriceTable::load(pricing_file).map_err(|e| RunFailure::usage(e.to_string()))?;
        let max_turns = self
            .max_turns
            .or(config.max_turns)
            .unwrap_or(DEFAULT_MAX_TURNS);
        if max_turns == 0 {
            return Err(RunFailure::usage("--max-turns must be at least 1"));
        }
        if self
            .max_cost_usd
            .is_some_and(|c| !(c.is_finite() && c >= 0.0))
        {
            return Err(RunFailure::usage(
                "--max-cost-usd must be a non-negative number",
            ));
        }
        // The user's hooks were checked when the config was loaded; the project's are read now.
        let hooks = crate::hooks::HookSettings::resolve(
            crate::hooks::config::user_hooks(config.hooks.as_ref()).unwrap_or_default(),
            &cwd,
            self.trust_project_hooks,
        )
        .map_err(|e| RunFailure::usage(e.to_string()))?;
        Ok(RunSettings {
            session_id: session_id.unwrap_or_else(new_session_id),
            cwd,
            provider,
            policy: Policy::new(mode, rules),
            tier,
            max_turns,
            layout,
            pricing,
            budget: Budget {
                max_cost_usd: self.max_cost_usd,
                max_tokens: self.max_tokens,
            },
            pipeline: self.pipeline.resolve(&config)?,
            conversation: Default::default(),
            packages: PackageSettings {
                extra: self.packages()?,
                node: config.node.clone(),
            },
            mcp: crate::settings::McpSettings {
                hub: None,
                // Checked when the config was loaded.
                servers: crate::mcp::config::user_servers(&config).unwrap_or_default(),
                trust_project: self.trust_project_mcp,
            },
            hooks,
        })
    }
}

impl RunArgs {
    /// The `--package` directories, each a valid package, no id twice; a usage error names
    /// every problem.
    fn packages(&self) -> Result<Vec<Arc<Package>>, RunFailure> {
        let mut packages: Vec<Arc<Package>> = Vec::new();
        for dir in &self.package {
            let package = Package::load(dir).map_err(|issues| {
                let issues: Vec<String> = issues.iter().map(ToString::to_string).collect();
                RunFailure::usage(format!(
                    "--package {} is not a valid package:\n{}",
                    dir.display(),
                    issues.join("\n")
                ))
            })?;
            if packages.iter().any(|p| p.id() == package.id()) {
                return Err(RunFailure::usage(format!(
                    "--package {}: {} is given twice",
                    dir.display(),
                    package.id()
                )));
            }
            packages.push(Arc::new(package));
        }
        Ok(packages)
    }
}

/// Every value of the config file must be usable, also when a flag overrides it this time: a
/// broken value found only on the day the flag is left off is worse than one found now.
fn check_config(config: &ConfigFile) -> Result<(), RunFailure> {
    let bad = |key: &str, value: &str, expected: String| {
        RunFailure::usage(format!(
            "invalid config file: unknown {key} `{value}` (expected {expected})"
        ))
    };
    if let Some(name) = &config.provider
        && ProviderKind::parse(name).is_none()
    {
        return Err(bad("provider", name, "openai, anthropic or gemini".into()));
    }
    if let Some(name) = &config.permission_mode
        && PermissionMode::parse(name).is_none()
    {
        return Err(bad(
            "permissionMode",
            name,
            PermissionMode::NAMES.join(", "),
        ));
    }
    if let Some(name) = &config.tier
        && Tier::parse(name).is_none()
    {
        return Err(bad("tier", name, Tier::NAMES.join(", ")));
    }
    for (key, value) in [
        ("maxTurns", config.max_turns),
        ("maxIterations", config.max_iterations),
        ("jobs", config.jobs),
        ("maxAgents", config.max_agents),
    ] {
        if value == Some(0) {
            return Err(RunFailure::usage(format!(
                "invalid config file: `{key}` must be at least 1"
            )));
        }
    }
    if config.agent_timeout_secs == Some(0) {
        return Err(RunFailure::usage(
            "invalid config file: `agentTimeoutSecs` must be at least 1",
        ));
    }
    Ok(())
}

/// `anthropic` when only its key is set, else `openai`.
fn default_provider() -> ProviderKind {
    let has = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty());
    if has("ANTHROPIC_API_KEY") && !has("OPENAI_API_KEY") && !has("OPENAI_BASE_URL") {
        ProviderKind::Anthropic
    } else {
        ProviderKind::OpenAi
    }
}

impl Cli {
    /// The arguments (the program's name first), or why clap refused them.
    pub fn parse_args(raw: &[String]) -> Result<Cli, ParseFailure> {
        Cli::try_parse_from(raw).map_err(ParseFailure)
    }
}

/// Arguments clap refused, or a request for `--help` or `--version`.
#[derive(Debug)]
pub struct ParseFailure(clap::Error);

impl ParseFailure {
    /// `--help` or `--version`: not a failure.
    pub fn is_help(&self) -> bool {
        matches!(
            self.0.kind(),
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
        )
    }

    /// Clap's rendering: help on stdout, an error on stderr.
    pub fn print(&self) {
        let _ = self.0.print();
    }

    /// Clap's message without its `error:` label and the usage block: the part up to the
    /// first blank line, on one line (`the following required arguments were not provided:
    /// --worktree`).
    pub fn message(&self) -> String {
        let rendered = self.0.to_string();
        let message: Vec<&str> = rendered
            .lines()
            .take_while(|line| !line.trim().is_empty())
            .map(str::trim)
            .collect();
        let message = message.join(" ");
        let message = message.strip_prefix("error: ").unwrap_or(&message);
        if message.is_empty() {
            "invalid arguments".to_string()
        } else {
            message.to_string()
        }
    }
}

/// Whether raw arguments ask for stream-json output (used when parsing itself failed).
pub fn args_request_stream_json(args: &[String]) -> bool {
    args.iter().enumerate().any(|(i, arg)| {
        arg == "--output-format=stream-json"
            || (arg == "--output-format" && args.get(i + 1).is_some_and(|v| v == "stream-json"))
    })
}

/// A flag whose value is one of a closed list: clap lists the values in `--help`, and a bad one
/// is a usage error (exit 2) worded as the config file's (`unknown tier `huge` (expected …)`).
#[derive(Clone)]
struct Named<E> {
    what: &'static str,
    kind: std::marker::PhantomData<E>,
}

impl<E> Named<E> {
    fn new(what: &'static str) -> Named<E> {
        Named {
            what,
            kind: std::marker::PhantomData,
        }
    }
}

/// A closed list of values a flag names: every value and each one's name. A trait of this
/// module (not clap's `ValueEnum`) so that types of other crates (the protocol's `Tier`, the
/// provider's `ProviderKind`) can be named by a flag.
trait Choice: Sized + Clone + Send + Sync + 'static {
    const ALL: &'static [Self];
    fn name(&self) -> &'static str;
}

impl<E: Choice> TypedValueParser for Named<E> {
    type Value = E;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&Arg>,
        value: &OsStr,
    ) -> Result<E, clap::Error> {
        let text = value.to_string_lossy();
        E::ALL
            .iter()
            .find(|v| v.name() == text)
            .cloned()
            .ok_or_else(|| {
                let names: Vec<&str> = E::ALL.iter().map(E::name).collect();
                clap::Error::raw(
                    ErrorKind::InvalidValue,
                    format!(
                        "unknown {} `{text}` (expected {})\n",
                        self.what,
                        names.join(", ")
                    ),
                )
                .with_cmd(cmd)
            })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            E::ALL.iter().map(|v| PossibleValue::new(v.name())),
        ))
    }
}

impl Choice for Tier {
    const ALL: &'static [Self] = &[Tier::Auto, Tier::Light, Tier::Standard, Tier::Full];

    fn name(&self) -> &'static str {
        self.as_str()
    }
}

impl Choice for PermissionMode {
    const ALL: &'static [Self] = &[
        PermissionMode::Ask,
        PermissionMode::AcceptEdits,
        PermissionMode::Auto,
        PermissionMode::ReadOnly,
    ];

    fn name(&self) -> &'static str {
        self.as_str()
    }
}

impl Choice for ProviderKind {
    const ALL: &'static [Self] = &[
        ProviderKind::OpenAi,
        ProviderKind::Anthropic,
        ProviderKind::Gemini,
    ];

    fn name(&self) -> &'static str {
        ProviderKind::name(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_come_from_the_flag_then_the_config_then_the_cores() {
        let config = ConfigFile {
            jobs: Some(3),
            ..ConfigFile::default()
        };
        let resolve = |jobs: Option<u32>, config: &ConfigFile| {
            PipelineArgs {
                jobs,
                ..PipelineArgs::default()
            }
            .resolve(config)
            .map(|s| s.jobs())
        };
        assert_eq!(resolve(Some(2), &config), Ok(2));
        assert_eq!(resolve(None, &config), Ok(3));
        let default = resolve(None, &ConfigFile::default()).expect("default jobs");
        assert!(
            (1..=crate::settings::MAX_DEFAULT_JOBS).contains(&default),
            "{default}"
        );
        assert!(resolve(Some(0), &config).is_err());
    }
}
