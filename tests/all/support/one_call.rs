//! One scripted tool call: the fake provider asks for it, then answers; the run must end on
//! its own within `HUNG`.

use std::process::Command;

use serde_json::Value;

use super::fake_provider::{FakeProvider, openai};
use super::process::{finish, spawn};
use super::{Outcome, Sandbox, stream_json};

/// One scripted call, then a closing answer; the run must end on its own.
pub fn one_call(sandbox: &Sandbox, name: &str, args: Value, flags: &[&str]) -> Outcome {
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", name, &[&args.to_string()]),
        openai::answer(&["done"]),
    ]);
    one_call_with(sandbox, &provider, flags, |_| {})
}

pub fn one_call_with(
    sandbox: &Sandbox,
    provider: &FakeProvider,
    flags: &[&str],
    adjust: impl FnOnce(&mut Command),
) -> Outcome {
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(flags).arg("do it");
    adjust(&mut command);
    let out = finish(spawn(command), "one tool call");
    out.assert_well_formed();
    out
}

pub fn result_of(out: &Outcome) -> (String, String) {
    let result = out.first("tool_result");
    (
        result["status"].as_str().unwrap_or_default().to_string(),
        result["output"].as_str().unwrap_or_default().to_string(),
    )
}
