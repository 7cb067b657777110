//! One server's life under the hub: connect within the startup timeout, then watch it until it
//! dies or the hub ends it, listing its tools again when it says they changed. The supervisor
//! alone owns the server's process, so every way out of it ends that process.

use std::sync::Weak;
use std::time::Duration;

use rmcp::service::{Peer, RoleClient};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::config::ServerEntry;
use super::connect::{self, Connection};
use super::hub::{HubNotice, HubOptions, Inner, Link, ServerState};
use super::listing;
use crate::sanitize::terminal::strip_controls;

/// One server's life: connect (within the startup timeout), then watch it until it dies or
/// the hub ends it; re-list its tools when it says they changed. It alone owns the process.
pub(super) async fn supervise(
    hub: Weak<Inner>,
    options: HubOptions,
    entry: ServerEntry,
    ready: oneshot::Sender<()>,
    mut end: oneshot::Receiver<()>,
) {
    let name = entry.name.clone();
    // Nor one whose command cannot be pinned: what it runs is known only when it runs.
    if let Some(reason) = crate::permissions::pinned::refused(&entry.pins) {
        if let Some(hub) = hub.upgrade() {
            hub.fail(
                &name,
                format!(
                    "not started: what it runs cannot be pinned ({reason}), so the model could \
                     change it; name its script by a path Splice can read"
                ),
            );
        }
        let _ = ready.send(());
        return;
    }
    // A project server starts only while the files it names hold what was approved.
    if let Some(file) = crate::permissions::pinned::changed(&entry.pins) {
        if let Some(hub) = hub.upgrade() {
            hub.fail(
                &name,
                format!(
                    "not started: {} changed since the server was approved, so it would not run \
                     what was approved; look at the change, then approve the server again in a \
                     new session",
                    file.display()
                ),
            );
        }
        let _ = ready.send(());
        return;
    }
    let connected = tokio::select! {
        connected = connect::connect(&entry, &options) => connected,
        // Ended while starting: dropping the connection attempt kills its process group.
        _ = &mut end => return,
    };
    let Connection {
        service,
        mut process,
        client,
        tools,
    } = match connected {
        Ok(connection) => connection,
        Err(error) => {
            if let Some(hub) = hub.upgrade() {
                hub.fail(&name, error.to_string());
            }
            let _ = ready.send(());
            return;
        }
    };
    let listing = listing::tools_of(&name, tools);
    let count = listing.tools.len();
    tracing::info!(server = name, tools = count, "mcp server ready");
    let peer = service.peer().clone();
    match hub.upgrade() {
        Some(hub) => hub.update(&name, |s| {
            s.state = ServerState::Ready;
            s.tools = listing.tools;
            s.last_error = listing.note;
            s.link = Some(Link {
                peer: peer.clone(),
                client: client.clone(),
            });
        }),
        None => return,
    }
    let _ = ready.send(());
    let closer = service.cancellation_token();
    let mut waiting = std::pin::pin!(service.waiting());
    let mut relisting: Option<JoinHandle<()>> = None;
    let mut closed = false;
    let failure = loop {
        tokio::select! {
            () = client.tools_changed.notified() => {
                if let Some(previous) = relisting.take() {
                    previous.abort();
                }
                relisting = Some(tokio::spawn(relist(
                    hub.clone(),
                    name.clone(),
                    peer.clone(),
                    options.startup_timeout,
                )));
            }
            how = async {
                match process.as_mut() {
                    Some(process) => process.exited().await,
                    None => std::future::pending().await,
                }
            } => break format!("the server's process ended: {how}"),
            _ = &mut waiting => {
                closed = true;
                // The connection closed; a process usually follows within a moment.
                let how = match process.as_mut() {
                    Some(process) => tokio::time::timeout(Duration::from_secs(1), process.exited())
                        .await
                        .map(|how| format!("the server's process ended: {how}"))
                        .unwrap_or_else(|_| "the server closed its stdout".into()),
                    None => "the server closed the connection".into(),
                };
                break how;
            }
            _ = &mut end => break String::new(),
        }
    };
    if let Some(task) = relisting {
        task.abort();
    }
    // Closing the connection drops the pipes, so a stdio server sees its stdin end.
    closer.cancel();
    if !closed {
        let _ = tokio::time::timeout(Duration::from_secs(1), &mut waiting).await;
    }
    let message = match process.as_mut() {
        Some(process) => {
            process.end().await;
            connect::with_stderr(failure, process)
        }
        None => failure,
    };
    // An empty failure is the hub ending it, not a failure.
    if !message.is_empty()
        && let Some(hub) = hub.upgrade()
    {
        hub.fail(&name, message);
    }
}

/// `tools/list` again after `notifications/tools/list_changed`.
async fn relist(hub: Weak<Inner>, name: String, peer: Peer<RoleClient>, timeout: Duration) {
    let listed = tokio::time::timeout(timeout, listing::list_bounded(&peer)).await;
    let Some(hub) = hub.upgrade() else {
        return;
    };
    match listed {
        Ok(Ok(tools)) => {
            let listing = listing::tools_of(&name, tools);
            hub.update(&name, |s| {
                if s.state == ServerState::Ready {
                    s.tools = listing.tools;
                    s.last_error = listing.note;
                }
            });
            let _ = hub.notices.send(HubNotice::ToolsChanged { server: name });
        }
        Ok(Err(e)) => hub.update(&name, |s| {
            let message = format!(
                "tools/list after list_changed failed: {}",
                strip_controls(&e.to_string())
            );
            s.last_error = Some(super::hub::cap_message(super::secrets::scrub(
                &s.redactor,
                message,
            )));
        }),
        Err(_) => hub.update(&name, |s| {
            s.last_error = Some("tools/list after list_changed did not answer in time".into());
        }),
    }
}
