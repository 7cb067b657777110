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

impl Reopen {
    /// What `--resume [ID]` / `--continue` ask for, and the prompt words left over. With a
    /// space, `--resume session_x` hands the id over as the prompt's first word.
    pub fn choose(
        resume: Option<&str>,
        continue_session: bool,
        mut words: Vec<String>,
    ) -> (Option<Reopen>, Vec<String>) {
        let reopen = match resume {
            Some("") if words.first().is_some_and(|w| w.starts_with("session_")) => {
                Some(Reopen::Id(words.remove(0)))
            }
            Some("") => Some(Reopen::Latest),
            Some(id) => Some(Reopen::Id(id.to_string())),
            None if continue_session => Some(Reopen::LatestHere),
            None => None,
        };
        (reopen, words)
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
        assert_eq!(
            Reopen::choose(Some(""), false, words("fix it")),
            (Some(Reopen::Latest), words("fix it"))
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
