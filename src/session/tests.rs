//! Sessions driven through operations alone, with no front end.

use std::sync::Mutex;

use super::*;
use crate::protocol::Event;

/// Records the session's own reports next to the runs' events.
#[derive(Default)]
struct Reports(Mutex<Vec<SessionEvent>>);

impl Sink for Reports {
    fn emit(&self, _run_id: &str, _event: &Event) {}
    fn session(&self, event: &SessionEvent) {
        if let Ok(mut reports) = self.0.lock() {
            reports.push(event.clone());
        }
    }
}

impl Reports {
    fn taken(&self) -> Vec<SessionEvent> {
        self.0.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// A turn that records its text and tier, then ends with 0 or, when `blocks`, waits for its
/// interrupt and ends with the interrupted code.
fn recording_turn(seen: Arc<Mutex<Vec<(String, Tier)>>>, blocks: &'static str) -> RunTurn {
    Arc::new(move |settings, _bus, input, stopped| {
        let seen = seen.clone();
        Box::pin(async move {
            let text = match input {
                Input::Prompt(prompt) => prompt.text,
                Input::Reading(reading) => reading.await.map(|p| p.text).unwrap_or_default(),
            };
            if let Ok(mut seen) = seen.lock() {
                seen.push((text.clone(), settings.tier));
            }
            if text == blocks {
                let _ = stopped.await;
                return crate::exit::INTERRUPTED;
            }
            0
        })
    })
}

fn session(turn: RunTurn) -> (Session, Arc<Reports>) {
    let reports = Arc::new(Reports::default());
    let frontend = Frontend {
        sinks: vec![reports.clone() as Arc<dyn Sink>],
        responder: None,
        turn,
    };
    (
        Session::spawn(crate::tui::snapshot_tests::settings(), frontend),
        reports,
    )
}

#[tokio::test]
async fn operations_apply_in_order_and_shutdown_waits_for_the_turn() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (session, reports) = session(recording_turn(seen.clone(), ""));
    session.submit(Op::UserTurn(Input::text("first")));
    // Queued behind the first turn, on the tier set after it was submitted.
    session.submit(Op::SetTier(Tier::Full));
    session.submit(Op::UserTurn(Input::text("second")));
    session.submit(Op::Shutdown);
    assert_eq!(session.ended().await, 0);
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].0, "first");
    assert_eq!(seen[1], ("second".to_string(), Tier::Full));
    assert_eq!(
        reports.taken(),
        vec![
            SessionEvent::TurnEnded { code: 0 },
            SessionEvent::TurnEnded { code: 0 }
        ]
    );
}

#[tokio::test]
async fn an_interrupt_stops_the_turn_and_drops_the_requests_behind_it() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (session, reports) = session(recording_turn(seen.clone(), "long"));
    session.submit(Op::UserTurn(Input::text("long")));
    session.submit(Op::UserTurn(Input::text("never")));
    // The turn has started once it recorded its text.
    while seen.lock().map(|s| s.is_empty()).unwrap_or(false) {
        tokio::task::yield_now().await;
    }
    session.submit(Op::Interrupt);
    session.submit(Op::Shutdown);
    assert_eq!(session.ended().await, crate::exit::INTERRUPTED);
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        reports.taken(),
        vec![
            SessionEvent::TurnDropped,
            SessionEvent::TurnEnded {
                code: crate::exit::INTERRUPTED
            }
        ]
    );
}
