//! The `transcribe` tool: a file beneath the working root (or an http(s) link) through the
//! Scribiz CLI, its progress as `tool_progress`, its cost as `usage` counted by the budget, and
//! the transcript text as the tool's output. The Context and the full text are kept in the
//! run's data directory (`runs/<run id>/transcribe/<call id>.json` and `.txt`), never in the
//! working root or the temp folder.
//!
//! A file is opened once, beneath the root, when it is checked; the CLI (unconfined, it opens
//! what it is given by path) reads a private copy of that opened file, made in the same
//! directory and removed when the call ends, never the path in the working root.

use crate::layout::Layout;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;
use thiserror::Error;

use super::staged_copy::StagedCopy;
use super::{MAX_OUTPUT_BYTES, ToolError, cap_output, paths};
use crate::bus::Bus;
use crate::confine::beneath::{self, Escape};
use crate::protocol::Event;
use crate::provider::ToolSpec;
use crate::scribiz::error::{Failure, FailureKind};
use crate::scribiz::job::{Ended, Job, JobOptions};
use crate::scribiz::launch::{self, Env, Limits};
use crate::scribiz::media::NativeMedia;
use crate::scribiz::progress;
use crate::scribiz::protocol::{Line, Plan, ResultLine, UsageDelta};
use crate::scribiz::{HostMedia, NoHostMedia, ScribizError};
use crate::usage::{ExternalUsage, UsageMeter, format_usd};

/// Why a transcription brought no text; its words go back to the model as the call's error.
#[derive(Debug, Error)]
pub enum TranscribeError {
    #[error("cannot create {}: {error}", .dir.display())]
    KeepDir { dir: PathBuf, error: std::io::Error },
    #[error("cannot copy {shown} for Scribiz: {error}")]
    Copy {
        shown: String,
        error: std::io::Error,
    },
    #[error("the file was not copied")]
    NotCopied,
    #[error("cannot write {}: {error}", .path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    /// Splice cancelled the job itself: the estimate or the spend passed the budget.
    #[error("{0}")]
    Cancelled(String),
    /// The CLI could not start or failed, in its words.
    #[error("{0}")]
    Cli(String),
    #[error("cannot format the transcript: {0}")]
    Format(String),
    #[error("cannot read the file Scribiz announced ({shown}): {error}")]
    Announced {
        shown: String,
        error: std::io::Error,
    },
    #[error("{0}")]
    Context(serde_json::Error),
    #[error("Scribiz's result holds no Context")]
    NoContext,
    #[error("Scribiz ended without a Context result")]
    NoContextResult,
    #[error("Scribiz's format result holds no text")]
    NoText,
    #[error("`scribiz format` ended without a format result")]
    NoFormatResult,
}

pub const NAME: &str = crate::protocol::Builtin::Transcribe.as_str();
/// Most bytes of a Context or a text file read back from the CLI.
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscribeArgs {
    pub path: String,
}

/// What the permission prompt shows of a call: the tool and what it transcribes (a tool call,
/// not a command line), then where the recording goes and that it is paid for.
pub fn previews(path: &str, input: &Input) -> Vec<crate::bus::Preview> {
    vec![
        crate::bus::Preview::Call {
            tool: NAME.to_string(),
            server: None,
            input: path.to_string(),
        },
        crate::bus::Preview::Note(cost_note(input)),
    ]
}

fn cost_note(input: &Input) -> String {
    match input {
        Input::Link(_) => "Scribiz fetches this link and transcribes it on its servers; this \
                           costs money, charged to your Scribiz account."
            .to_string(),
        Input::File(_) => "The recording is uploaded to Scribiz and transcribed on its servers; \
                           this costs money, charged to your Scribiz account."
            .to_string(),
    }
}

/// What is transcribed.
#[derive(Debug)]
pub enum Input {
    Link(String),
    File(Media),
}

/// A file beneath the working root, opened when it was checked: what the CLI gets a copy of.
#[derive(Debug)]
pub struct Media {
    /// Absolute, beneath the root: how it is named to the person.
    pub path: PathBuf,
    file: std::fs::File,
}

/// The run's Scribiz CLI, and where the tool keeps what it makes.
pub struct Transcriber {
    program: PathBuf,
    env: Env,
    limits: Limits,
    keep_dir: PathBuf,
    meter: Arc<UsageMeter>,
    settling: Settling,
}

/// The jobs of tool calls cut short (an interrupt drops the call): each is cancelled and
/// finished in the background, and the run waits for them (bounded) before it ends, so the
/// CLI gets to clean up (its uploads, its run folder) instead of being killed with Splice.
#[derive(Clone, Default)]
pub struct Settling(Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>);

impl Settling {
    fn hand_over(&self, job: Job) {
        job.cancel();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime: dropping the job cancels it and its process group is killed.
            return;
        };
        let handle = runtime.spawn(async move {
            let _ = job.finish().await;
        });
        if let Ok(mut handles) = self.0.lock() {
            handles.push(handle);
        }
    }

    /// Wait until every handed-over job has ended, at most `limit`.
    pub async fn wait(&self, limit: std::time::Duration) {
        let handles = self
            .0
            .lock()
            .map(|mut handles| std::mem::take(&mut *handles))
            .unwrap_or_default();
        let _ = tokio::time::timeout(limit, async {
            for handle in handles {
                let _ = handle.await;
            }
        })
        .await;
    }
}

/// A job owned by a tool call: dropped before it ended, it is handed to `Settling`.
struct Owned {
    job: Option<Job>,
    settling: Settling,
}

impl Owned {
    async fn next(&mut self) -> Option<Line> {
        match self.job.as_mut() {
            Some(job) => job.next().await,
            None => None,
        }
    }

    fn cancel(&self) {
        if let Some(job) = &self.job {
            job.cancel();
        }
    }

    /// Read to the end (the job stays owned while it runs), then how it ended.
    async fn finish(mut self) -> Ended {
        if let Some(job) = self.job.as_mut() {
            while job.next().await.is_some() {}
        }
        match self.job.take() {
            Some(job) => job.finish().await,
            None => Ended {
                outcome: Err(ScribizError::Protocol(
                    "the job was already finished".into(),
                )),
                logs: Vec::new(),
                skipped_lines: 0,
            },
        }
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if let Some(job) = self.job.take() {
            self.settling.hand_over(job);
        }
    }
}

impl Transcriber {
    /// The tool, when a Scribiz CLI can be run (`SCRIBIZ_BIN`, else `scribiz` on PATH, looked
    /// up in `env`); `None` otherwise, and then it is not offered.
    pub fn find(
        env: Env,
        layout: &Layout,
        run_id: &str,
        meter: Arc<UsageMeter>,
        settling: Settling,
    ) -> Option<Transcriber> {
        let program = launch::locate(&env).ok()?;
        Some(Transcriber {
            program,
            limits: Limits::from_env(&env),
            env,
            keep_dir: layout.run_keep(&file_stem(run_id), NAME),
            meter,
            settling,
        })
    }

    /// Transcribe `input` for call `id`: the output text and whether it was capped, or why not.
    pub async fn run(
        &self,
        bus: &Bus,
        root: &Path,
        id: &str,
        input: &Input,
    ) -> Result<(String, bool), TranscribeError> {
        let keep_dir = self.keep_dir.clone();
        crate::blocking::atomic(|| private_dir(&keep_dir)).map_err(|error| {
            TranscribeError::KeepDir {
                dir: self.keep_dir.clone(),
                error,
            }
        })?;
        let stem = file_stem(id);
        let context_file = self.keep_dir.join(format!("{stem}.json"));
        let text_file = self.keep_dir.join(format!("{stem}.txt"));
        // Held until the call ends, however it ends: dropping it removes the copy.
        let staged = match input {
            Input::Link(_) => None,
            Input::File(media) => Some(
                StagedCopy::create(&media.file, &self.keep_dir, &stem, media.path.extension())
                    .await
                    .map_err(|error| TranscribeError::Copy {
                        shown: paths::display(root, &media.path),
                        error,
                    })?,
            ),
        };
        let input_arg: OsString = match (input, &staged) {
            (Input::Link(link), _) => link.into(),
            (Input::File(_), Some(copy)) => copy.path().into(),
            (Input::File(_), None) => return Err(TranscribeError::NotCopied),
        };
        let transcribed = self
            .transcribe(bus, root, id, &input_arg, &context_file)
            .await;
        drop(staged);
        if let Err(why) = transcribed {
            let _ = std::fs::remove_file(&context_file);
            return Err(why);
        }
        let text = self.format_text(root, &context_file).await?;
        std::fs::write(&text_file, &text).map_err(|error| TranscribeError::Write {
            path: text_file.clone(),
            error,
        })?;
        let shown = match input {
            Input::Link(link) => link.clone(),
            Input::File(media) => paths::display(root, &media.path),
        };
        let note = format!(
            "\n\n[transcript of {shown}: the full text is in {}, the Context (JSON, with word \
             times) in {}]",
            text_file.display(),
            context_file.display()
        );
        let (capped, truncated) = cap_output(&text, MAX_OUTPUT_BYTES.saturating_sub(note.len()));
        Ok((format!("{capped}{note}"), truncated))
    }

    /// Run `scribiz <input> --json --out-file <context_file>`, reporting its progress and cost,
    /// and leave its Context in `context_file`.
    async fn transcribe(
        &self,
        bus: &Bus,
        root: &Path,
        id: &str,
        input_arg: &std::ffi::OsStr,
        context_file: &Path,
    ) -> Result<(), TranscribeError> {
        let _ = std::fs::remove_file(context_file);
        let args = launch::transcribe_args(input_arg, context_file)
            .map_err(|e| TranscribeError::Cli(describe(&e)))?;
        let mut job = self.start(root, args, Arc::new(NativeMedia))?;
        // Why Splice cancelled the job itself, when it did.
        let mut refusal: Option<String> = None;
        while let Some(line) = job.next().await {
            if let Some(report) = progress::report(&line) {
                bus.emit(Event::tool_progress(
                    id,
                    report.stage.as_deref(),
                    report.fraction,
                    report.detail.as_deref(),
                ));
            }
            match &line {
                Line::Plan(plan) if refusal.is_none() => {
                    refusal = self.over_estimate(plan);
                    if refusal.is_some() {
                        job.cancel();
                    }
                }
                Line::Usage(usage) => {
                    if let Some(delta) = &usage.delta {
                        self.meter.record_external(bus, &external(delta));
                    }
                    if refusal.is_none()
                        && let Some(reason) = self.meter.over_budget()
                    {
                        refusal = Some(format!("transcription cancelled: {reason}"));
                        job.cancel();
                    }
                }
                _ => {}
            }
        }
        let ended = job.finish().await;
        if let Some(why) = refusal {
            return Err(TranscribeError::Cancelled(why));
        }
        let outcome = ended
            .outcome
            .map_err(|e| TranscribeError::Cli(describe(&e)))?;
        match outcome.result() {
            Some(ResultLine::Context(context)) => {
                if let Some(inline) = &context.context {
                    let bytes = serde_json::to_vec(&inline.0).map_err(TranscribeError::Context)?;
                    return std::fs::write(context_file, bytes).map_err(|error| {
                        TranscribeError::Write {
                            path: context_file.to_path_buf(),
                            error,
                        }
                    });
                }
                match &context.path {
                    Some(path) if path == context_file => Ok(()),
                    Some(path) => {
                        // A file the CLI chose (its temp folder): moved into the run's data,
                        // deleted as the document asks the host to.
                        let bytes = self.take_file(path)?;
                        std::fs::write(context_file, bytes).map_err(|error| {
                            TranscribeError::Write {
                                path: context_file.to_path_buf(),
                                error,
                            }
                        })
                    }
                    None => Err(TranscribeError::NoContext),
                }
            }
            _ => Err(TranscribeError::NoContextResult),
        }
    }

    /// `scribiz format <context_file> --format text --json`: the transcript as plain text.
    async fn format_text(
        &self,
        root: &Path,
        context_file: &Path,
    ) -> Result<String, TranscribeError> {
        let args = launch::format_text_args(context_file);
        let job = self.start(root, args, Arc::new(NoHostMedia))?;
        let Ended { outcome, .. } = job.finish().await;
        let outcome = outcome.map_err(|e| TranscribeError::Format(describe(&e)))?;
        match outcome.result() {
            Some(ResultLine::Format(format)) => match (&format.text, &format.path) {
                (Some(text), _) => Ok(text.as_str().to_string()),
                (None, Some(path)) => {
                    let bytes = self.take_file(path)?;
                    let text = String::from_utf8_lossy(&bytes);
                    Ok(crate::sanitize::terminal::strip_controls(&text).into_owned())
                }
                (None, None) => Err(TranscribeError::NoText),
            },
            _ => Err(TranscribeError::NoFormatResult),
        }
    }

    fn start(
        &self,
        root: &Path,
        args: Vec<OsString>,
        media: Arc<dyn HostMedia>,
    ) -> Result<Owned, TranscribeError> {
        let job = Job::start(JobOptions {
            program: self.program.clone(),
            args,
            env: self.env.clone(),
            cwd: Some(root.to_path_buf()),
            limits: self.limits,
            media,
        })
        .map_err(|e| TranscribeError::Cli(describe(&e)))?;
        Ok(Owned {
            job: Some(job),
            settling: self.settling.clone(),
        })
    }

    /// Read a file the CLI announced; delete it when it is in the temp folder (the CLI's own
    /// file there), never elsewhere.
    fn take_file(&self, path: &Path) -> Result<Vec<u8>, TranscribeError> {
        use std::io::Read;
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_FILE_BYTES).read_to_end(&mut bytes))
            .map_err(|error| TranscribeError::Announced {
                shown: crate::sanitize::terminal::strip_controls(&path.display().to_string())
                    .into_owned(),
                error,
            })?;
        if self.in_temp_folder(path) {
            let _ = std::fs::remove_file(path);
        }
        Ok(bytes)
    }

    fn in_temp_folder(&self, path: &Path) -> bool {
        let tmp = self
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == "TMPDIR")
            .map(|(_, v)| PathBuf::from(v))
            .unwrap_or_else(std::env::temp_dir);
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let (tmp, file) = (canonical(&tmp), canonical(path));
        file.starts_with(&tmp) || file.starts_with("/tmp")
    }

    /// Why the job is cancelled before work starts, when the plan's highest estimate would pass
    /// what is left of `--max-cost-usd`.
    fn over_estimate(&self, plan: &Plan) -> Option<String> {
        let remaining = self.meter.remaining_usd()?;
        // No estimate: nothing to judge before work starts; the usage lines still count.
        let high = plan.estimate.as_ref()?.usd_high?;
        let limit = self.meter.budget().max_cost_usd.unwrap_or_default();
        match remaining {
            Ok(left) if high > left => Some(format!(
                "transcription cancelled before work started: Scribiz estimates up to ${} \
                 (from ${}), more than the ${} left of the cost budget (--max-cost-usd {limit})",
                format_usd(high),
                plan.estimate
                    .as_ref()
                    .and_then(|e| e.usd_low)
                    .map_or("?".to_string(), format_usd),
                format_usd(left.max(0.0)),
            )),
            Ok(_) => None,
            Err(why) => Some(format!(
                "transcription cancelled before work started: {why}"
            )),
        }
    }
}

/// The tool's spec for a model request.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_string(),
        description: "Transcribe an audio or video file of the repository (or an http(s) link \
                      to one) with the Scribiz CLI and return the transcript text. It uploads \
                      the media and costs money."
            .to_string(),
        parameters: json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "a file beneath the working root, or an http(s) link"}
        }, "required": ["path"], "additionalProperties": false}),
    }
}

/// The input a `path` argument names: an http(s) link, or an existing file beneath `root`
/// (not through `..` or a symlink out of it, not inside `.git`), opened here, once, and judged
/// on what was opened (see [`beneath::open_for_upload`]).
pub fn input(root: &Path, raw: &str) -> Result<Input, ToolError> {
    let trimmed = raw.trim();
    let lower = trimmed.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        if trimmed.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(ToolError::InvalidArguments(
                "a link may not hold spaces or control characters".into(),
            ));
        }
        return Ok(Input::Link(trimmed.to_string()));
    }
    let path = paths::resolve(root, raw)?;
    let named_in_git = path
        .strip_prefix(root)
        .map(|relative| relative.components().any(|c| c.as_os_str() == ".git"))
        .unwrap_or(true);
    if named_in_git {
        return Err(ToolError::Protected(raw.to_string()));
    }
    // Where the path really leads is judged on the file opened: a link in the root
    // (`g -> .git`) leads into `.git` without naming it, and a link swapped in later is what
    // the open meets.
    match beneath::open_for_upload(root, &path) {
        Ok(file) => Ok(Input::File(Media { path, file })),
        Err(error) => Err(match Escape::of(&error) {
            Some(Escape::Outside) => ToolError::OutsideRoot(raw.to_string()),
            Some(Escape::Protected) => ToolError::Protected(raw.to_string()),
            Some(Escape::HardLinked) => ToolError::Failed(format!(
                "`{raw}` has other hard links (one may be inside .git), so it is not handed \
                 out; transcribe a copy of it"
            )),
            Some(Escape::Own) => ToolError::Failed(format!(
                "`{raw}` is in Splice's own config or data directory; it is not handed out"
            )),
            // Only writes are refused for it.
            Some(Escape::HookFile) => ToolError::Failed(format!("cannot read `{raw}`")),
            None => ToolError::Failed(format!("cannot read `{raw}`: {error}")),
        }),
    }
}

/// A Scribiz `usage` delta as a Splice usage record.
fn external(delta: &UsageDelta) -> ExternalUsage {
    let tokens = delta.tokens.as_ref();
    let thought = tokens.and_then(|t| t.thought).unwrap_or(0);
    ExternalUsage {
        provider: "scribiz".into(),
        model: delta
            .model
            .as_ref()
            .map_or_else(|| "scribiz".to_string(), |m| m.as_str().to_string()),
        stage: NAME.into(),
        prompt_tokens: tokens.and_then(|t| t.input).unwrap_or(0),
        completion_tokens: tokens.and_then(|t| t.out).unwrap_or(0) + thought,
        reasoning_tokens: (thought > 0).then_some(thought),
        cost_usd: delta.usd.filter(|usd| usd.is_finite() && *usd >= 0.0),
    }
}

/// A failure as the model reads it: the kind, the CLI's code, message and hint, the exit code.
fn describe(error: &ScribizError) -> String {
    match error.failure() {
        Some(failure) => describe_failure(failure),
        None => error.to_string(),
    }
}

fn describe_failure(failure: &Failure) -> String {
    let lead = if failure.kind == FailureKind::Cancelled {
        "the transcription was cancelled"
    } else {
        "the transcription failed"
    };
    let mut text = format!("{lead}: {failure}");
    if let Some(code) = failure.exit_code {
        text.push_str(&format!(" [exit code {code}]"));
    }
    text
}

/// A name safe as a file name.
fn file_stem(id: &str) -> String {
    let stem: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if stem.is_empty() { "call".into() } else { stem }
}

/// A directory only its owner reads.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_links_or_files_beneath_the_root() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().canonicalize().expect("canonicalize dir");
        std::fs::write(root.join("a.mp3"), b"x").expect("write a.mp3");
        std::fs::create_dir_all(root.join(".git")).expect("create .git");
        std::fs::write(root.join(".git/x.mp3"), b"x").expect("write .git/x.mp3");
        assert!(matches!(
            input(&root, "a.mp3"),
            Ok(Input::File(Media { path, .. })) if path == root.join("a.mp3")
        ));
        assert!(matches!(
            input(&root, "https://youtu.be/x"),
            Ok(Input::Link(link)) if link == "https://youtu.be/x"
        ));
        assert!(matches!(
            input(&root, "../a.mp3"),
            Err(ToolError::OutsideRoot(_))
        ));
        assert!(matches!(
            input(&root, "/etc/passwd"),
            Err(ToolError::OutsideRoot(_))
        ));
        assert!(matches!(
            input(&root, ".git/x.mp3"),
            Err(ToolError::Protected(_))
        ));
        assert!(matches!(
            input(&root, "missing.mp3"),
            Err(ToolError::Failed(_))
        ));
        assert!(matches!(
            input(&root, "https://x/\u{1b}[2J"),
            Err(ToolError::InvalidArguments(_))
        ));
    }

    #[test]
    fn file_stems_are_safe() {
        assert_eq!(file_stem("call_1"), "call_1");
        assert_eq!(file_stem("../x y"), "___x_y");
        assert_eq!(file_stem(""), "call");
    }
}
