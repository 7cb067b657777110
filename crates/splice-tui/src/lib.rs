//! The terminal UI, a front end over the core's session (`splice_core::session`). It consumes
//! the same `Event`s as the headless writers, through a sink that forwards them to the app loop,
//! and answers permission prompts by keypress. Nothing in the core depends on it.

pub mod app;
pub use app::commands;
pub mod cells;
#[cfg(test)]
mod compact_tests;
pub(crate) mod composer;
pub(crate) mod context_meter;
#[cfg(test)]
mod daily_use_snapshot_tests;
pub(crate) mod device_login;
pub mod event_loop;
pub(crate) mod highlight;
pub(crate) mod hooks_approval;
#[cfg(test)]
mod login_snapshot_tests;
pub(crate) mod markdown;
pub(crate) mod mcp_approval;
pub(crate) mod mcp_overlay;
#[cfg(test)]
mod mcp_snapshot_tests;
pub(crate) mod modal_frame;
pub(crate) mod modals;
pub(crate) mod permission;
pub(crate) mod picker;
pub mod pipeline;
pub(crate) mod progress;
#[cfg(test)]
mod progress_snapshot_tests;
pub(crate) mod qr;
#[cfg(test)]
pub(crate) mod snapshot_tests;
pub(crate) mod subagent;
#[cfg(test)]
mod subagent_snapshot_tests;
pub mod theme;
pub(crate) mod transcript;
pub(crate) mod wrap;

use thiserror::Error;

use splice_core::exit::Exit;
use splice_core::session::log as session;
use splice_core::settings::RunSettings;

#[derive(Debug, Error)]
pub enum TuiError {
    #[error(transparent)]
    Theme(#[from] theme::ThemeError),
    #[error(transparent)]
    Session(#[from] session::SessionError),
    /// `SPLICE_MCP_*_TIMEOUT_MS` is not a number of milliseconds.
    #[error(transparent)]
    McpTimeout(#[from] splice_core::session::TimeoutEnvError),
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// Which saved session to reopen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reopen {
    /// `--resume ID`
    Id(String),
    /// `--resume` without an id: a picker of this directory's recent sessions.
    Pick,
    /// `--continue`: the newest session started in this directory.
    LatestHere,
}

impl Reopen {
    /// What `--resume [ID]` / `--continue` ask for, and the prompt words left over. With a
    /// space, `--resume X` takes X as the id whatever it looks like: an id that names no
    /// session is an error, never a prompt.
    pub fn choose(
        resume: Option<&str>,
        continue_session: bool,
        mut words: Vec<String>,
    ) -> (Option<Reopen>, Vec<String>) {
        let reopen = match resume {
            Some("") if !words.is_empty() => Some(Reopen::Id(words.remove(0))),
            Some("") => Some(Reopen::Pick),
            Some(id) => Some(Reopen::Id(id.to_string())),
            None if continue_session => Some(Reopen::LatestHere),
            None => None,
        };
        (reopen, words)
    }
}

/// How many sessions an error or the picker lists.
pub const RECENT: usize = 10;

/// What the TUI opens with.
#[derive(Debug)]
pub enum Opening {
    Fresh,
    Saved {
        id: String,
        records: Vec<session::Record>,
    },
    /// Let the person pick one of these (newest first, never empty).
    Pick(Vec<session::Summary>),
}

/// This directory's recent sessions, one a line, for an error message.
pub fn recent_list(layout: &splice_core::layout::Layout, cwd: &std::path::Path) -> String {
    let recent = session::recent(layout, cwd, RECENT);
    if recent.is_empty() {
        return "there is no saved session in this directory".to_string();
    }
    let now = std::time::SystemTime::now();
    let lines: Vec<String> = recent
        .iter()
        .map(|s| format!("  {}", picker::line(s, now, 100)))
        .collect();
    format!(
        "recent sessions here (splice --resume ID):\n{}",
        lines.join("\n")
    )
}

/// Find the session `reopen` names, among those started in `cwd` only.
pub fn find(
    reopen: Option<&Reopen>,
    layout: &splice_core::layout::Layout,
    cwd: &std::path::Path,
) -> Result<Opening, session::SessionError> {
    let id = match reopen {
        None => return Ok(Opening::Fresh),
        Some(Reopen::Id(id)) => id.clone(),
        Some(Reopen::LatestHere) => session::latest(layout, cwd)
            .ok_or_else(|| session::SessionError::NoneFor(cwd.display().to_string()))?,
        Some(Reopen::Pick) => {
            let recent = session::recent(layout, cwd, RECENT);
            if recent.is_empty() {
                return Err(session::SessionError::NoneFor(cwd.display().to_string()));
            }
            return Ok(Opening::Pick(recent));
        }
    };
    let Ok(records) = session::load(layout, &id) else {
        return Err(session::SessionError::UnknownHere {
            id,
            cwd: cwd.display().to_string(),
            recent: recent_list(layout, cwd),
        });
    };
    match session::started_in(&records) {
        Some(started) if std::path::Path::new(started) == cwd => Ok(Opening::Saved { id, records }),
        started => Err(session::SessionError::Elsewhere {
            id,
            cwd: started.unwrap_or("an unknown directory").to_string(),
        }),
    }
}

pub struct TuiOptions {
    /// Settings for new runs; `session_id` is replaced when a session is reopened.
    pub settings: RunSettings,
    /// A theme name (`ansi`, `dark`, `light`, `high-contrast`) or a theme file path.
    pub theme: Option<String>,
    pub prompt: Option<String>,
    pub reopen: Option<Reopen>,
}

/// Open the TUI and run it until the user quits; returns the exit code of the last run.
pub async fn run(options: TuiOptions) -> Result<Exit, TuiError> {
    let theme = theme::Theme::load(options.theme.as_deref().unwrap_or("ansi"))?;
    let mut settings = options.settings;
    // Refused before the terminal is taken over, like a bad theme.
    let mcp = splice_core::session::McpScope::session_from_env(&settings.cwd)?;
    let records = match find(options.reopen.as_ref(), &settings.layout, &settings.cwd)? {
        Opening::Fresh => None,
        Opening::Saved { id, records } => {
            settings.session_id = id;
            Some(records)
        }
        Opening::Pick(sessions) => {
            let Some(id) = event_loop::pick(sessions, &theme).await? else {
                // Cancelled: nothing opened, nothing to say.
                return Ok(splice_core::exit::Exit::Success);
            };
            let reopen = Reopen::Id(id);
            match find(Some(&reopen), &settings.layout, &settings.cwd)? {
                Opening::Saved { id, records } => {
                    settings.session_id = id;
                    Some(records)
                }
                _ => None,
            }
        }
    };
    let (layout, id) = (settings.layout.clone(), settings.session_id.clone());
    let mut app = app::App::new(settings, theme);
    // Read once at the start: the popup and `/help` list them; the session reads them again
    // for each request, so an edited file counts from the next request.
    app.set_custom_commands(splice_core::slash::Catalog::load(
        &app.settings().cwd,
        splice_core::slash::user_commands_dir().as_deref(),
    ));
    let opened = event_loop::open_session(&mut app, records)?;
    app.hint_missing_key();
    // The session's one hub is its own: it starts these servers in the background and ends
    // them when it ends, whichever way the loop ended.
    let plan = splice_core::session::mcp_plan::plan(app.settings());
    app.open_mcp(plan);
    // The project's hooks run once approved: asked here, before the first request.
    app.ask_project_hooks();
    let input = event_loop::LoopInput {
        app,
        prompt: options.prompt,
        session: Some(opened.log),
        history: opened.history,
        mcp,
    };
    let code = event_loop::run_loop(input).await?;
    // After the terminal is back, as Codex and Claude Code do; a session without a request
    // has nothing to reopen.
    let reopenable = session::load_head(&layout, &id).is_ok_and(|r| {
        r.iter()
            .any(|r| matches!(r, session::Record::Prompt { .. }))
    });
    if reopenable {
        eprintln!("To continue this session: splice --resume {id}");
    }
    Ok(code)
}

#[cfg(test)]
mod reopen_tests {
    use super::Reopen;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn resume_takes_its_id_with_or_without_equals() {
        assert_eq!(
            Reopen::choose(Some(""), false, words("session_ab12 fix it")),
            (Some(Reopen::Id("session_ab12".into())), words("fix it"))
        );
        assert_eq!(
            Reopen::choose(Some("session_x"), false, words("fix it")),
            (Some(Reopen::Id("session_x".into())), words("fix it"))
        );
        // A word after `--resume` is its id, never the prompt.
        assert_eq!(
            Reopen::choose(Some(""), false, words("fix it")),
            (Some(Reopen::Id("fix".into())), words("it"))
        );
        assert_eq!(
            Reopen::choose(Some(""), false, vec![]),
            (Some(Reopen::Pick), vec![])
        );
        assert_eq!(
            Reopen::choose(None, true, vec![]),
            (Some(Reopen::LatestHere), vec![])
        );
        assert_eq!(
            Reopen::choose(None, false, words("hi")),
            (None, words("hi"))
        );
    }
}

#[cfg(test)]
mod find_tests {
    use std::path::Path;

    use super::{Opening, Reopen, find};
    use splice_core::sanitize::redact::Redactor;
    use splice_core::session::log::{Record, SessionLog};

    fn saved(data: &Path, id: &str, cwd: &str) {
        let mut log = SessionLog::open(
            &splice_core::layout::Layout::at(data),
            id,
            Path::new(cwd),
            Redactor::from_vars([]),
        )
        .expect("open data");
        log.append(&Record::Prompt {
            text: format!("request in {id}"),
        })
        .expect("append log");
    }

    #[test]
    fn resume_without_an_id_picks_among_this_directorys_sessions_only() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let data = dir.path();
        saved(data, "session_here", "/repo/a");
        saved(data, "session_there", "/repo/b");
        match find(
            Some(&Reopen::Pick),
            &splice_core::layout::Layout::at(data),
            Path::new("/repo/a"),
        ) {
            Ok(Opening::Pick(list)) => {
                let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
                assert_eq!(ids, ["session_here"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            find(
                Some(&Reopen::Pick),
                &splice_core::layout::Layout::at(data),
                Path::new("/repo/c")
            )
            .is_err()
        );
        // An id shaped like a path never names a file.
        assert!(
            find(
                Some(&Reopen::Id("../sessions/session_here".into())),
                &splice_core::layout::Layout::at(data),
                Path::new("/repo/a")
            )
            .is_err()
        );
    }
}
