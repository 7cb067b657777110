//! `Op::Login`: a device-code login to the package registry (`splice login`'s) or the
//! Scribiz CLI's own, started by the session; its events are reported as they come.

use thiserror::Error;

use crate::device_login::DeviceLogin;
use crate::sanitize::terminal::strip_controls;

/// Why a login does not start; the text is shown to the person.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LoginError {
    #[error(
        "no registry to sign in to: give one with /login URL, or set SPLICE_REGISTRY or \
         `registry` in the config file"
    )]
    NoRegistry,
    /// The registry's address or the Scribiz CLI refused; made safe for a terminal.
    #[error("{0}")]
    Refused(String),
}

/// What to sign in to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginTarget {
    /// The registry at this URL, else the configured one.
    Registry(Option<String>),
    /// The Scribiz CLI (`scribiz login --json`), which saves its credential itself.
    Scribiz,
}

/// Start the login: what it signs in to (shown to the person) and its events, or why it
/// cannot start.
pub(super) fn start(target: &LoginTarget) -> Result<(String, DeviceLogin), LoginError> {
    match target {
        LoginTarget::Registry(given) => {
            let url =
                crate::registry_client::registry_url(given.as_deref()).map_err(
                    |error| match error {
                        crate::registry_client::RegistryError::NoRegistry if given.is_none() => {
                            LoginError::NoRegistry
                        }
                        other => {
                            LoginError::Refused(strip_controls(&other.to_string()).into_owned())
                        }
                    },
                )?;
            let login = crate::registry_client::login::start(url.clone());
            Ok((format!("registry {url}"), login))
        }
        LoginTarget::Scribiz => {
            let mut task = crate::scribiz::login::start(crate::scribiz::launch::own_env())
                .map_err(|error| {
                    LoginError::Refused(strip_controls(&error.to_string()).into_owned())
                })?;
            // Dropping the login aborts this forwarder, which drops the task: the CLI is
            // cancelled and reaped.
            let login = DeviceLogin::spawn(|sender| async move {
                while let Some(event) = task.events.recv().await {
                    sender.send(event);
                }
            });
            Ok(("Scribiz".to_string(), login))
        }
    }
}
