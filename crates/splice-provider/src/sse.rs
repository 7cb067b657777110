//! Server-sent events from a streaming HTTP response, with an idle timeout between events.

use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::{Event as SseEvent, Eventsource};
use futures_util::{Stream, StreamExt};

use super::ProviderError;

type BoxedEvents = Pin<Box<dyn Stream<Item = Result<SseEvent, String>> + Send>>;

pub struct SseReader {
    events: BoxedEvents,
    provider: &'static str,
    idle: Duration,
}

impl SseReader {
    pub fn new(response: reqwest::Response, provider: &'static str, idle: Duration) -> SseReader {
        let events = response
            .bytes_stream()
            .eventsource()
            .map(|item| item.map_err(|e| e.to_string()));
        SseReader {
            events: Box::pin(events),
            provider,
            idle,
        }
    }

    /// Events already in hand, read as if they had streamed: a gateway that answered a
    /// streaming request with one JSON body has its body restated as the stream it stands for.
    pub fn replay(data: Vec<String>, provider: &'static str, idle: Duration) -> SseReader {
        let events = data.into_iter().map(|data| {
            Ok(SseEvent {
                data,
                ..SseEvent::default()
            })
        });
        SseReader {
            events: Box::pin(futures_util::stream::iter(events)),
            provider,
            idle,
        }
    }

    /// The next event; `Ok(None)` when the server closed the stream.
    pub async fn next(&mut self) -> Result<Option<SseEvent>, ProviderError> {
        match tokio::time::timeout(self.idle, self.events.next()).await {
            Err(_) => Err(ProviderError::Timeout {
                provider: self.provider,
                waited: self.idle,
            }),
            Ok(None) => Ok(None),
            Ok(Some(Ok(event))) => Ok(Some(event)),
            Ok(Some(Err(message))) => Err(self.error(format!("connection lost: {message}"))),
        }
    }

    pub fn error(&self, message: impl Into<String>) -> ProviderError {
        ProviderError::Stream {
            provider: self.provider,
            message: message.into(),
        }
    }
}
