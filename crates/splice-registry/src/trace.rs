//! The server's request log: a span per request (method and path: no query, which may hold a
//! device login's code, and no headers, which hold tokens) and its response's status and
//! latency, at `info`; 5xx answers at `error`.

use axum::body::Body;
use axum::http::Request;
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::{DefaultOnResponse, TraceLayer};

type RequestSpan = fn(&Request<Body>) -> tracing::Span;

pub(crate) fn server_trace() -> TraceLayer<SharedClassifier<ServerErrorsAsFailures>, RequestSpan> {
    fn span(request: &Request<Body>) -> tracing::Span {
        let (method, path) = (request.method(), request.uri().path());
        // The target it had in the client's logging module: `SPLICE_LOG` filters are an interface.
        tracing::info_span!(target: "splice::logging", "request", %method, path)
    }
    TraceLayer::new_for_http()
        .make_span_with(span as RequestSpan)
        .on_response(DefaultOnResponse::new().level(tracing::Level::INFO))
}
