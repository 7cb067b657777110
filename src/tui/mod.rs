//! The terminal UI. It consumes the same `Event`s as the headless writers, through a sink that
//! forwards them to the app loop, and answers permission prompts by keypress.

pub mod app;
pub mod cells;
pub mod commands;
pub mod composer;
pub mod event_loop;
pub mod highlight;
pub mod markdown;
pub mod permission;
pub mod pipeline;
pub mod session;
#[cfg(test)]
mod snapshot_tests;
pub mod theme;
pub mod transcript;
pub mod wrap;

use thiserror::Error;

use crate::run::RunSettings;

#[derive(Debug, Error)]
pub enum TuiError {
    #[error(transparent)]
    Theme(#[from] theme::ThemeError),
    #[error(transparent)]
    Session(#[from] session::SessionError),
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// Which saved session to reopen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reopen {
    /// `--resume ID`
    Id(String),
    /// `--resume` without an id: the newest session anywhere.
    Latest,
    /// `--continue`: the newest session started in this directory.
    LatestHere,
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
pub async fn run(options: TuiOptions) -> Result<i32, TuiError> {
    let theme = theme::Theme::load(options.theme.as_deref().unwrap_or("ansi"))?;
    let mut settings = options.settings;
    let records = match &options.reopen {
        None => None,
        Some(reopen) => {
            let id = match reopen {
                Reopen::Id(id) => id.clone(),
                Reopen::Latest => session::latest(&settings.data_dir, None)
                    .ok_or_else(|| session::SessionError::NoneFor("any directory".into()))?,
                Reopen::LatestHere => session::latest(&settings.data_dir, Some(&settings.cwd))
                    .ok_or_else(|| {
                        session::SessionError::NoneFor(settings.cwd.display().to_string())
                    })?,
            };
            let records = session::load(&settings.data_dir, &id)?;
            settings.session_id = id;
            Some(records)
        }
    };
    let mut app = app::App::new(settings, theme);
    let session = event_loop::open_session(&mut app, records)?;
    let input = event_loop::LoopInput {
        app,
        prompt: options.prompt,
        session: Some(session),
    };
    Ok(event_loop::run_loop(input).await?)
}
