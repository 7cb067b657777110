//! A device-code login as a stream of events, whoever issues the code: the registry's own
//! `/login` and the Scribiz CLI's `device_code` lines both become [`DeviceLoginEvent`]s, which
//! the TUI's login modal shows. The login runs in a task of its own; [`DeviceLogin`] holds its
//! events and ends it when dropped (Esc), so nothing keeps polling and nothing is saved after a
//! cancel.

use std::future::Future;

use tokio::sync::mpsc;

use splice_protocol::terminal::strip_controls;

/// What a login has come to. Strings may come from a server: [`DeviceLoginEvent::sanitized`]
/// is applied before any of it is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceLoginEvent {
    /// The code to approve, and where (RFC 8628 §3.2; Scribiz's `device_code` line).
    Code {
        user_code: String,
        verification_uri: String,
        verification_uri_complete: String,
        /// Seconds the code stays valid from when this event was made.
        expires_in: u64,
    },
    /// Approved; the credential is saved.
    SignedIn { account: String },
    /// Expired, denied, unreachable…: what happened and what to do about it.
    Failed {
        message: String,
        hint: Option<String>,
    },
}

/// One line of text with no escape sequences or controls, newlines included.
fn one_line(text: &str) -> String {
    strip_controls(&text.replace(['\n', '\r', '\t'], " "))
        .trim()
        .to_string()
}

impl DeviceLoginEvent {
    /// The event with escape sequences and control characters removed from every string
    /// (codes, links and the account on one line; a message and hint keep their newlines).
    pub fn sanitized(self) -> DeviceLoginEvent {
        match self {
            DeviceLoginEvent::Code {
                user_code,
                verification_uri,
                verification_uri_complete,
                expires_in,
            } => DeviceLoginEvent::Code {
                user_code: one_line(&user_code),
                verification_uri: one_line(&verification_uri),
                verification_uri_complete: one_line(&verification_uri_complete),
                expires_in,
            },
            DeviceLoginEvent::SignedIn { account } => DeviceLoginEvent::SignedIn {
                account: one_line(&account),
            },
            DeviceLoginEvent::Failed { message, hint } => DeviceLoginEvent::Failed {
                message: strip_controls(&message).trim().to_string(),
                hint: hint
                    .map(|h| strip_controls(&h).trim().to_string())
                    .filter(|h| !h.is_empty()),
            },
        }
    }

    /// Whether the login is over after this event.
    pub fn is_final(&self) -> bool {
        !matches!(self, DeviceLoginEvent::Code { .. })
    }
}

/// Where a login's producer sends its events. Sending to a login that was cancelled does
/// nothing.
#[derive(Debug, Clone)]
pub struct DeviceLoginSender(mpsc::UnboundedSender<DeviceLoginEvent>);

impl DeviceLoginSender {
    pub fn send(&self, event: DeviceLoginEvent) {
        let _ = self.0.send(event.sanitized());
    }
}

/// A login in progress: its events, and the task making them, aborted on drop.
#[derive(Debug)]
pub struct DeviceLogin {
    events: mpsc::UnboundedReceiver<DeviceLoginEvent>,
    task: Option<tokio::task::AbortHandle>,
}

impl DeviceLogin {
    /// Run `work` as a task on the current tokio runtime; it reports through the sender it is
    /// given. Must be called inside the runtime (the TUI's loop is).
    pub fn spawn<F>(work: impl FnOnce(DeviceLoginSender) -> F) -> DeviceLogin
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let (sender, mut login) = DeviceLogin::channel();
        login.task = Some(tokio::spawn(work(sender)).abort_handle());
        login
    }

    /// A login fed by hand (a producer that runs elsewhere, or a test).
    pub fn channel() -> (DeviceLoginSender, DeviceLogin) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            DeviceLoginSender(tx),
            DeviceLogin {
                events: rx,
                task: None,
            },
        )
    }

    /// The next event; `None` once the producer is gone.
    pub async fn next(&mut self) -> Option<DeviceLoginEvent> {
        self.events.recv().await
    }

    /// An event already waiting, if any (the TUI's tests deliver them by hand).
    pub fn try_next(&mut self) -> Option<DeviceLoginEvent> {
        self.events.try_recv().ok()
    }
}

impl Drop for DeviceLogin {
    fn drop(&mut self) {
        // Cancelled or done: the task stops at its next await (a poll's sleep or request).
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_strings_lose_escape_sequences_and_controls() {
        let event = DeviceLoginEvent::Code {
            user_code: "AB\u{1b}[2JCD".into(),
            verification_uri: "http://r/device\u{1b}]0;pwned\u{7}".into(),
            verification_uri_complete: "http://r/d?c=1\nsecond line".into(),
            expires_in: 60,
        }
        .sanitized();
        assert_eq!(
            event,
            DeviceLoginEvent::Code {
                user_code: "ABCD".into(),
                verification_uri: "http://r/device".into(),
                verification_uri_complete: "http://r/d?c=1 second line".into(),
                expires_in: 60,
            }
        );
        let failed = DeviceLoginEvent::Failed {
            message: "denied\u{1b}[31m".into(),
            hint: Some("\u{1b}[0m".into()),
        }
        .sanitized();
        assert_eq!(
            failed,
            DeviceLoginEvent::Failed {
                message: "denied".into(),
                hint: None
            }
        );
    }

    #[tokio::test]
    async fn dropping_the_login_aborts_its_task() {
        let (ended_tx, ended_rx) = tokio::sync::oneshot::channel::<()>();
        let login = DeviceLogin::spawn(|events| async move {
            // Held by the task: dropped (and so the receiver sees an error) when it ends.
            let _ended = ended_tx;
            events.send(DeviceLoginEvent::SignedIn {
                account: "never".into(),
            });
            std::future::pending::<()>().await;
        });
        drop(login);
        // A task that were not aborted would wait for ever; the guard only bounds a failure.
        let ended = tokio::time::timeout(std::time::Duration::from_secs(30), ended_rx).await;
        assert!(
            matches!(ended, Ok(Err(_))),
            "the task did not end: {ended:?}"
        );
    }
}
