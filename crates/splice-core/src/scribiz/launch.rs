//! Which program is the Scribiz CLI, what environment it gets, how long it may stay silent, and
//! the argument lists Splice runs. All of it is a function of an explicit environment (normally
//! Splice's own), so it can be tested without touching the process's environment.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::ScribizError;

/// The variable that names the CLI; without it, `scribiz` on PATH.
pub const BIN_ENV: &str = "SCRIBIZ_BIN";
/// Hidden, for tests: `STALL_MS,CANCEL_MS,TERM_MS`, each only ever shortening the standard limit.
pub const TEST_LIMITS_ENV: &str = "SPLICE_TEST_SCRIBIZ_LIMITS_MS";

/// An environment as name/value pairs.
pub type Env = Vec<(OsString, OsString)>;

/// Splice's own environment.
pub fn own_env() -> Env {
    std::env::vars_os().collect()
}

fn get<'a>(env: &'a Env, name: &str) -> Option<&'a OsStr> {
    env.iter()
        .rev()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_os_str())
}

/// The CLI: `SCRIBIZ_BIN` when it is set (and then only that: a person who named a program does
/// not want another one run in its place), else `scribiz` on PATH.
pub fn locate(env: &Env) -> Result<PathBuf, ScribizError> {
    if let Some(named) = get(env, BIN_ENV).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(named);
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(ScribizError::NotFound(format!(
                "{BIN_ENV} names {}, which is not an executable file",
                crate::sanitize::terminal::strip_controls(&path.display().to_string())
            )))
        };
    }
    let path_var = get(env, "PATH").unwrap_or_default();
    std::env::split_paths(path_var)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("scribiz"))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| {
            ScribizError::NotFound(format!(
                "no `scribiz` on PATH and {BIN_ENV} is not set (install the Scribiz CLI, or set \
                 {BIN_ENV} to its path)"
            ))
        })
}

/// Whether a Scribiz CLI can be run: when it cannot, Scribiz's tools are not offered.
pub fn available(env: &Env) -> bool {
    locate(env).is_ok()
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether `name` may reach the CLI: PATH, HOME, TMPDIR, the locale, `SCRIBIZ_*` and the Gemini
/// key. Nothing else: not the model providers' keys, not Splice's own settings.
pub fn passes(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    matches!(name, "PATH" | "HOME" | "TMPDIR" | "LANG" | "GEMINI_API_KEY")
        || name.starts_with("LC_")
        || name.starts_with("SCRIBIZ_")
}

/// The child's whole environment, taken from `env`.
pub fn child_env(env: &Env) -> Env {
    env.iter()
        .filter(|(name, _)| passes(name))
        .cloned()
        .collect()
}

/// How long a job may be silent, and how a cancel escalates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// No line of any kind for this long (three missed heartbeats): stalled, and cancelled.
    pub stall: Duration,
    /// After `{"cmd":"cancel"}`: SIGTERM when the process is still there after this long.
    pub cancel_grace: Duration,
    /// After SIGTERM: SIGKILL to its whole process group after this long.
    pub term_grace: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            stall: Duration::from_secs(15),
            cancel_grace: Duration::from_secs(10),
            term_grace: Duration::from_secs(5),
        }
    }
}

impl Limits {
    /// The standard limits, each shortened to the given one when that is shorter (never longer).
    pub fn shortened(stall: Duration, cancel_grace: Duration, term_grace: Duration) -> Limits {
        let standard = Limits::default();
        Limits {
            stall: stall.min(standard.stall),
            cancel_grace: cancel_grace.min(standard.cancel_grace),
            term_grace: term_grace.min(standard.term_grace),
        }
    }

    /// The standard limits, shortened by the hidden test variable when `env` sets it.
    pub fn from_env(env: &Env) -> Limits {
        let parsed = get(env, TEST_LIMITS_ENV)
            .and_then(OsStr::to_str)
            .map(|text| {
                text.split(',')
                    .map(|part| part.trim().parse::<u64>().ok())
                    .collect::<Option<Vec<u64>>>()
            });
        match parsed.flatten().as_deref() {
            Some([stall, cancel, term]) => Limits::shortened(
                Duration::from_millis(*stall),
                Duration::from_millis(*cancel),
                Duration::from_millis(*term),
            ),
            _ => Limits::default(),
        }
    }
}

/// `scribiz login --json`: a device code, then a saved login (never `--no-config`: Splice keeps
/// no Scribiz key of its own).
pub fn login_args() -> Vec<OsString> {
    vec!["login".into(), "--json".into()]
}

/// `scribiz <input> --json --out-file <out> --media-prep stdio,ffmpeg`: Splice answers the media
/// requests it can and the CLI falls back to ffmpeg for the rest.
pub fn transcribe_args(input: &OsStr, out_file: &Path) -> Result<Vec<OsString>, ScribizError> {
    // The CLI would read an input that starts with `-` as a flag.
    if input.as_encoded_bytes().first() == Some(&b'-') {
        return Err(ScribizError::Spawn(
            "an input that starts with `-` would be read as a flag; pass it as ./NAME".into(),
        ));
    }
    Ok(vec![
        input.to_os_string(),
        "--json".into(),
        "--out-file".into(),
        out_file.as_os_str().to_os_string(),
        "--media-prep".into(),
        "stdio,ffmpeg".into(),
    ])
}

/// `scribiz format <file> --format text --json`: a Context file as plain text.
pub fn format_text_args(context_file: &Path) -> Vec<OsString> {
    vec![
        "format".into(),
        context_file.as_os_str().to_os_string(),
        "--format".into(),
        "text".into(),
        "--json".into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn only_the_allowed_variables_pass() {
        let source = env(&[
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("TMPDIR", "/t"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
            ("SCRIBIZ_API_KEY", "s"),
            ("GEMINI_API_KEY", "g"),
            ("OPENAI_API_KEY", "o"),
            ("ANTHROPIC_API_KEY", "a"),
            ("SPLICE_CONFIG", "/c"),
            ("LD_PRELOAD", "/evil.so"),
            ("GEMINI_BASE_URL", "http://x"),
        ]);
        let names: Vec<String> = child_env(&source)
            .into_iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "PATH",
                "HOME",
                "TMPDIR",
                "LANG",
                "LC_ALL",
                "SCRIBIZ_API_KEY",
                "GEMINI_API_KEY"
            ]
        );
    }

    #[test]
    fn test_limits_only_shorten() {
        let shortened = Limits::from_env(&env(&[(TEST_LIMITS_ENV, "200,100,50")]));
        assert_eq!(shortened.stall, Duration::from_millis(200));
        assert_eq!(shortened.term_grace, Duration::from_millis(50));
        let longer = Limits::from_env(&env(&[(TEST_LIMITS_ENV, "999999,999999,999999")]));
        assert_eq!(longer, Limits::default());
        assert_eq!(
            Limits::from_env(&env(&[(TEST_LIMITS_ENV, "x")])),
            Limits::default()
        );
    }

    #[test]
    fn a_named_binary_that_is_missing_is_not_replaced_by_path() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let on_path = dir.path().join("scribiz");
        std::fs::write(&on_path, "#!/bin/sh\n").expect("write on path");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&on_path, std::fs::Permissions::from_mode(0o755))
            .expect("set the permissions of on path");
        let path = dir.path().to_string_lossy().into_owned();
        assert_eq!(locate(&env(&[("PATH", &path)])).ok(), Some(on_path.clone()));
        assert!(locate(&env(&[("PATH", &path), (BIN_ENV, "/nowhere/scribiz")])).is_err());
        assert!(!available(&env(&[("PATH", "/nowhere")])));
    }

    #[test]
    fn an_input_like_a_flag_is_refused() {
        assert!(transcribe_args(OsStr::new("--help"), Path::new("/o.json")).is_err());
        let args =
            transcribe_args(OsStr::new("/m/a.mp3"), Path::new("/o.json")).expect("transcribe args");
        assert_eq!(args[4], "--media-prep");
        assert_eq!(args[5], "stdio,ffmpeg");
    }
}
