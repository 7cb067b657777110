//! The lines `scribiz --json` prints (docs/scribiz.md), decoded by `type`. Unknown
//! types and unknown fields are ignored, as the document asks. Every string that can reach an
//! event, the model or the screen is a [`Text`], which strips escape sequences and control
//! characters as it is decoded; JSON values carried whole (`context`, `data`, `breakdown`…) are
//! cleaned the same way, keys and strings alike. The two exceptions hold paths Splice must open
//! exactly as written (a `result`'s `path`, a `request`'s `args`): they are raw and must go
//! through `strip_controls` before anything shows them.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::sanitize::terminal::strip_controls;

/// The only protocol version Splice speaks.
pub const PROTOCOL: u64 = 1;

/// Untrusted text from the CLI, without escape sequences or control characters (newlines and
/// tabs stay).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text(String);

impl Text {
    pub fn new(raw: &str) -> Text {
        Text(strip_controls(raw).into_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
        let raw = String::deserialize(deserializer)?;
        Ok(Text::new(&raw))
    }
}

/// A JSON value with every string and key cleaned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CleanValue(pub Value);

impl<'de> Deserialize<'de> for CleanValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<CleanValue, D::Error> {
        Ok(CleanValue(clean_value(Value::deserialize(deserializer)?)))
    }
}

/// `value` with escape sequences and controls stripped from every string and key.
pub fn clean_value(value: Value) -> Value {
    match value {
        Value::String(text) => Value::String(strip_controls(&text).into_owned()),
        Value::Array(items) => Value::Array(items.into_iter().map(clean_value).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, inner)| (strip_controls(&key).into_owned(), clean_value(inner)))
                .collect(),
        ),
        other => other,
    }
}

/// One line of the protocol.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type")]
pub enum Line {
    #[serde(rename = "hello")]
    Hello(Hello),
    #[serde(rename = "start")]
    Start(Start),
    #[serde(rename = "plan")]
    Plan(Plan),
    #[serde(rename = "stage")]
    Stage(Stage),
    #[serde(rename = "progress")]
    Progress(Progress),
    #[serde(rename = "chunk")]
    Chunk(Chunk),
    #[serde(rename = "retry")]
    Retry(Retry),
    #[serde(rename = "warning")]
    Warning(Warning),
    #[serde(rename = "partial")]
    Partial(Partial),
    #[serde(rename = "usage")]
    Usage(Usage),
    #[serde(rename = "cache")]
    Cache(Cache),
    #[serde(rename = "done")]
    Done(Done),
    #[serde(rename = "heartbeat")]
    Heartbeat(Heartbeat),
    #[serde(rename = "device_code")]
    DeviceCode(DeviceCode),
    #[serde(rename = "item")]
    Item(Item),
    #[serde(rename = "summary")]
    Summary(Summary),
    #[serde(rename = "result")]
    Result(ResultLine),
    #[serde(rename = "error")]
    Error(ErrorLine),
    #[serde(rename = "request")]
    Request(Request),
    #[serde(rename = "request-cancel")]
    RequestCancel(RequestCancel),
    /// A type this version of Splice does not know: ignored.
    #[serde(other)]
    Unknown,
}

impl Line {
    /// The line's `type`, as the protocol spells it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Line::Hello(_) => "hello",
            Line::Start(_) => "start",
            Line::Plan(_) => "plan",
            Line::Stage(_) => "stage",
            Line::Progress(_) => "progress",
            Line::Chunk(_) => "chunk",
            Line::Retry(_) => "retry",
            Line::Warning(_) => "warning",
            Line::Partial(_) => "partial",
            Line::Usage(_) => "usage",
            Line::Cache(_) => "cache",
            Line::Done(_) => "done",
            Line::Heartbeat(_) => "heartbeat",
            Line::DeviceCode(_) => "device_code",
            Line::Item(_) => "item",
            Line::Summary(_) => "summary",
            Line::Result(_) => "result",
            Line::Error(_) => "error",
            Line::Request(_) => "request",
            Line::RequestCancel(_) => "request-cancel",
            Line::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    pub protocol: u64,
    pub engine: Option<Text>,
    pub cli: Option<Text>,
    pub pid: Option<u64>,
    pub command: Option<Text>,
    #[serde(default)]
    pub capabilities: Vec<Text>,
    #[serde(default)]
    pub media_prep: Vec<Text>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Start {
    pub input: Option<Text>,
    pub mode: Option<Text>,
    pub run_id: Option<Text>,
    pub t: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    #[serde(default)]
    pub tiers: Vec<Text>,
    pub reason: Option<Text>,
    pub estimate: Option<Estimate>,
    pub run_id: Option<Text>,
    pub t: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    pub minutes: Option<f64>,
    pub usd_low: Option<f64>,
    pub usd_high: Option<f64>,
    pub duration_seconds: Option<f64>,
    pub priced_at: Option<Text>,
    #[serde(default)]
    pub tiers: Vec<Text>,
    pub breakdown: Option<CleanValue>,
}

/// `stage.status`; a status this version does not know is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageStatus {
    Start,
    Done,
    Skipped,
    Failed,
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stage {
    pub stage: Text,
    pub status: StageStatus,
    pub detail: Option<Text>,
    pub ms: Option<f64>,
    pub run_id: Option<Text>,
    pub t: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    pub stage: Option<Text>,
    /// 0 to 1, or absent/`null` when unknown.
    pub fraction: Option<f64>,
    pub done: Option<f64>,
    pub total: Option<f64>,
    pub unit: Option<Text>,
    pub eta_seconds: Option<f64>,
    pub run_id: Option<Text>,
    pub t: Option<f64>,
}

/// `chunk.status`; a status this version does not know is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkStatus {
    Queued,
    Uploading,
    Transcribing,
    Verifying,
    Retry,
    Repairing,
    Done,
    Failed,
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Chunk {
    pub index: Option<u64>,
    pub total: Option<u64>,
    pub status: ChunkStatus,
    pub attempt: Option<u64>,
    pub start_seconds: Option<f64>,
    pub duration_seconds: Option<f64>,
    pub words: Option<u64>,
    pub run_id: Option<Text>,
    pub t: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Retry {
    pub stage: Option<Text>,
    pub attempt: Option<u64>,
    pub max_attempts: Option<u64>,
    pub delay_ms: Option<f64>,
    pub code: Option<Text>,
    pub message: Option<Text>,
    pub run_id: Option<Text>,
    pub t: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Warning {
    pub code: Option<Text>,
    pub message: Option<Text>,
    pub data: Option<CleanValue>,
    pub run_id: Option<Text>,
    pub t: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Partial {
    pub covered_seconds: Option<f64>,
    pub words: Option<u64>,
    pub run_id: Option<Text>,
    pub t: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub delta: Option<UsageDelta>,
    pub total: Option<UsageTotal>,
    pub run_id: Option<Text>,
    pub t: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageDelta {
    pub audio_seconds: Option<f64>,
    pub video_seconds: Option<f64>,
    pub model: Option<Text>,
    pub stage: Option<Text>,
    pub tokens: Option<Tokens>,
    /// What this model call cost, in US dollars.
    pub usd: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotal {
    pub audio_seconds: Option<f64>,
    pub video_seconds: Option<f64>,
    pub tokens: Option<Tokens>,
    pub usd_estimate: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    pub audio_in: Option<u64>,
    #[serde(rename = "in")]
    pub input: Option<u64>,
    pub out: Option<u64>,
    pub thought: Option<u64>,
    pub video_in: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cache {
    pub layer: Option<Text>,
    pub hit: Option<bool>,
    pub run_id: Option<Text>,
    pub t: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Done {
    pub summary: Option<RunSummary>,
    pub run_id: Option<Text>,
    pub t: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub words: Option<u64>,
    pub duration_seconds: Option<f64>,
    pub usd: Option<f64>,
    pub ms: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Heartbeat {
    /// Milliseconds since `hello`.
    pub t: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCode {
    pub user_code: Text,
    pub verification_uri: Text,
    pub verification_uri_complete: Option<Text>,
    /// Seconds.
    pub expires_in: u64,
    /// Seconds.
    pub interval: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    pub index: Option<u64>,
    pub input: Option<Text>,
    pub total: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub total: Option<u64>,
    pub succeeded: Option<u64>,
    pub failed: Option<u64>,
    pub stopped: Option<bool>,
}

/// A `result` line, by its `kind`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind")]
pub enum ResultLine {
    #[serde(rename = "context")]
    Context(ContextResult),
    #[serde(rename = "ask")]
    Ask(AskResult),
    #[serde(rename = "login")]
    Login(LoginResult),
    #[serde(rename = "whoami")]
    Whoami(WhoamiResult),
    #[serde(rename = "doctor")]
    Doctor(DoctorResult),
    #[serde(rename = "jit")]
    Jit(DoctorResult),
    #[serde(rename = "format")]
    Format(FormatResult),
    #[serde(rename = "setup")]
    Setup(SetupResult),
    #[serde(rename = "logout")]
    Logout(SetupResult),
    /// A kind this version does not know.
    #[serde(other)]
    Other,
}

/// `context` inline (a single input, at most 256 KB), or `path` and `bytes`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextResult {
    pub context: Option<CleanValue>,
    /// Raw: the file to read (and, when it is an announced temp file, to delete).
    pub path: Option<PathBuf>,
    pub bytes: Option<u64>,
    /// The input's place in a batch.
    pub index: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AskResult {
    pub answer: Option<Text>,
    pub citations: Option<CleanValue>,
}

/// A login's result. A `key` (with `--no-config`) is never read: Splice does not pass that flag,
/// and a secret it does not keep cannot leak from it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoginResult {
    pub saved: Option<bool>,
    pub config_path: Option<Text>,
    pub key_id: Option<Text>,
    pub user: Option<User>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct User {
    pub email: Option<Text>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WhoamiResult {
    pub me: Option<CleanValue>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct DoctorResult {
    pub report: Option<CleanValue>,
    pub jit: Option<CleanValue>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FormatResult {
    pub format: Option<Text>,
    pub text: Option<Text>,
    /// Raw: the file to read.
    pub path: Option<PathBuf>,
    pub bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetupResult {
    pub config_path: Option<Text>,
    pub verified: Option<bool>,
    #[serde(default)]
    pub removed: Vec<Text>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorLine {
    pub error: ErrorBody,
    /// The input's place in a batch.
    pub index: Option<u64>,
    pub run_id: Option<Text>,
    pub t: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    pub code: Text,
    #[serde(default)]
    pub message: Text,
    pub retryable: Option<bool>,
    pub scope: Option<Text>,
    pub stage: Option<Text>,
    pub hint: Option<Text>,
    pub status: Option<u64>,
    pub retry_after_ms: Option<u64>,
}

/// The CLI asks the host to prepare media (`--media-prep stdio`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Request {
    pub id: u64,
    pub op: String,
    /// Raw: holds the paths to read and write.
    #[serde(default)]
    pub args: Value,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RequestCancel {
    pub id: u64,
}

/// Why a line was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Malformed {
    NotJson,
    NoType,
    /// A known type whose fields do not fit (named, with serde's reason).
    BadFields(String),
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Malformed::NotJson => f.write_str("not a JSON object"),
            Malformed::NoType => f.write_str("a JSON object without a string `type`"),
            Malformed::BadFields(why) => write!(f, "{}", strip_controls(why)),
        }
    }
}

/// One line (without its `\n`) decoded. The line splitter splits on `\n` only, so a U+2028
/// inside a string (escaped or not) stays inside its line.
pub fn decode(line: &[u8]) -> Result<Line, Malformed> {
    let value: Value = serde_json::from_slice(line).map_err(|_| Malformed::NotJson)?;
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Err(if value.is_object() {
            Malformed::NoType
        } else {
            Malformed::NotJson
        });
    };
    let kind = kind.to_string();
    serde_json::from_value(value)
        .map_err(|e| Malformed::BadFields(format!("a `{kind}` line that does not fit: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Line {
        decode(text.as_bytes()).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn the_documented_run_decodes_line_by_line() {
        let hello = line(
            r#"{"capabilities":["captions","audio"],"cli":"0.1.1","engine":"0.1.0","mediaPrep":["ffmpeg"],"pid":14185,"protocol":1,"type":"hello","command":"transcribe"}"#,
        );
        let Line::Hello(hello) = hello else {
            panic!("{hello:?}")
        };
        assert_eq!(hello.protocol, 1);
        assert_eq!(hello.media_prep, vec![Text::new("ffmpeg")]);
        assert_eq!(hello.command, Some(Text::new("transcribe")));

        let plan = line(
            r#"{"estimate":{"breakdown":{"audio":{"usdHigh":0.001396,"usdLow":0.001032}},"durationSeconds":12.120726,"minutes":0.2,"pricedAt":"2026-10-04","tiers":["audio","synthesis"],"usdHigh":0.009942,"usdLow":0.00274},"reason":"Listening to the audio.","tiers":["audio","synthesis"],"type":"plan","runId":"a5912da2","t":40}"#,
        );
        let Line::Plan(plan) = plan else {
            panic!("{plan:?}")
        };
        let estimate = plan.estimate.unwrap_or_else(|| panic!("no estimate"));
        assert_eq!(estimate.usd_high, Some(0.009942));
        assert_eq!(plan.tiers.len(), 2);
        assert_eq!(plan.run_id, Some(Text::new("a5912da2")));

        let usage = line(
            r#"{"delta":{"audioSeconds":12.16,"model":"gemini-3.5-transcribe","tokens":{"audioIn":304,"in":305,"out":40,"thought":0,"videoIn":0},"usd":0.00109,"videoSeconds":0,"stage":"transcribe"},"total":{"audioSeconds":12.16,"tokens":{"audioIn":304,"in":305,"out":40,"thought":0,"videoIn":0},"usdEstimate":0.00109,"videoSeconds":0},"type":"usage","runId":"a5912da2","t":3470}"#,
        );
        let Line::Usage(usage) = usage else {
            panic!("{usage:?}")
        };
        let delta = usage.delta.unwrap_or_else(|| panic!("no delta"));
        assert_eq!(delta.usd, Some(0.00109));
        assert_eq!(delta.tokens.and_then(|t| t.input), Some(305));

        let chunk = line(
            r#"{"attempt":1,"durationSeconds":12.121,"index":0,"startSeconds":0,"status":"uploading","total":1,"type":"chunk","runId":"a5912da2","t":167}"#,
        );
        assert!(matches!(
            chunk,
            Line::Chunk(Chunk {
                status: ChunkStatus::Uploading,
                index: Some(0),
                ..
            })
        ));
        let progress = line(r#"{"fraction":null,"stage":"extract","type":"progress","t":1}"#);
        assert!(matches!(
            progress,
            Line::Progress(Progress { fraction: None, .. })
        ));
        let stage =
            line(r#"{"detail":"1 chunk","ms":15,"stage":"chunk","status":"done","type":"stage"}"#);
        assert!(matches!(
            stage,
            Line::Stage(Stage {
                status: StageStatus::Done,
                ..
            })
        ));
        let result = line(r#"{"type":"result","bytes":5009,"kind":"context","path":"/r.json"}"#);
        assert!(matches!(
            result,
            Line::Result(ResultLine::Context(ContextResult {
                bytes: Some(5009),
                ..
            }))
        ));
    }

    #[test]
    fn every_result_kind_decodes() {
        let cases = [
            r#"{"type":"result","kind":"context","context":{"schema":1}}"#,
            r#"{"type":"result","kind":"ask","answer":"yes","citations":[]}"#,
            r#"{"type":"result","kind":"login","saved":true,"configPath":"/c","keyId":"k","user":{"email":"a@b"}}"#,
            r#"{"type":"result","kind":"whoami","me":{"email":"a@b"}}"#,
            r#"{"type":"result","kind":"doctor","report":{}}"#,
            r#"{"type":"result","kind":"jit","jit":{}}"#,
            r#"{"type":"result","kind":"format","format":"text","text":"hi"}"#,
            r#"{"type":"result","kind":"setup","configPath":"/c","verified":true}"#,
            r#"{"type":"result","kind":"logout","removed":["Scribiz login"]}"#,
            r#"{"type":"result","kind":"future-kind","x":1}"#,
        ];
        let decoded: Vec<Line> = cases.iter().map(|c| line(c)).collect();
        assert!(matches!(decoded[0], Line::Result(ResultLine::Context(_))));
        assert!(matches!(decoded[1], Line::Result(ResultLine::Ask(_))));
        assert!(matches!(decoded[2], Line::Result(ResultLine::Login(_))));
        assert!(matches!(decoded[3], Line::Result(ResultLine::Whoami(_))));
        assert!(matches!(decoded[4], Line::Result(ResultLine::Doctor(_))));
        assert!(matches!(decoded[5], Line::Result(ResultLine::Jit(_))));
        assert!(matches!(decoded[6], Line::Result(ResultLine::Format(_))));
        assert!(matches!(decoded[7], Line::Result(ResultLine::Setup(_))));
        assert!(matches!(decoded[8], Line::Result(ResultLine::Logout(_))));
        assert!(matches!(decoded[9], Line::Result(ResultLine::Other)));
    }

    #[test]
    fn unknown_types_and_fields_are_ignored() {
        assert_eq!(line(r#"{"type":"telemetry","x":1}"#), Line::Unknown);
        let Line::Cache(cache) = line(r#"{"type":"cache","layer":"meta","hit":true,"new":[1]}"#)
        else {
            panic!("not a cache line")
        };
        assert_eq!(cache.hit, Some(true));
        assert!(matches!(
            line(r#"{"type":"stage","stage":"x","status":"paused"}"#),
            Line::Stage(Stage {
                status: StageStatus::Other,
                ..
            })
        ));
    }

    #[test]
    fn lines_that_are_not_protocol_are_told_apart() {
        assert_eq!(decode(b"Downloading model..."), Err(Malformed::NotJson));
        assert_eq!(decode(b"[1,2]"), Err(Malformed::NotJson));
        assert_eq!(decode(br#"{"kind":"x"}"#), Err(Malformed::NoType));
        assert!(matches!(
            decode(br#"{"type":"hello","protocol":"one"}"#),
            Err(Malformed::BadFields(_))
        ));
    }

    #[test]
    fn a_line_separator_inside_a_string_is_text() {
        let raw = "{\"type\":\"warning\",\"code\":\"X\",\"message\":\"one\u{2028}two\u{2029}three\u{85}\"}";
        let Line::Warning(warning) = line(raw) else {
            panic!("not a warning")
        };
        // U+2028 and U+2029 are text to Splice; U+0085 is a C1 control and goes.
        assert_eq!(
            warning.message.map(Text::into_string),
            Some("one\u{2028}two\u{2029}three".to_string())
        );
    }

    #[test]
    fn hostile_text_is_stripped_everywhere() {
        let Line::Error(error) = line(
            r#"{"type":"error","error":{"code":"AUTH\u001b[31m","message":"\u001b]0;pwned\u0007No credential","hint":"\u001b[2J\u001b[Hrun login","retryable":false,"scope":"account","status":401,"retryAfterMs":1500}}"#,
        ) else {
            panic!("not an error")
        };
        assert_eq!(error.error.code.as_str(), "AUTH");
        assert_eq!(error.error.message.as_str(), "No credential");
        assert_eq!(
            error.error.hint.map(Text::into_string),
            Some("run login".to_string())
        );
        assert_eq!(error.error.status, Some(401));
        assert_eq!(error.error.retry_after_ms, Some(1500));
        let Line::Warning(warning) = line(
            r#"{"type":"warning","code":"W","data":{"title\u001b[1m":["\u001b]52;c;eA==\u0007clip"]}}"#,
        ) else {
            panic!("not a warning")
        };
        assert_eq!(
            warning.data.map(|d| d.0),
            Some(serde_json::json!({"title": ["clip"]}))
        );
    }

    #[test]
    fn requests_keep_their_paths_raw() {
        let Line::Request(request) = line(
            r#"{"type":"request","id":7,"op":"extractWav","args":{"path":"/a b/x.mov","out":"/t/o.wav"}}"#,
        ) else {
            panic!("not a request")
        };
        assert_eq!(request.id, 7);
        assert_eq!(request.args["path"], "/a b/x.mov");
        assert_eq!(
            line(r#"{"type":"request-cancel","id":7}"#),
            Line::RequestCancel(RequestCancel { id: 7 })
        );
    }
}
