//! `scribiz login --json` as events for a device-code modal: a spawned task sends the code, then
//! the signed-in account or the failure (message and hint), and a cancel ends the CLI (no
//! credential is saved: the CLI saves only after a confirmed code). The event mirrors the TUI's
//! source-neutral device-login event field for field; every string is already cleaned.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::error::{FailureKind, ScribizError};
use super::job::{Canceller, Job, JobOptions};
use super::launch::{Env, Limits, locate, login_args};
use super::media::NoHostMedia;
use super::protocol::{DeviceCode, Line, LoginResult, ResultLine};

/// The modal's own event: the Scribiz login reports exactly what a registry login does.
pub use crate::device_login::DeviceLoginEvent as LoginEvent;

/// The `device_code` line as the modal's event.
pub fn code_event(code: &DeviceCode) -> LoginEvent {
    LoginEvent::Code {
        user_code: code.user_code.to_string(),
        verification_uri: code.verification_uri.to_string(),
        verification_uri_complete: code
            .verification_uri_complete
            .as_ref()
            .unwrap_or(&code.verification_uri)
            .to_string(),
        expires_in: expires_in(code),
    }
}

/// A failed login as the modal's event: the CLI's message and hint when it gave them.
pub fn failed_event(error: &ScribizError) -> LoginEvent {
    match error.failure() {
        Some(failure) => LoginEvent::Failed {
            message: match failure.kind {
                FailureKind::Cancelled => "Sign-in cancelled".to_string(),
                _ => failure.message.clone(),
            },
            hint: failure.hint.clone(),
        },
        None => LoginEvent::Failed {
            message: error.to_string(),
            hint: None,
        },
    }
}

/// The longest expiry shown, whatever the CLI says (a huge one would overflow a countdown).
const MAX_EXPIRY: u64 = 3600;

/// `expiresIn`, capped.
pub fn expires_in(code: &DeviceCode) -> u64 {
    code.expires_in.min(MAX_EXPIRY)
}

/// Who signed in: the email when the CLI says it, else the key id, else a plain word.
pub fn account(result: &LoginResult) -> String {
    result
        .user
        .as_ref()
        .and_then(|u| u.email.as_ref())
        .or(result.key_id.as_ref())
        .map(|t| t.to_string())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "your Scribiz account".to_string())
}

/// The login's result among a job's results.
pub fn login_result(results: &[ResultLine]) -> Option<&LoginResult> {
    results.iter().rev().find_map(|r| match r {
        ResultLine::Login(login) => Some(login),
        _ => None,
    })
}

/// A running login. Dropping it cancels the login.
pub struct LoginTask {
    pub events: mpsc::UnboundedReceiver<LoginEvent>,
    cancel: Canceller,
    task: JoinHandle<()>,
}

impl LoginTask {
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Wait until the CLI is gone (after the last event).
    pub async fn join(mut self) {
        let _ = (&mut self.task).await;
    }
}

impl Drop for LoginTask {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Start `scribiz login --json` (from `env`, normally Splice's own). Fails at once when no CLI
/// is found or it cannot start. Needs a Tokio runtime.
pub fn start(env: Env) -> Result<LoginTask, ScribizError> {
    let program = locate(&env)?;
    let mut job = Job::start(JobOptions {
        program,
        args: login_args(),
        limits: Limits::from_env(&env),
        env,
        cwd: None,
        media: Arc::new(NoHostMedia),
    })?;
    let cancel = job.canceller();
    let (tx, events) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        while let Some(line) = job.next().await {
            if let Line::DeviceCode(code) = line {
                let _ = tx.send(code_event(&code));
            }
        }
        let ended = job.finish().await;
        let event = match ended.outcome {
            Ok(outcome) => match login_result(&outcome.results) {
                Some(result) => LoginEvent::SignedIn {
                    account: account(result),
                },
                None => LoginEvent::Failed {
                    message: "the Scribiz CLI ended without a login result".into(),
                    hint: None,
                },
            },
            Err(error) => failed_event(&error),
        };
        let _ = tx.send(event);
    });
    Ok(LoginTask {
        events,
        cancel,
        task,
    })
}
