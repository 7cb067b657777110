//! Splice's side of one MCP connection for rmcp: who it says it is, where progress
//! notifications go (by progress token, to the call that asked), and the signal that a server's
//! tools changed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken,
    ProtocolVersion,
};
use rmcp::service::{NotificationContext, RoleClient};
use tokio::sync::Notify;

use super::hub::Progress;
use crate::sanitize::terminal::strip_controls;

/// Longest progress detail passed on.
const MAX_DETAIL_CHARS: usize = 300;

pub type OnProgress = Arc<dyn Fn(Progress) + Send + Sync>;

#[derive(Clone, Default)]
pub struct Client {
    routes: Arc<Mutex<HashMap<ProgressToken, OnProgress>>>,
    /// Woken by `notifications/tools/list_changed`.
    pub tools_changed: Arc<Notify>,
}

impl Client {
    /// Route this token's notifications to `on_progress` until the guard is dropped.
    pub fn route(&self, token: ProgressToken, on_progress: OnProgress) -> Route {
        self.lock().insert(token.clone(), on_progress);
        Route {
            client: self.clone(),
            token,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, OnProgress>> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Ends a progress route when the call is over (or dropped).
pub struct Route {
    client: Client,
    token: ProgressToken,
}

impl Drop for Route {
    fn drop(&mut self) {
        self.client.lock().remove(&self.token);
    }
}

/// A progress notification as Splice passes it on: a fraction only when a positive total was
/// given (clamped to 0..=1), the message without terminal controls and capped.
pub fn progress(params: &ProgressNotificationParam) -> Progress {
    let fraction = params
        .total
        .filter(|t| t.is_finite() && *t > 0.0)
        .map(|total| (params.progress / total).clamp(0.0, 1.0))
        .filter(|f| f.is_finite());
    let detail = params
        .message
        .as_deref()
        .map(|m| {
            strip_controls(m)
                .chars()
                .take(MAX_DETAIL_CHARS)
                .collect::<String>()
        })
        .filter(|m| !m.trim().is_empty());
    Progress { fraction, detail }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        // The last version with `initialize`: the handshake every server still speaks.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("splice", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let route = self.lock().get(&params.progress_token).cloned();
        if let Some(on_progress) = route {
            on_progress(progress(&params));
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> ProgressNotificationParam {
        serde_json::from_value(serde_json::json!({
            "progressToken": 1, "progress": progress, "total": total, "message": message
        }))
        .expect("parse")
    }

    #[test]
    fn fractions_need_a_positive_total_and_details_lose_controls() {
        assert_eq!(
            progress(&params(2.0, Some(4.0), Some("\u{1b}[31mhalf"))),
            Progress {
                fraction: Some(0.5),
                detail: Some("half".into())
            }
        );
        assert_eq!(progress(&params(2.0, None, None)).fraction, None);
        assert_eq!(progress(&params(2.0, Some(0.0), None)).fraction, None);
        assert_eq!(progress(&params(9.0, Some(4.0), None)).fraction, Some(1.0));
    }
}
