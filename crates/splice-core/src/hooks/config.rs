//! The `hooks` section, in Claude Code's shape: `{"<Event>": [{"matcher": "…", "hooks":
//! [{"type": "command", "command": "…", "timeout": 60}]}]}`. Read from the user's config file
//! and from a project's `.splice/settings.json`; anything that is not exactly that shape is an
//! error naming where it is, never a hook silently left out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};
use sha2::Digest;

use super::event::HookEvent;
use super::matcher::Matcher;

/// A hook's time limit when it names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The project's settings file, beneath the working root.
pub const PROJECT_FILE: &str = ".splice/settings.json";
/// Every settings file whose hooks are the project's, beneath the working root, in the order
/// their hooks run: Splice's own, then Claude Code's (shared, then local), so a project set up
/// for Claude Code brings its hooks (asked about as Splice's are).
pub const PROJECT_FILES: [&str; 3] = [
    PROJECT_FILE,
    ".claude/settings.json",
    ".claude/settings.local.json",
];
/// Largest project settings file read; a bigger one is an error.
const MAX_PROJECT_FILE_BYTES: u64 = 1024 * 1024;

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HookConfigError(pub String);

/// Where a hook was configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    User,
    /// A project's `.splice/settings.json`: runs only once approved.
    Project,
}

#[derive(Debug, Clone)]
pub struct HookCommand {
    pub command: String,
    pub timeout: Duration,
    pub source: Source,
    /// A project hook's files as approved ([`crate::permissions::pinned`]): it runs only while they hold
    /// that. None for the user's own hooks.
    pub pins: Vec<crate::permissions::pinned::Pinned>,
}

#[derive(Debug, Clone)]
pub struct Group {
    pub matcher: Matcher,
    pub hooks: Vec<HookCommand>,
}

/// Hooks by event, in the order configured (the user's before the project's).
#[derive(Debug, Clone, Default)]
pub struct HookConfig {
    groups: BTreeMap<HookEvent, Vec<Group>>,
}

impl HookConfig {
    /// The `hooks` value found at `place` (named in errors: `hooks` of a file).
    pub fn parse(
        value: &Value,
        source: Source,
        place: &str,
    ) -> Result<HookConfig, HookConfigError> {
        Self::parse_with(value, source, place, None)
    }

    /// [`HookConfig::parse`], where an event Splice does not have is put in `unknown` (when
    /// given) instead of being an error.
    fn parse_with(
        value: &Value,
        source: Source,
        place: &str,
        mut unknown: Option<&mut Vec<String>>,
    ) -> Result<HookConfig, HookConfigError> {
        let prefix = if place.is_empty() {
            String::new()
        } else {
            format!("{place}: ")
        };
        let bad = |at: String, why: &str| HookConfigError(format!("{prefix}`{at}` {why}"));
        let Value::Object(events) = value else {
            return Err(bad("hooks".into(), "must be an object of event names"));
        };
        let mut groups: BTreeMap<HookEvent, Vec<Group>> = BTreeMap::new();
        for (name, list) in events {
            let at = format!("hooks.{name}");
            if HookEvent::parse(name).is_none()
                && let Some(unknown) = unknown.as_deref_mut()
            {
                unknown.push(name.clone());
                continue;
            }
            let event = HookEvent::parse(name).ok_or_else(|| {
                let names: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
                bad(
                    at.clone(),
                    &format!("is not a hook event (expected one of {})", names.join(", ")),
                )
            })?;
            let Value::Array(list) = list else {
                return Err(bad(at, "must be an array of matcher groups"));
            };
            for (i, group) in list.iter().enumerate() {
                let at = format!("{at}[{i}]");
                let group = parse_group(group, source, &at).map_err(|(at, why)| bad(at, &why))?;
                groups.entry(event).or_default().push(group);
            }
        }
        Ok(HookConfig { groups })
    }

    /// `self`'s hooks, then `other`'s.
    pub fn merged(mut self, other: HookConfig) -> HookConfig {
        for (event, list) in other.groups {
            self.groups.entry(event).or_default().extend(list);
        }
        self
    }

    /// The hooks of `event` whose matcher takes one of `names` (no names: every group, for the
    /// events that have nothing to match). A command configured twice runs once.
    pub fn matching(&self, event: HookEvent, names: &[&str]) -> Vec<&HookCommand> {
        let mut found: Vec<&HookCommand> = Vec::new();
        for group in self.groups.get(&event).into_iter().flatten() {
            if !names.is_empty() && !group.matcher.matches(names) {
                continue;
            }
            for hook in &group.hooks {
                if !found.iter().any(|f| f.command == hook.command) {
                    found.push(hook);
                }
            }
        }
        found
    }

    pub fn is_empty(&self) -> bool {
        self.groups
            .values()
            .all(|g| g.iter().all(|g| g.hooks.is_empty()))
    }

    /// Pin the files each hook's command names, as they are now in `root` ([`crate::permissions::pinned`]);
    /// every file pinned, once.
    fn pin_files(&mut self, root: &Path) -> Vec<crate::permissions::pinned::Pinned> {
        let mut all = Vec::new();
        for hook in self
            .groups
            .values_mut()
            .flatten()
            .flat_map(|g| &mut g.hooks)
        {
            hook.pins = crate::permissions::pinned::pin(&hook.command, root);
            all.extend(hook.pins.iter().cloned());
        }
        all.sort();
        all.dedup();
        all
    }

    /// Every command with its event, for an approval question or a warning.
    pub fn commands(&self) -> Vec<(HookEvent, String)> {
        let mut all = Vec::new();
        for (event, groups) in &self.groups {
            for hook in groups.iter().flat_map(|g| &g.hooks) {
                if !all.iter().any(|(e, c)| e == event && *c == hook.command) {
                    all.push((*event, hook.command.clone()));
                }
            }
        }
        all
    }
}

type GroupError = (String, String);

fn parse_group(value: &Value, source: Source, at: &str) -> Result<Group, GroupError> {
    let bad = |at: String, why: &str| (at, why.to_string());
    let Value::Object(group) = value else {
        return Err(bad(
            at.into(),
            "must be an object with `hooks` (and `matcher`)",
        ));
    };
    refuse_unknown(group, &["matcher", "hooks"], at)?;
    let matcher = match group.get("matcher") {
        None | Some(Value::Null) => Matcher::All,
        Some(Value::String(text)) => Matcher::parse(text).map_err(|e| {
            bad(
                format!("{at}.matcher"),
                &format!("is not a valid regular expression: {e}"),
            )
        })?,
        Some(_) => return Err(bad(format!("{at}.matcher"), "must be a string")),
    };
    let Some(Value::Array(list)) = group.get("hooks") else {
        return Err(bad(format!("{at}.hooks"), "must be an array of hooks"));
    };
    let mut hooks = Vec::new();
    for (i, hook) in list.iter().enumerate() {
        hooks.push(parse_hook(hook, source, &format!("{at}.hooks[{i}]"))?);
    }
    Ok(Group { matcher, hooks })
}

fn parse_hook(value: &Value, source: Source, at: &str) -> Result<HookCommand, GroupError> {
    let bad = |at: String, why: &str| (at, why.to_string());
    let Value::Object(hook) = value else {
        return Err(bad(
            at.into(),
            "must be an object with `type` and `command`",
        ));
    };
    refuse_unknown(hook, &["type", "command", "timeout"], at)?;
    match hook.get("type") {
        Some(Value::String(kind)) if kind == "command" => {}
        Some(Value::String(_)) => {
            return Err(bad(
                format!("{at}.type"),
                "must be \"command\" (the only kind of hook Splice runs)",
            ));
        }
        _ => return Err(bad(format!("{at}.type"), "must be the string \"command\"")),
    }
    let command = match hook.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
        _ => return Err(bad(format!("{at}.command"), "must be a non-empty string")),
    };
    let timeout = match hook.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Duration::from_secs_f64(s),
            _ => {
                return Err(bad(
                    format!("{at}.timeout"),
                    "must be a number of seconds above 0 (at most a day)",
                ));
            }
        },
        Some(_) => return Err(bad(format!("{at}.timeout"), "must be a number of seconds")),
    };
    Ok(HookCommand {
        command,
        timeout,
        source,
        pins: Vec::new(),
    })
}

fn refuse_unknown(object: &Map<String, Value>, known: &[&str], at: &str) -> Result<(), GroupError> {
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err((
            format!("{at}.{key}"),
            format!("is not a known key (expected {})", known.join(", ")),
        )),
        None => Ok(()),
    }
}

/// The hooks of the user's config file (its `hooks` value, if any); errors name the key, the
/// caller names the file.
pub fn user_hooks(value: Option<&Value>) -> Result<HookConfig, HookConfigError> {
    match value {
        None => Ok(HookConfig::default()),
        Some(value) => HookConfig::parse(value, Source::User, ""),
    }
}

/// A project's hooks, read from its settings files ([`PROJECT_FILES`]), with the fingerprint an
/// approval names: a hash of exactly the `hooks` configured in each and of every file their
/// commands name ([`crate::permissions::pinned`]), so any change to either needs a new approval.
#[derive(Debug, Clone)]
pub struct ProjectHooks {
    /// The settings files that configure hooks, in [`PROJECT_FILES`]' order.
    pub settings: Vec<PathBuf>,
    pub config: HookConfig,
    pub fingerprint: String,
    /// The files the approval covers, with what they held when read.
    pub pins: Vec<crate::permissions::pinned::Pinned>,
    /// Events of Claude Code's settings files that Splice does not have (`Setup`,
    /// `PostToolUseFailure` …), with the file: their hooks never run, and each run says so.
    pub unknown_events: Vec<(String, PathBuf)>,
}

impl ProjectHooks {
    /// The files (and directories, whole) the approval covers that exist, by content, for
    /// the approval question.
    pub fn files(&self) -> Vec<PathBuf> {
        crate::permissions::pinned::covered(&self.pins)
    }

    /// Why what it runs cannot be pinned (so it never runs), for the approval question.
    pub fn refused(&self) -> Option<&str> {
        crate::permissions::pinned::refused(&self.pins)
    }
}

/// The project's hooks beneath `root`; none when no settings file has a `hooks`. Other keys
/// of the files are left to whatever reads them.
pub fn project_hooks(root: &Path) -> Result<Option<ProjectHooks>, HookConfigError> {
    let mut found = Vec::new();
    for name in PROJECT_FILES {
        if let Some(hooks) = settings_hooks(root, name)? {
            found.push((name, hooks));
        }
    }
    if found.is_empty() {
        return Ok(None);
    }
    let mut config = HookConfig::default();
    let mut hasher = sha2::Sha256::new();
    let mut unknown_events = Vec::new();
    for (name, hooks) in &found {
        let file = root.join(name);
        let place = file.display().to_string();
        // Claude Code has events Splice does not: a project set up for it still starts, and
        // is told which of its hooks never run. Splice's own file has only Splice's events.
        let mut unknown = Vec::new();
        let lenient = (*name != PROJECT_FILE).then_some(&mut unknown);
        config = config.merged(HookConfig::parse_with(
            hooks,
            Source::Project,
            &place,
            lenient,
        )?);
        unknown_events.extend(unknown.into_iter().map(|event| (event, file.clone())));
        // Splice's own file hashes as it always did (approvals of it stay good); the others
        // are named, so the same hooks moved to another file are a change.
        if *name != PROJECT_FILE {
            hasher.update(b"\n@");
            hasher.update(name.as_bytes());
            hasher.update(b"\0");
        }
        hasher.update(hooks.to_string().as_bytes());
    }
    let pins = config.pin_files(root);
    for pin in &pins {
        hasher.update(b"\n");
        hasher.update(pin.path.as_os_str().as_encoded_bytes());
        hasher.update(b"\0");
        hasher.update(pin.state.as_bytes());
    }
    Ok(Some(ProjectHooks {
        settings: found.iter().map(|(name, _)| root.join(name)).collect(),
        config,
        fingerprint: crate::ids::hex(&hasher.finalize()),
        pins,
        unknown_events,
    }))
}

/// The `hooks` of settings file `name` beneath `root`, if it has any.
fn settings_hooks(root: &Path, name: &str) -> Result<Option<Value>, HookConfigError> {
    // A file Splice reads on its own (as `.mcp.json`): beneath the root, a regular file,
    // bounded, so a link out of the repository, a FIFO or `/dev/zero` can neither choose the
    // hooks nor hang the start.
    let file = root.join(name);
    let text = match crate::confine::beneath::read_at_most(root, &file, MAX_PROJECT_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(HookConfigError(format!(
                "cannot read {}: {e}",
                file.display()
            )));
        }
    };
    let mut value: Value = serde_json::from_slice(&text)
        .map_err(|e| HookConfigError(format!("{} is not valid JSON: {e}", file.display())))?;
    Ok(value.get_mut("hooks").map(Value::take))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error(value: Value) -> String {
        HookConfig::parse(&value, Source::User, "config.json")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn claude_code_shape_parses_and_matches() {
        let config = HookConfig::parse(
            &json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "check.sh", "timeout": 5}]}],
                "Stop": [{"hooks": [{"type": "command", "command": "stop.sh"}]}]}),
            Source::User,
            "config.json",
        )
        .unwrap_or_default();
        let pre = config.matching(HookEvent::PreToolUse, &["run_command", "Bash"]);
        assert_eq!(pre.len(), 1);
        assert_eq!(pre[0].timeout, Duration::from_secs(5));
        assert!(
            config
                .matching(HookEvent::PreToolUse, &["read_file", "Read"])
                .is_empty()
        );
        assert_eq!(
            config.matching(HookEvent::Stop, &[])[0].timeout,
            DEFAULT_TIMEOUT
        );
    }

    #[test]
    fn claude_codes_settings_may_have_events_splice_does_not() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path();
        std::fs::create_dir_all(root.join(".claude")).expect("mkdir");
        let hooks = |event: &str| {
            json!({"hooks": {event: [{"hooks": [{"type": "command", "command": "x"}]}]}})
                .to_string()
        };
        std::fs::write(root.join(".claude/settings.local.json"), hooks("Setup")).expect("write");
        std::fs::write(root.join(".claude/settings.json"), hooks("Stop")).expect("write");
        let project = project_hooks(root)
            .ok()
            .flatten()
            .expect("the project's hooks");
        assert_eq!(project.settings.len(), 2);
        assert_eq!(project.config.matching(HookEvent::Stop, &[]).len(), 1);
        assert_eq!(project.unknown_events.len(), 1);
        assert_eq!(project.unknown_events[0].0, "Setup");
        // Splice's own file has only Splice's events.
        std::fs::create_dir_all(root.join(".splice")).expect("mkdir");
        std::fs::write(root.join(PROJECT_FILE), hooks("Setup")).expect("write");
        assert!(project_hooks(root).is_err());
    }

    #[test]
    fn every_wrong_shape_is_named() {
        assert!(error(json!({"PreTool": []})).contains("`hooks.PreTool` is not a hook event"));
        assert!(
            error(json!({"PreToolUse": [{"matcher": "(", "hooks": []}]}))
                .contains("`hooks.PreToolUse[0].matcher` is not a valid regular expression")
        );
        assert!(error(json!({"Stop": {}})).contains("must be an array"));
        assert!(
            error(json!({"Stop": [{"hooks": [{"type": "prompt", "command": "x"}]}]}))
                .contains("hooks.Stop[0].hooks[0].type")
        );
        assert!(
            error(json!({"Stop": [{"hooks": [{"type": "command", "command": 3}]}]}))
                .contains("command` must be a non-empty string")
        );
        assert!(
            error(
                json!({"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": "5"}]}]})
            )
            .contains("timeout` must be a number")
        );
        assert!(error(json!([])).contains("must be an object"));
    }
}
