//! The provider's events in the log. Their target is `splice::provider` whatever this crate is
//! called: `SPLICE_LOG=splice::provider=trace` is an interface (docs/user-guide.md#logs).

/// One HTTP request to a provider: its answer's status or why there was none, and how long
/// it took to come (`attempt` counts retries from 0).
pub(crate) fn request<E: std::fmt::Display>(
    provider: &str,
    model: &str,
    url: &str,
    attempt: u32,
    started: std::time::Instant,
    outcome: Result<reqwest::StatusCode, E>,
) {
    let (url, ms) = (splice_http::log_url(url), started.elapsed().as_millis());
    match outcome {
        Ok(status) if status.is_success() => {
            tracing::info!(target: "splice::provider", provider, model, url, attempt, status = status.as_u16(), ms, "request");
        }
        Ok(status) => {
            tracing::warn!(target: "splice::provider", provider, model, url, attempt, status = status.as_u16(), ms, "request failed");
        }
        Err(error) => {
            tracing::warn!(target: "splice::provider", provider, model, url, attempt, ms, %error, "request failed");
        }
    }
}
