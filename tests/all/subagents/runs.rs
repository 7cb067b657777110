//! Two subagents at once, their answers in the parent's next request and their own turns not;
//! no `agent` tool for a subagent; `agentId` and `parentToolCallId` on their events; a project
//! definition that writes, not approved, warned about and not offered.

use super::{SUBAGENT, calls, of_subagent, offered, support};

use serde_json::{Value, json};
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Sandbox, exec_json};

#[test]
fn two_subagents_run_at_once_and_only_their_answers_reach_the_parent() {
    let provider = FakeProvider::start(vec![
        Reply::when(
            "PARENT-REQUEST",
            calls(&[
                (
                    "call_a",
                    "agent",
                    json!({"description": "read notes", "prompt": "SUBTASK-ALPHA: what do the notes say?"}),
                ),
                (
                    "call_b",
                    "agent",
                    json!({"description": "count", "prompt": "SUBTASK-BETA: count to two"}),
                ),
            ]),
        ),
        // Each subagent's first request is answered only once the other's has arrived: only
        // subagents in flight together pass.
        Reply::when_after(
            "SUBTASK-ALPHA",
            "SUBTASK-BETA",
            openai::call_json("call_a1", "read_file", json!({"path": "notes.txt"})),
        ),
        Reply::when_after(
            "SUBTASK-BETA",
            "SUBTASK-ALPHA",
            openai::answer(&["BETA-ANSWER: one, two"]),
        ),
        Reply::when(
            "NOTES-CONTENT",
            openai::answer(&["ALPHA-ANSWER: the notes"]),
        ),
        Reply::when("ALPHA-ANSWER", openai::answer(&["Both helpers answered."])),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "NOTES-CONTENT\n");
    let out = exec_json(&sandbox, &provider, &["--tier", "light", "PARENT-REQUEST"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.remaining(), 0);
    assert_eq!(out.text(), "Both helpers answered.");

    let requests = provider.requests();
    let (sub, parent): (Vec<_>, Vec<_>) = requests.iter().partition(|r| of_subagent(r));
    assert_eq!(sub.len(), 3, "{requests:?}");
    assert_eq!(parent.len(), 2);
    // The parent's second request has both answers as the calls' results, and nothing of the
    // subagents' own turns (the file one of them read, their system prompt).
    let last = parent[1].body.to_string();
    assert!(
        last.contains("ALPHA-ANSWER") && last.contains("BETA-ANSWER"),
        "{last}"
    );
    assert!(!last.contains("NOTES-CONTENT"), "{last}");
    assert!(!last.contains(SUBAGENT), "{last}");
    assert!(!last.contains("call_a1"), "{last}");
    // A subagent starts fresh: the parent's request is not in its context.
    for request in &sub {
        let body = request.body.to_string();
        assert!(!body.contains("PARENT-REQUEST"), "{body}");
        // Depth 1: a subagent is not offered the agent tool; its tools are read-only.
        let mut tools = offered(request);
        tools.sort();
        assert_eq!(tools, ["list_files", "read_file", "search_files"]);
    }
    assert!(offered(parent[0]).contains(&"agent".to_string()));

    // The parent's calls are the run's own events; each subagent's events carry its id and
    // the call that started it.
    let agent_calls: Vec<&Value> = out
        .of_type("tool_call")
        .into_iter()
        .filter(|c| c["name"] == "agent")
        .collect();
    assert_eq!(agent_calls.len(), 2);
    for call in &agent_calls {
        assert!(call.get("agentId").is_none(), "{call}");
    }
    let results: Vec<&Value> = out
        .of_type("tool_result")
        .into_iter()
        .filter(|r| r["id"] == "call_a" || r["id"] == "call_b")
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["status"] == "ok"), "{results:?}");
    let scoped: Vec<&Value> = out
        .lines
        .iter()
        .filter(|l| l.get("agentId").is_some())
        .collect();
    let mut agents: Vec<(String, String)> = scoped
        .iter()
        .map(|l| {
            (
                l["agentId"].as_str().unwrap_or_default().to_string(),
                l["parentToolCallId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    agents.sort();
    agents.dedup();
    assert_eq!(agents.len(), 2, "{agents:?}");
    let parents: Vec<&str> = agents.iter().map(|(_, p)| p.as_str()).collect();
    assert!(parents.contains(&"call_a") && parents.contains(&"call_b"));
    assert!(agents.iter().all(|(a, _)| a.starts_with("agent_")));
    // The subagent's read, its usage and its prose are its own events.
    let read = out
        .of_type("tool_call")
        .into_iter()
        .find(|c| c["name"] == "read_file")
        .cloned()
        .expect("the subagent's read");
    assert!(read["agentId"].is_string(), "{read}");
    let alpha = agents
        .iter()
        .find(|(_, p)| p == "call_a")
        .map(|(a, _)| a.clone())
        .unwrap_or_default();
    assert_eq!(read["agentId"], alpha.as_str());
    let usage = out.of_type("usage");
    assert_eq!(usage.len(), 5, "every request is counted once");
    assert_eq!(usage.iter().filter(|u| u["agentId"].is_string()).count(), 3);
    let totals = &out.final_result()["usage"];
    assert_eq!(totals["requests"], 5, "{totals}");
    assert!(
        out.of_type("text")
            .iter()
            .all(|t| t.get("agentId").is_none()),
        "a subagent's prose is not the run's answer"
    );
}

#[test]
fn a_subagent_has_no_agent_tool_and_calling_it_is_an_error() {
    let provider = FakeProvider::start(vec![
        Reply::when(
            "PARENT-REQUEST",
            calls(&[(
                "call_a",
                "agent",
                json!({"description": "nest", "prompt": "SUBTASK-NEST"}),
            )]),
        ),
        Reply::when(
            "SUBTASK-NEST",
            calls(&[(
                "call_n",
                "agent",
                json!({"description": "deeper", "prompt": "SUBTASK-DEEPER"}),
            )]),
        ),
        Reply::when(
            "unknown tool",
            openai::answer(&["NEST-ANSWER: could not nest"]),
        ),
        Reply::when("NEST-ANSWER", openai::answer(&["Done."])),
    ]);
    let sandbox = Sandbox::new();
    let out = exec_json(&sandbox, &provider, &["--tier", "light", "PARENT-REQUEST"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.remaining(), 0);
    let requests = provider.requests();
    // The subagent's two requests, the parent's two: none of a deeper subagent.
    assert_eq!(requests.len(), 4);
    assert_eq!(requests.iter().filter(|r| of_subagent(r)).count(), 2);
    for request in requests.iter().filter(|r| of_subagent(r)) {
        assert!(!offered(request).contains(&"agent".to_string()));
    }
    let nested = out
        .of_type("tool_result")
        .into_iter()
        .find(|r| r["id"] == "call_n")
        .cloned()
        .expect("the nested call's result");
    assert_eq!(nested["status"], "error");
    assert_eq!(nested["output"], "unknown tool `agent`");
    assert!(nested["agentId"].is_string(), "{nested}");
    // Exactly one subagent ran: the nested call started none.
    let ids: std::collections::HashSet<&str> = out
        .lines
        .iter()
        .filter_map(|l| l["agentId"].as_str())
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
}

#[test]
fn an_unapproved_project_definition_that_writes_is_warned_about_and_not_offered() {
    let provider = FakeProvider::start(vec![
        Reply::when(
            "PARENT-REQUEST",
            calls(&[(
                "call_a",
                "agent",
                json!({"description": "fix", "prompt": "SUBTASK-FIX", "agent": "fixer"}),
            )]),
        ),
        Reply::when("nobody approved", openai::answer(&["Could not."])),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write(
        ".splice/agents/fixer.md",
        "---\ndescription: FIXER-DESCRIPTION fixes bugs\ntools: read_file, edit_file\n---\nFix it.\n",
    );
    sandbox.write(
        ".splice/agents/reviewer.md",
        "---\ndescription: REVIEWER-DESCRIPTION reviews code\n---\nReview.\n",
    );
    let out = exec_json(&sandbox, &provider, &["--tier", "light", "PARENT-REQUEST"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let warning = out
        .of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "agent_unapproved")
        .cloned()
        .expect("an agent_unapproved warning");
    assert!(
        warning["message"]
            .as_str()
            .is_some_and(|m| m.contains("`fixer`")),
        "{warning}"
    );
    // The read-only project definition is offered, described; the unapproved one is not.
    let requests = provider.requests();
    let description = requests[0].body["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["function"]["name"] == "agent"))
        .map(|t| t["function"]["description"].to_string())
        .unwrap_or_default();
    assert!(
        description.contains("REVIEWER-DESCRIPTION"),
        "{description}"
    );
    assert!(!description.contains("FIXER-DESCRIPTION"), "{description}");
    let result = out
        .of_type("tool_result")
        .into_iter()
        .find(|r| r["id"] == "call_a")
        .cloned()
        .expect("the call's result");
    assert_eq!(result["status"], "error");
    assert!(
        result["output"]
            .as_str()
            .is_some_and(|o| o.contains("nobody approved")),
        "{result}"
    );
    assert!(!requests.iter().any(of_subagent), "no subagent ran");
}

#[test]
fn a_definitions_model_is_the_subagents_and_its_usage_says_so() {
    let provider = FakeProvider::start(vec![
        Reply::when(
            "PARENT-REQUEST",
            calls(&[(
                "call_a",
                "agent",
                json!({"description": "quick", "prompt": "SUBTASK-QUICK", "agent": "quick"}),
            )]),
        ),
        Reply::when("SUBTASK-QUICK", openai::answer(&["QUICK-ANSWER"])),
        Reply::when("QUICK-ANSWER", openai::answer(&["Done."])),
    ]);
    let sandbox = Sandbox::new();
    super::user_agent(
        &sandbox,
        "quick",
        "---\ndescription: Quick answers\nmodel: gpt-4.1-mini\n---\nBe quick.\n",
    );
    let out = exec_json(
        &sandbox,
        &provider,
        &["--tier", "light", "--model", "gpt-4.1", "PARENT-REQUEST"],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let requests = provider.requests();
    let models: Vec<(bool, String)> = requests
        .iter()
        .map(|r| {
            (
                of_subagent(r),
                r.body["model"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        models,
        [
            (false, "gpt-4.1".to_string()),
            (true, "gpt-4.1-mini".to_string()),
            (false, "gpt-4.1".to_string())
        ]
    );
    let usage = out.of_type("usage");
    let sub: Vec<&&Value> = usage.iter().filter(|u| u["agentId"].is_string()).collect();
    assert_eq!(sub.len(), 1);
    assert_eq!(sub[0]["model"], "gpt-4.1-mini");
    assert_eq!(out.final_result()["usage"]["requests"], 3);
}

#[test]
fn text_output_prints_the_parents_answer_alone() {
    let provider = FakeProvider::start(vec![
        Reply::when(
            "PARENT-REQUEST",
            calls(&[(
                "call_a",
                "agent",
                json!({"description": "look", "prompt": "SUBTASK-LOOK"}),
            )]),
        ),
        Reply::when(
            "SUBTASK-LOOK",
            openai::answer(&["SUBAGENT-PROSE that is not the answer"]),
        ),
        Reply::when("SUBAGENT-PROSE", openai::answer(&["The parent's answer."])),
    ]);
    let sandbox = Sandbox::new();
    let out = support::exec_text(&sandbox, &provider, &["--tier", "light", "PARENT-REQUEST"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "The parent's answer.\n");
    assert!(!out.stderr.contains("SUBAGENT-PROSE"), "{}", out.stderr);
    assert!(out.stderr.contains("agent"), "{}", out.stderr);
}
