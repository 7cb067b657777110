//! git's command line as a deny rule means it: global options dropped (`git -C d --no-pager
//! push` is `git push`), and an alias defined with `-c alias.X=…` replaced by what it runs. A
//! subcommand that is not built into git may be an alias from a config file, so it is unknown.

use super::programs::{self, Dialect, Inner};
use super::words::Word;

/// Global options followed by a value in the next word.
const VALUE_OPTIONS: [&str; 8] = [
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--config-env",
    "--attr-source",
];

/// Global options without a value (or with it after `=`).
const FLAG_OPTIONS: [&str; 20] = [
    "-p",
    "-P",
    "--paginate",
    "--no-pager",
    "--bare",
    "--no-replace-objects",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-optional-locks",
    "--no-advice",
    "--no-lazy-fetch",
    "--exec-path",
    "--html-path",
    "--man-path",
    "--info-path",
    "--list-cmds",
    "-v",
    "--version",
];

/// git's built-in commands (`git --list-cmds=builtins`): an alias never replaces them.
const BUILTINS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "backfill",
    "bisect",
    "blame",
    "branch",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "credential-cache",
    "credential-store",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fast-export",
    "fast-import",
    "fetch",
    "fetch-pack",
    "fmt-merge-msg",
    "for-each-ref",
    "for-each-repo",
    "format-patch",
    "fsck",
    "fsck-objects",
    "gc",
    "get-tar-commit-id",
    "grep",
    "hash-object",
    "help",
    "hook",
    "index-pack",
    "init",
    "init-db",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-index",
    "merge-ours",
    "merge-recursive",
    "merge-subtree",
    "merge-tree",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "name-rev",
    "notes",
    "pack-objects",
    "pack-redundant",
    "pack-refs",
    "patch-id",
    "prune",
    "prune-packed",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "receive-pack",
    "reflog",
    "refs",
    "remote",
    "remote-ext",
    "remote-fd",
    "repack",
    "replace",
    "replay",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "send-pack",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "sparse-checkout",
    "stage",
    "stash",
    "status",
    "stripspace",
    "switch",
    "symbolic-ref",
    "tag",
    "unpack-file",
    "unpack-objects",
    "update-index",
    "update-ref",
    "update-server-info",
    "upload-archive",
    "upload-pack",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// Whether `name` is built into git (so no alias replaces it).
pub fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name)
}

/// How deep aliases may refer to aliases before the command is refused.
const ALIAS_DEPTH: usize = 8;

/// `git` followed by `args` as a deny rule reads it, and what else it runs: a `!` alias, a
/// program named by a setting (`-c core.pager=…`, `git config core.fsmonitor …`).
pub fn plain(args: &[Word]) -> (Vec<Word>, Vec<Inner>) {
    let mut inner = Vec::new();
    let (words, script) = plain_at(args, &mut Vec::new(), &mut inner, 0);
    inner.extend(script);
    if words.get(1).and_then(Word::known) == Some("config") {
        inner.extend(config_writes(&words[2..]));
    }
    let ext = args.iter().chain(&words).find_map(|word| {
        let text = word.known()?.to_ascii_lowercase();
        text.contains("ext::").then(|| {
            Inner::Opaque(format!(
                "git's `ext::` transport runs a command: {}",
                written(word)
            ))
        })
    });
    inner.extend(ext);
    if let Some(Word::Known(subcommand)) = words.get(1) {
        inner.extend(option_commands(subcommand, &words[2..]));
        inner.extend(runs_git_or_command(subcommand, &words[2..]));
    }
    (words, inner)
}

/// `git bisect run CMD…` runs a command; `git for-each-repo [--config=KEY] ARGS…` runs
/// `git ARGS…` in each repository the setting lists.
fn runs_git_or_command(subcommand: &str, args: &[Word]) -> Option<Inner> {
    match subcommand {
        "bisect" if args.first().and_then(Word::known) == Some("run") => {
            Some(Inner::Run(args[1..].to_vec()))
        }
        "for-each-repo" => {
            let mut index = 0;
            while let Some(arg) = args.get(index) {
                match arg.known() {
                    None => {
                        return Some(Inner::Opaque(format!(
                            "`git for-each-repo` runs {}, which is only known when it runs",
                            written(arg)
                        )));
                    }
                    Some("--") => {
                        index += 1;
                        break;
                    }
                    Some("--config") => index += 2,
                    Some(option) if option.starts_with('-') => index += 1,
                    Some(_) => break,
                }
            }
            let mut command = vec![Word::Known("git".into())];
            command.extend(args.get(index..).unwrap_or_default().iter().cloned());
            Some(Inner::Run(command))
        }
        _ => None,
    }
}

/// Which of `options` `arg` is, and its value when attached (`--exec=CMD`, `-xCMD`).
fn command_option<'a>(
    options: &[&'static str],
    arg: &'a str,
) -> Option<(&'static str, Option<&'a str>)> {
    if let Some(long) = arg.strip_prefix("--") {
        let (name, attached) = match long.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (long, None),
        };
        let option = options.iter().find(|o| {
            !name.is_empty() && o.strip_prefix("--").is_some_and(|o| o.starts_with(name))
        })?;
        return Some((option, attached));
    }
    let cluster = arg.strip_prefix('-')?;
    let (at, option) = cluster.char_indices().find_map(|(at, letter)| {
        let option = options
            .iter()
            .find(|o| o.len() == 2 && o.ends_with(letter))?;
        Some((at, *option))
    })?;
    let attached = &cluster[at + 1..];
    Some((option, (!attached.is_empty()).then_some(attached)))
}

/// Options of git's own commands whose value is a command git runs with the shell.
fn command_options(subcommand: &str) -> &'static [&'static str] {
    match subcommand {
        "clone" => &["-u", "--upload-pack", "--template"],
        "init" | "init-db" => &["--template"],
        "fetch" | "pull" => &["--upload-pack"],
        "ls-remote" | "fetch-pack" => &["--upload-pack", "--exec"],
        "push" | "send-pack" => &["--receive-pack", "--exec"],
        "archive" => &["--exec"],
        "rebase" => &["-x", "--exec"],
        "difftool" => &["-x", "--extcmd"],
        "grep" => &["-O", "--open-files-in-pager"],
        _ => &[],
    }
}

/// The commands that options of `git SUBCOMMAND` name. git accepts a long option by any
/// unambiguous prefix (`--upload` is `--upload-pack`) and short ones in clusters (`-ix CMD`), so
/// both are read that way; where its arguments are only known when it runs, it is refused.
fn option_commands(subcommand: &str, args: &[Word]) -> Vec<Inner> {
    let options = command_options(subcommand);
    if options.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let Some(arg) = word.known() else {
            return vec![Inner::Opaque(format!(
                "`git {subcommand}` may run one of its arguments as a command, and {} is only known when it runs",
                written(word)
            ))];
        };
        if arg == "--" {
            break;
        }
        let Some((option, attached)) = command_option(options, arg) else {
            continue;
        };
        let value = match attached {
            Some(value) => Some(Word::Known(value.to_string())),
            // `-O` takes its value attached or not at all.
            None if option == "-O" => continue,
            None => words.next().cloned(),
        };
        out.push(match value {
            Some(Word::Known(_)) if option == "--template" => Inner::Opaque(format!(
                "`git {subcommand} {arg}` installs hooks that git runs later"
            )),
            Some(Word::Known(command)) => Inner::Script(command, Dialect::Posix),
            Some(Word::Unknown(written)) => Inner::Opaque(format!(
                "`git {subcommand} {arg}` runs {written}, which is only known when it runs"
            )),
            None => Inner::Opaque(format!("`git {subcommand} {arg}` runs a command")),
        });
    }
    out
}

/// `git config [options] key value`: the settings it may write. Every word that looks like a
/// key is read as one, the next word as its value.
fn config_writes(args: &[Word]) -> Vec<Inner> {
    let is_key = |word: &Word| {
        word.known()
            .is_some_and(|w| w.contains('.') && !w.starts_with('-'))
    };
    // An unknown word that is not a key's value may be a key itself.
    let unknown_key = args
        .iter()
        .enumerate()
        .find_map(|(index, word)| match word {
            Word::Unknown(written) if index == 0 || !is_key(&args[index - 1]) => Some(written),
            _ => None,
        });
    if let Some(written) = unknown_key {
        return vec![Inner::Opaque(format!(
            "`git config` is given {written}, which is only known when it runs"
        ))];
    }
    args.windows(2)
        .filter(|pair| is_key(&pair[0]))
        .filter_map(|pair| programs::git_setting(pair[0].known()?, &pair[1]))
        .collect()
}

fn plain_at(
    args: &[Word],
    aliases: &mut Vec<(String, Word)>,
    inner: &mut Vec<Inner>,
    depth: usize,
) -> (Vec<Word>, Option<Inner>) {
    let git = Word::Known("git".into());
    let unknown = |why: String| (vec![git.clone(), Word::Unknown(why)], None);
    if depth > ALIAS_DEPTH {
        return unknown("(aliases nested too deeply)".into());
    }
    let mut rest = args.iter();
    let subcommand = loop {
        let Some(word) = rest.next() else {
            return (vec![git], None);
        };
        let Some(option) = word.known() else {
            return unknown(written(word));
        };
        let name = option.split('=').next().unwrap_or(option);
        if VALUE_OPTIONS.contains(&name) {
            let value = if option.contains('=') {
                Some(Word::Known(option[name.len() + 1..].to_string()))
            } else {
                rest.next().cloned()
            };
            if let Some(Word::Unknown(written)) = &value {
                // Several words, perhaps, one of them the subcommand.
                if name != "-c" && name != "--config-env" {
                    return unknown(written.clone());
                }
            }
            if name == "-c" || name == "--config-env" {
                define(name, value, aliases, inner);
            }
        } else if FLAG_OPTIONS.contains(&name) {
        } else if option.starts_with('-') {
            return unknown(format!("the git option `{option}`"));
        } else {
            break option;
        }
    };
    let rest: Vec<Word> = rest.cloned().collect();
    if BUILTINS.contains(&subcommand) {
        let mut words = vec![git, Word::Known(subcommand.to_string())];
        words.extend(rest);
        return (words, None);
    }
    let alias = aliases
        .iter()
        .rev()
        .find(|(name, _)| name.eq_ignore_ascii_case(subcommand) || name == "*")
        .map(|(_, value)| value.clone());
    match alias {
        Some(Word::Known(value)) => expand(subcommand, &value, &rest, aliases, inner, depth),
        Some(Word::Unknown(why)) => unknown(why),
        None => unknown(format!(
            "`git {subcommand}` (not built into git: it may be an alias)"
        )),
    }
}

/// Record `-c alias.X=V` (or `--config-env=alias.X=ENV`, whose value is unknown), and what
/// a setting that names a program runs.
fn define(
    option: &str,
    value: Option<Word>,
    aliases: &mut Vec<(String, Word)>,
    inner: &mut Vec<Inner>,
) {
    match value {
        Some(Word::Known(setting)) => {
            let (key, value) = setting.split_once('=').unwrap_or((&setting, "true"));
            let value = if option == "-c" {
                Word::Known(value.to_string())
            } else {
                Word::Unknown(format!("`{option} {setting}`'s value"))
            };
            let Some((section, name)) = key.split_once('.') else {
                return;
            };
            if section.eq_ignore_ascii_case("alias") {
                aliases.push((name.to_string(), value));
            } else {
                inner.extend(programs::git_setting(key, &value));
            }
        }
        // Any alias at all might be defined here.
        Some(Word::Unknown(written)) => {
            inner.push(Inner::Opaque(format!(
                "it sets git configuration to {written}, which is only known when it runs"
            )));
            aliases.push(("*".into(), Word::Unknown(written)));
        }
        None => {}
    }
}

fn expand(
    name: &str,
    value: &str,
    rest: &[Word],
    aliases: &mut Vec<(String, Word)>,
    inner: &mut Vec<Inner>,
    depth: usize,
) -> (Vec<Word>, Option<Inner>) {
    let git = Word::Known("git".into());
    if let Some(script) = value.strip_prefix('!') {
        // git runs `!…` with sh, the alias' arguments appended.
        let mut script = script.to_string();
        for word in rest {
            match word {
                Word::Known(text) => {
                    script.push(' ');
                    script.push_str(&quote(text));
                }
                Word::Unknown(written) => {
                    return (vec![git, Word::Unknown(written.clone())], None);
                }
            }
        }
        return (
            vec![git, Word::Known(name.to_string())],
            Some(Inner::Script(script, Dialect::Posix)),
        );
    }
    // git splits an alias with its own quoting rules: only plain words are followed here.
    if value.contains(['"', '\'', '\\']) {
        return (
            vec![git, Word::Unknown(format!("the alias `{name}={value}`"))],
            None,
        );
    }
    let mut args: Vec<Word> = value
        .split_whitespace()
        .map(|w| Word::Known(w.to_string()))
        .collect();
    args.extend(rest.iter().cloned());
    plain_at(&args, aliases, inner, depth + 1)
}

fn written(word: &Word) -> String {
    match word {
        Word::Known(text) => format!("`{text}`"),
        Word::Unknown(written) => written.clone(),
    }
}

/// `text` single-quoted for sh.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}
