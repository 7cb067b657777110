//! Subagents: the `agent` tool of a light conversation. Requests of subagents that run at once
//! arrive in any order, so each subagent's replies are matched by its task's text.

use crate::support;

mod attacks;
mod limits;
mod runs;
mod tui;
mod writes;

use serde_json::Value;
use support::Sandbox;
use support::fake_provider::{Recorded, Reply, openai};

/// The text every subagent's system prompt starts with.
pub const SUBAGENT: &str = "You are a subagent of Splice";

/// One response calling each of `calls` (id, tool, arguments), as a provider streams them.
pub fn calls(calls: &[(&str, &str, Value)]) -> Reply {
    let mut events = Vec::new();
    for (index, (id, name, args)) in calls.iter().enumerate() {
        let index = index as u64;
        events.push(openai::tool_start(index, id, name));
        events.push(openai::tool_args(index, &args.to_string()));
    }
    events.push(openai::finish("tool_calls"));
    events.push(openai::usage(100, 20, 0));
    events.push(openai::done());
    Reply::Sse(events)
}

/// The names of the tools a request offered.
pub fn offered(request: &Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a request is a subagent's.
pub fn of_subagent(request: &Recorded) -> bool {
    request.body.to_string().contains(SUBAGENT)
}

/// An agent definition in the user's config directory (beside `SPLICE_CONFIG`).
pub fn user_agent(sandbox: &Sandbox, name: &str, text: &str) {
    let dir = sandbox.dir.path().join("agents");
    std::fs::create_dir_all(&dir).expect("create the user's agents folder");
    std::fs::write(dir.join(format!("{name}.md")), text).expect("write the definition");
}

/// The `tool_result` of call `id`.
pub fn result_of<'a>(out: &'a support::Outcome, id: &str) -> &'a Value {
    out.of_type("tool_result")
        .into_iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no result of {id}: {}", out.stdout))
}

/// Everything the session reported.
#[derive(Default)]
pub struct Seen(std::sync::Mutex<Vec<splice::session::SessionEvent>>);

impl splice::bus::Sink for Seen {
    fn emit(&self, _run_id: &str, _event: &splice::protocol::Event) {}
}

impl splice::session::ReportSink for Seen {
    fn session(&self, event: &splice::session::SessionEvent) {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(event.clone());
        }
    }
}

impl Seen {
    /// The `n`th session event matching `pick`, once it came (at most 20 s).
    pub async fn wait<T>(
        &self,
        n: usize,
        pick: impl Fn(&splice::session::SessionEvent) -> Option<T>,
    ) -> T {
        for _ in 0..2000 {
            let found: Vec<T> = self
                .0
                .lock()
                .map(|seen| seen.iter().filter_map(&pick).collect())
                .unwrap_or_default();
            if let Some(found) = found.into_iter().nth(n) {
                return found;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!(
            "event {n} never came: {:?}",
            self.0.lock().map(|s| s.clone())
        );
    }
}
