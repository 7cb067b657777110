//! Saved sessions: each session's prompts and events as JSON lines under
//! `<data dir>/sessions/<session id>.jsonl`, replayed to reopen it.

use crate::layout::Layout;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::protocol::Event;
use crate::sanitize::rechunk::Rechunker;
use crate::sanitize::redact::Redactor;

#[derive(Debug, Error)]
pub enum SessionError {
    #[error("no saved session `{0}`")]
    Unknown(String),
    #[error("no saved session to reopen in {0}")]
    NoneFor(String),
    #[error("no saved session `{id}` in {cwd}\n{recent}")]
    UnknownHere {
        id: String,
        cwd: String,
        recent: String,
    },
    #[error("session `{id}` was started in {cwd}, not here: run splice from there to reopen it")]
    Elsewhere { id: String, cwd: String },
    #[error("cannot use session file {path}: {message}")]
    Io { path: String, message: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    #[serde(rename_all = "camelCase")]
    Session {
        session_id: String,
        cwd: String,
    },
    Prompt {
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    Event {
        run_id: String,
        event: Box<Event>,
    },
    /// `/clear`: what came before is forgotten by a reopened session too.
    Clear,
    /// The model's conversation as it changed (after a run, a `/compact`): replayed, a
    /// reopened session sends the model exactly what it had.
    Memory(crate::conversation::Unsaved),
    /// `/undo` put back `files` from this checkpoint; replayed so a reopened session neither
    /// offers the same undo again nor lets the model believe its write still stands.
    #[serde(rename_all = "camelCase")]
    Undo {
        run_id: String,
        sequence: u32,
        files: Vec<String>,
        /// Of `files`, those the undo removed (absent from older logs: none).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        deleted: Vec<String>,
    },
}

/// A saved session as a list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub id: String,
    pub modified: std::time::SystemTime,
    /// The first request, on one line.
    pub first_prompt: String,
}

/// Appends records to one session's file; failures are kept quiet after the first, which the
/// app shows as a warning (a full disk must not stop the UI).
pub struct SessionLog {
    path: PathBuf,
    file: Option<std::fs::File>,
    /// The file is written outside the process, so secrets are redacted as in stream-json,
    /// streamed deltas re-cut so that none straddles two records.
    redactor: Redactor,
    rechunker: Rechunker,
    last_run: String,
}

impl SessionLog {
    pub fn open(
        layout: &Layout,
        session_id: &str,
        cwd: &Path,
        redactor: Redactor,
    ) -> Result<SessionLog, SessionError> {
        let (dir, path) = (layout.sessions(), layout.session_log(session_id));
        let io = |e: std::io::Error| SessionError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let existed = path.exists();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        let mut log = SessionLog {
            path: path.clone(),
            file: Some(file),
            rechunker: Rechunker::new(redactor.clone()),
            redactor,
            last_run: String::new(),
        };
        if !existed {
            log.append(&Record::Session {
                session_id: session_id.to_string(),
                cwd: cwd.display().to_string(),
            })?;
        }
        Ok(log)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn append(&mut self, record: &Record) -> Result<(), SessionError> {
        match record {
            Record::Event { run_id, event } => {
                self.last_run.clone_from(run_id);
                for event in self.rechunker.push(event) {
                    self.write(&Record::Event {
                        run_id: run_id.clone(),
                        event: Box::new(event),
                    })?;
                }
                Ok(())
            }
            other => {
                for event in self.rechunker.flush() {
                    let run_id = self.last_run.clone();
                    self.write(&Record::Event {
                        run_id,
                        event: Box::new(event),
                    })?;
                }
                self.write(other)
            }
        }
    }

    fn write(&mut self, record: &Record) -> Result<(), SessionError> {
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        let line = serde_json::to_string(record).unwrap_or_default();
        let mut line = self.redactor.redact_str(&line).unwrap_or(line);
        line.push('\n');
        if let Err(e) = file.write_all(line.as_bytes()) {
            self.file = None;
            return Err(SessionError::Io {
                path: self.path.display().to_string(),
                message: e.to_string(),
            });
        }
        Ok(())
    }
}

/// A session log on a thread of its own: the UI loop hands records over and never waits for
/// the disk. Records are written in the order they were appended.
pub struct SessionWriter {
    records: std::sync::mpsc::Sender<Record>,
    errors: std::sync::mpsc::Receiver<SessionError>,
    thread: std::thread::JoinHandle<()>,
}

impl SessionWriter {
    pub fn spawn(mut log: SessionLog) -> std::io::Result<SessionWriter> {
        let (records, inbox) = std::sync::mpsc::channel::<Record>();
        let (report, errors) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("splice-session".into())
            .spawn(move || {
                for record in inbox {
                    if let Err(e) = log.append(&record) {
                        let _ = report.send(e);
                    }
                }
            })?;
        Ok(SessionWriter {
            records,
            errors,
            thread,
        })
    }

    pub fn append(&self, record: Record) {
        let _ = self.records.send(record);
    }

    /// A write that failed since the last call (the log keeps quiet after its first).
    pub fn take_error(&self) -> Option<SessionError> {
        self.errors.try_recv().ok()
    }

    /// Wait until every appended record is written.
    pub fn close(self) {
        drop(self.records);
        let _ = self.thread.join();
    }
}

/// The request a saved prompt's text holds: the saved text may carry the earlier context
/// before it; the request is what was typed.
pub fn typed_request(text: &str) -> &str {
    text.rsplit_once("\nNew request:\n")
        .map_or(text, |(_, r)| r)
}

/// Whether `text` has a session id's shape: anything else (`..`, a path) never names a file.
pub fn is_session_id(text: &str) -> bool {
    text.strip_prefix("session_").is_some_and(|rest| {
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// The records of a saved session, in order; unreadable lines are skipped.
pub fn load(layout: &Layout, session_id: &str) -> Result<Vec<Record>, SessionError> {
    if !is_session_id(session_id) {
        return Err(SessionError::Unknown(session_id.to_string()));
    }
    let path = layout.session_log(session_id);
    let text = std::fs::read_to_string(&path)
        .map_err(|_| SessionError::Unknown(session_id.to_string()))?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// A saved session's records up to its first prompt, that one included: enough to tell where
/// it was started and what it asked, without reading and parsing the whole log.
pub fn load_head(layout: &Layout, session_id: &str) -> Result<Vec<Record>, SessionError> {
    use std::io::BufRead;
    if !is_session_id(session_id) {
        return Err(SessionError::Unknown(session_id.to_string()));
    }
    let unknown = |_| SessionError::Unknown(session_id.to_string());
    let path = layout.session_log(session_id);
    let file = std::fs::File::open(&path).map_err(unknown)?;
    let mut records = Vec::new();
    for line in std::io::BufReader::new(file).lines() {
        let Ok(record) = serde_json::from_str::<Record>(&line.map_err(unknown)?) else {
            continue;
        };
        let prompt = matches!(record, Record::Prompt { .. });
        records.push(record);
        if prompt {
            break;
        }
    }
    Ok(records)
}

/// Where a saved session was started, from its first record.
pub fn started_in(records: &[Record]) -> Option<&str> {
    match records.first() {
        Some(Record::Session { cwd, .. }) => Some(cwd),
        _ => None,
    }
}

/// A prompt on one line for a list: whitespace runs become one space and control, bidirectional
/// and invisible characters go, so a session file cannot put an escape sequence on the terminal
/// or stderr, nor disguise what a listed prompt says.
fn one_line(text: &str) -> String {
    text.split_whitespace()
        .map(|w| {
            w.chars()
                .filter(|c| crate::sanitize::terminal::shown_as_is(*c))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The sessions started in `cwd` that hold at least one prompt (a launch that was quit at once
/// leaves nothing to reopen), newest first, at most `limit`. Sessions of other directories are
/// never offered: their files and conversation are about another tree.
pub fn recent(layout: &Layout, cwd: &Path, limit: usize) -> Vec<Summary> {
    let Ok(entries) = std::fs::read_dir(layout.sessions()) else {
        return Vec::new();
    };
    let mut found: Vec<(std::time::SystemTime, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let id = name.strip_suffix(".jsonl")?.to_string();
            let modified = e.metadata().and_then(|m| m.modified()).ok()?;
            Some((modified, id))
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .rev()
        .filter_map(|(modified, id)| {
            let records = load_head(layout, &id).ok()?;
            if started_in(&records).is_none_or(|c| Path::new(c) != cwd) {
                return None;
            }
            let first_prompt = records.iter().find_map(|r| match r {
                Record::Prompt { text } => Some(one_line(text)),
                _ => None,
            })?;
            Some(Summary {
                id,
                modified,
                first_prompt,
            })
        })
        .take(limit)
        .collect()
}

/// The newest session of `cwd` that can be reopened.
pub fn latest(layout: &Layout, cwd: &Path) -> Option<String> {
    recent(layout, cwd, 1).into_iter().next().map(|s| s.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_latest_filters_by_cwd() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let data = dir.path();
        let mut log = SessionLog::open(
            &crate::layout::Layout::at(data),
            "session_a",
            Path::new("/repo/a"),
            Redactor::from_vars([]),
        )
        .expect("open data");
        log.append(&Record::Prompt {
            text: "hi\u{1b}]0;owned\u{7}\n  there".into(),
        })
        .expect("append log");
        log.append(&Record::Event {
            run_id: "run_1".into(),
            event: Box::new(Event::text("hello")),
        })
        .expect("append log");
        drop(log);
        SessionLog::open(
            &crate::layout::Layout::at(data),
            "session_b",
            Path::new("/repo/b"),
            Redactor::from_vars([]),
        )
        .expect("open data");
        let records = load(&crate::layout::Layout::at(data), "session_a").expect("load data");
        assert_eq!(records.len(), 3);
        assert!(matches!(&records[1], Record::Prompt { text } if text.starts_with("hi")));
        assert_eq!(
            latest(&crate::layout::Layout::at(data), Path::new("/repo/a")).as_deref(),
            Some("session_a")
        );
        assert_eq!(
            latest(&crate::layout::Layout::at(data), Path::new("/elsewhere")),
            None
        );
        // session_b was quit before any prompt: nothing to reopen there.
        assert_eq!(
            latest(&crate::layout::Layout::at(data), Path::new("/repo/b")),
            None
        );
        let listed = recent(&crate::layout::Layout::at(data), Path::new("/repo/a"), 5);
        assert_eq!(listed.len(), 1);
        // Listed on one line, without the escape sequence's control characters.
        assert_eq!(listed[0].first_prompt, "hi]0;owned there");
        assert!(matches!(
            load(&crate::layout::Layout::at(data), "nope"),
            Err(SessionError::Unknown(_))
        ));
    }

    #[test]
    fn a_listed_prompt_carries_no_bidirectional_or_invisible_characters() {
        assert_eq!(
            one_line("fix \u{202e}txt.exe\u{200b} now"),
            "fix txt.exe now"
        );
    }

    #[test]
    fn the_head_of_a_session_ends_at_its_first_prompt() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let mut log = SessionLog::open(
            &crate::layout::Layout::at(dir.path()),
            "session_h",
            Path::new("/repo"),
            Redactor::from_vars([]),
        )
        .expect("open dir");
        for text in ["first", "second"] {
            log.append(&Record::Prompt { text: text.into() })
                .expect("append log");
        }
        let head =
            load_head(&crate::layout::Layout::at(dir.path()), "session_h").expect("load head dir");
        assert_eq!(head.len(), 2);
        assert_eq!(started_in(&head), Some("/repo"));
        assert_eq!(
            head[1],
            Record::Prompt {
                text: "first".into()
            }
        );
        assert!(load_head(&crate::layout::Layout::at(dir.path()), "../session_h").is_err());
        assert!(load_head(&crate::layout::Layout::at(dir.path()), "session_none").is_err());
    }

    #[test]
    fn the_writer_thread_keeps_order_and_writes_everything_before_close_returns() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let log = SessionLog::open(
            &crate::layout::Layout::at(dir.path()),
            "session_w",
            Path::new("/repo"),
            Redactor::from_vars([]),
        )
        .expect("open dir");
        let writer = SessionWriter::spawn(log).expect("spawn log");
        for i in 0..200 {
            writer.append(Record::Prompt {
                text: format!("prompt {i}"),
            });
        }
        writer.close();
        let records = load(&crate::layout::Layout::at(dir.path()), "session_w").expect("load dir");
        let prompts: Vec<Record> = records.into_iter().skip(1).collect();
        let expected: Vec<Record> = (0..200)
            .map(|i| Record::Prompt {
                text: format!("prompt {i}"),
            })
            .collect();
        assert_eq!(prompts, expected);
    }
}
