//! What a turn runs: the run lifecycle (`run::execute`) on the session's settings, or in tests
//! something that stands in for it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::oneshot;

use super::Input;
use crate::bus::Bus;
use crate::exit::Exit;
use crate::run;
use crate::settings::RunSettings;

/// A turn in progress: its exit code when it ends.
pub type RunFuture = Pin<Box<dyn Future<Output = Exit> + Send>>;

/// Starts a turn of `input` on `bus`; it ends early when `stop` receives.
pub type RunTurn =
    Arc<dyn Fn(RunSettings, Bus, Input, oneshot::Receiver<()>) -> RunFuture + Send + Sync>;

/// The real turn: `run::execute`.
pub fn execute_turn() -> RunTurn {
    Arc::new(|settings, bus, input, stopped| {
        Box::pin(async move {
            // The run's hooks travel on its bus: every tool path and stage fires them.
            let bus = crate::hooks::attach(&settings, bus);
            // Servers of the session still starting are waited for here, in the turn's task
            // (an interrupt ends the wait): their tools are offered from the first request.
            let hub = settings.mcp.hub.clone();
            let request = async {
                if let Some(hub) = hub {
                    hub.ready().await;
                }
                let prompt = match input {
                    Input::Prompt(prompt) => prompt,
                    Input::Reading(reading) => reading.await?,
                };
                // A custom command is expanded once its text is known, in the run (its
                // commands' events are the run's). Boxed: running a command is a tool call,
                // whose large future must not swell every run's, on the stack of a debug build.
                let request = Box::pin(super::slash::prepare(&settings, &bus, prompt)).await?;
                // Hooks see the request as it will be sent: a custom command expanded.
                Box::pin(crate::hooks::before_request(&settings, &bus, request)).await
            };
            let stop = async {
                // A dropped sender is not an interrupt.
                if stopped.await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            run::execute(&settings, &bus, request, stop).await
        })
    })
}
