//! `splice scribiz login [--json]`: runs `scribiz login --json`. With `--json`, the (cleaned)
//! `device_code` line, then the `result` line (exit 0) or an `error` line (exit 3 for an expired
//! or denied code), the shapes `splice login --json` prints. Without it, the code and link on
//! stderr for a person, then `Signed in as …` on stdout. A cancel (SIGINT, SIGTERM, SIGHUP)
//! cancels the CLI and exits 130.

use std::future::Future;
use std::io::Write;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::error::{FailureKind, ScribizError};
use super::job::{Job, JobOptions};
use super::launch::{Env, Limits, locate, login_args};
use super::login::{account, expires_in, login_result};
use super::media::NoHostMedia;
use super::protocol::{DeviceCode, Line, LoginResult};
use crate::exit::Exit;

fn line(out: &mut dyn Write, value: &Value) {
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

pub async fn login(
    env: Env,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
    interrupt: impl Future<Output = ()>,
) -> Exit {
    let started = locate(&env).and_then(|program| {
        Job::start(JobOptions {
            program,
            args: login_args(),
            limits: Limits::from_env(&env),
            env,
            cwd: None,
            media: Arc::new(NoHostMedia),
        })
    });
    let mut job = match started {
        Ok(job) => job,
        Err(error) => return failed(&error, as_json, out, err),
    };
    tokio::pin!(interrupt);
    let mut interrupted = false;
    loop {
        tokio::select! {
            () = &mut interrupt, if !interrupted => {
                interrupted = true;
                job.cancel();
            }
            next = job.next() => match next {
                Some(Line::DeviceCode(code)) => show_code(&code, as_json, out, err),
                Some(_) => {}
                None => break,
            },
        }
    }
    let ended = job.finish().await;
    match ended.outcome {
        Ok(outcome) => match login_result(&outcome.results) {
            Some(result) => {
                signed_in(result, as_json, out);
                Exit::Success
            }
            None => failed(
                &ScribizError::Protocol("it ended without a login result".into()),
                as_json,
                out,
                err,
            ),
        },
        Err(error) => {
            for log in ended.logs.iter().rev().take(20).rev() {
                let _ = writeln!(err, "scribiz: {log}");
            }
            failed(&error, as_json, out, err)
        }
    }
}

fn show_code(code: &DeviceCode, as_json: bool, out: &mut dyn Write, err: &mut dyn Write) {
    let complete = code
        .verification_uri_complete
        .as_ref()
        .unwrap_or(&code.verification_uri);
    if as_json {
        let mut value = json!({
            "type": "device_code",
            "userCode": code.user_code.as_str(),
            "verificationUri": code.verification_uri.as_str(),
            "verificationUriComplete": complete.as_str(),
            "expiresIn": expires_in(code),
        });
        if let Some(interval) = code.interval {
            value["interval"] = json!(interval);
        }
        line(out, &value);
    } else {
        let _ = writeln!(
            err,
            "To sign in to Scribiz, open {complete}\n(or open {} and enter the code {})\nWaiting \
             for approval; the code expires in {} s.",
            code.verification_uri,
            code.user_code,
            expires_in(code)
        );
        let _ = err.flush();
    }
}

fn signed_in(result: &LoginResult, as_json: bool, out: &mut dyn Write) {
    if !as_json {
        let _ = writeln!(out, "Signed in as {}", account(result));
        return;
    }
    let mut value = Map::new();
    value.insert("type".into(), json!("result"));
    value.insert("kind".into(), json!("login"));
    value.insert("saved".into(), json!(result.saved.unwrap_or(false)));
    if let Some(path) = &result.config_path {
        value.insert("configPath".into(), json!(path.as_str()));
    }
    if let Some(key_id) = &result.key_id {
        value.insert("keyId".into(), json!(key_id.as_str()));
    }
    if let Some(email) = result.user.as_ref().and_then(|u| u.email.as_ref()) {
        value.insert("user".into(), json!({"email": email.as_str()}));
    }
    line(out, &Value::Object(value));
}

/// The failure on stderr (and as an `error` line with `--json`); its exit code.
fn failed(error: &ScribizError, as_json: bool, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let code = exit_code(error);
    if as_json {
        line(out, &json!({"type": "error", "error": error_body(error)}));
    }
    let _ = writeln!(err, "splice: {error}");
    code
}

/// Splice's exit code: 3 for a credential problem (an expired or denied code among them), 130
/// for a cancel, 1 for everything else (no CLI found included).
pub fn exit_code(error: &ScribizError) -> Exit {
    match error.failure().map(|f| f.kind) {
        Some(FailureKind::Credentials) => Exit::Provider,
        Some(FailureKind::Cancelled) => Exit::Interrupted,
        _ => Exit::Failed,
    }
}

/// The `error` object: the CLI's own fields when it ended with one, else Splice's code.
pub fn error_body(error: &ScribizError) -> Value {
    let Some(failure) = error.failure() else {
        let code = match error {
            ScribizError::NotFound(_) => "SCRIBIZ_MISSING",
            ScribizError::Spawn(_) => "SCRIBIZ_START_FAILED",
            ScribizError::UnsupportedProtocol { .. } => "SCRIBIZ_PROTOCOL_UNSUPPORTED",
            ScribizError::Stalled { .. } => "SCRIBIZ_STALLED",
            ScribizError::Protocol(_) | ScribizError::Failed(_) => "SCRIBIZ_PROTOCOL",
        };
        return json!({"code": code, "message": error.to_string(), "retryable": false,
            "scope": "job"});
    };
    let mut body = Map::new();
    body.insert(
        "code".into(),
        json!(failure.code.clone().unwrap_or_else(|| "FAILED".into())),
    );
    body.insert("message".into(), json!(failure.message));
    body.insert(
        "retryable".into(),
        json!(failure.retryable.unwrap_or(false)),
    );
    let optional = [
        ("scope", failure.scope.clone().map(Value::from)),
        ("stage", failure.stage.clone().map(Value::from)),
        ("hint", failure.hint.clone().map(Value::from)),
        ("status", failure.status.map(Value::from)),
        ("retryAfterMs", failure.retry_after_ms.map(Value::from)),
        ("exitCode", failure.exit_code.map(Value::from)),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            body.insert(key.into(), value);
        }
    }
    Value::Object(body)
}
