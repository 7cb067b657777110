//! `SessionStart` and `UserPromptSubmit`: their stdout reaches the model's request; a block
//! stops the request before anything is sent.

use super::{exec, hook, hook_events, merged, script, sent_text, user_hooks};
use crate::support::Sandbox;
use crate::support::fake_provider::{FakeProvider, openai};

#[test]
fn prompt_and_session_context_reach_the_models_request() {
    let sandbox = Sandbox::new();
    let rules = script(
        &sandbox,
        "rules.sh",
        "#!/bin/sh\ncat > /dev/null\necho 'Project rule: indent with tabs.'\n",
    );
    let start = script(
        &sandbox,
        "start.py",
        "#!/usr/bin/env python3\nimport json, sys\ndata = json.load(sys.stdin)\n\
         print(json.dumps({'hookSpecificOutput': {'hookEventName': 'SessionStart',\n\
         'additionalContext': 'session began: ' + data['source']}}))\n",
    );
    user_hooks(
        &sandbox,
        merged(&[
            hook("UserPromptSubmit", "", &rules.display().to_string()),
            hook("SessionStart", "startup", &start.display().to_string()),
        ]),
    );
    let provider = FakeProvider::start(vec![openai::answer(&["Noted."])]);
    let out = exec(&sandbox, &provider, &["format the code"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let text = sent_text(&provider.requests()[0]);
    assert!(text.contains("format the code"), "{text}");
    assert!(text.contains("Project rule: indent with tabs."), "{text}");
    assert!(text.contains("session began: startup"), "{text}");
    assert_eq!(
        hook_events(&out, "UserPromptSubmit")[0]["decision"],
        "context"
    );
}

#[test]
fn a_blocked_prompt_is_not_sent_and_the_person_is_told() {
    let sandbox = Sandbox::new();
    let guard = script(
        &sandbox,
        "guard.py",
        "#!/usr/bin/env python3\nimport json, sys\n\
         if 'password' in json.load(sys.stdin)['prompt']:\n\
         \x20   print('prompts must not hold passwords', file=sys.stderr)\n\
         \x20   sys.exit(2)\n",
    );
    user_hooks(
        &sandbox,
        hook("UserPromptSubmit", "", &guard.display().to_string()),
    );
    let provider = FakeProvider::start(vec![openai::answer(&["Never."])]);
    let out = exec(&sandbox, &provider, &["my password is hunter2"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let error = out.first("error");
    assert_eq!(error["code"], "hook_blocked");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("prompts must not hold passwords"),
        "{error}"
    );
    assert!(provider.requests().is_empty(), "the request was sent");
}
