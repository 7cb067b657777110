//! What a program does with its arguments, for the programs that run other commands: wrappers
//! (`nice`, `timeout`, `env`, `xargs`, `find -exec`…), shells given a script (`sh -c`), git's
//! aliases. Every option each one takes is listed, so a value is never taken for the command;
//! an option not listed makes the command unknown, which fails closed.

use super::words::Word;

/// Which shell reads a script. `sh` may be dash, which reads bash syntax differently (`$'…'`,
/// `&>`, `[[`), so a script for `sh` is read as bash but refused where the two part ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Posix,
    Bash,
}

/// Something a command runs besides itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inner {
    /// A command, as words.
    Run(Vec<Word>),
    /// A shell script, as text (`sh -c`, a git `!` alias), and the shell that reads it.
    Script(String, Dialect),
    /// Something that cannot be seen through, and why.
    Opaque(String),
}

/// How a wrapper's options are spelled: short letters without and with a value (`-n 5`,
/// `-n5`), letters whose value may only be attached (`-i{}`), long names without and with a
/// value (`--signal KILL`, `--signal=KILL`); then how many operands come before the command.
struct Options {
    short_flags: &'static str,
    short_values: &'static str,
    short_attached: &'static str,
    long_flags: &'static [&'static str],
    long_values: &'static [&'static str],
    operands: usize,
}

const NONE: Options = Options {
    short_flags: "",
    short_values: "",
    short_attached: "",
    long_flags: &[],
    long_values: &[],
    operands: 0,
};

/// Wrappers that run the command after their options (and operands) with its words unchanged.
fn wrapper(program: &str) -> Option<Options> {
    Some(match program {
        "nohup" | "builtin" | "busybox" => NONE,
        "nice" => Options {
            short_values: "n",
            long_values: &["adjustment"],
            ..NONE
        },
        "timeout" => Options {
            short_flags: "v",
            short_values: "sk",
            long_flags: &["preserve-status", "foreground", "verbose"],
            long_values: &["signal", "kill-after"],
            operands: 1,
            ..NONE
        },
        "env" => Options {
            short_flags: "i0v",
            short_values: "uC",
            long_flags: &[
                "ignore-environment",
                "null",
                "debug",
                "list-signal-handling",
                "default-signal",
                "ignore-signal",
                "block-signal",
            ],
            long_values: &["unset", "chdir"],
            ..NONE
        },
        "command" => Options {
            short_flags: "pvV",
            ..NONE
        },
        "exec" => Options {
            short_flags: "cl",
            short_values: "a",
            ..NONE
        },
        "stdbuf" => Options {
            short_values: "ioe",
            long_values: &["input", "output", "error"],
            ..NONE
        },
        "time" => Options {
            short_flags: "pavq",
            short_values: "fo",
            long_flags: &["append", "verbose", "quiet", "portability"],
            long_values: &["format", "output"],
            ..NONE
        },
        "setsid" => Options {
            short_flags: "cfw",
            long_flags: &["ctty", "fork", "wait"],
            ..NONE
        },
        "sudo" => Options {
            short_flags: "AbEeHiKklnPSsV",
            short_values: "CDghpRrTtUu",
            long_flags: &[
                "askpass",
                "background",
                "edit",
                "preserve-env",
                "set-home",
                "login",
                "remove-timestamp",
                "reset-timestamp",
                "non-interactive",
                "preserve-groups",
                "stdin",
                "shell",
                "validate",
                "list",
            ],
            long_values: &[
                "close-from",
                "chdir",
                "group",
                "host",
                "prompt",
                "chroot",
                "role",
                "type",
                "command-timeout",
                "other-user",
                "user",
            ],
            ..NONE
        },
        "doas" => Options {
            short_flags: "nsL",
            short_values: "uC",
            ..NONE
        },
        _ => return None,
    })
}

const XARGS: Options = Options {
    short_flags: "0oprtx",
    short_values: "adEILnPs",
    short_attached: "eil",
    long_flags: &[
        "null",
        "open-tty",
        "interactive",
        "no-run-if-empty",
        "verbose",
        "exit",
        "show-limits",
        "eof",
        "replace",
        "max-lines",
    ],
    long_values: &[
        "arg-file",
        "delimiter",
        "max-args",
        "max-procs",
        "max-chars",
        "process-slot-var",
    ],
    operands: 0,
};

const SHELLS: [&str; 13] = [
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "posh", "yash", "rbash", "fish", "csh",
    "tcsh",
];
const INTERPRETERS: [&str; 9] = [
    "python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua",
];
/// Programs that take commands from standard input whatever their arguments, shell commands
/// among them (`!cmd` in ed and ex, `.shell` in sqlite3, `!` in dc): refused outright.
const INPUT_COMMANDERS: [&str; 8] = ["ed", "red", "ex", "vi", "vim", "nvim", "sqlite3", "dc"];
/// Builtins that run text the rules cannot see: refused outright.
const EVALUATORS: [&str; 7] = ["eval", "source", ".", "alias", "fc", "enable", "bind"];

/// `/usr/bin/git` runs `git`.
pub fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// What `words` (program first, directory already dropped) runs besides itself.
pub fn inner(words: &[Word]) -> Vec<Inner> {
    let Some((Word::Known(program), args)) = words.split_first() else {
        return Vec::new();
    };
    let program = program.as_str();
    if let Some(options) = wrapper(program) {
        return vec![after_options(program, &options, args)];
    }
    // bash evaluates `let`'s arguments, and the values of the variables they name, as
    // arithmetic, where `a[$(…)]` runs a command.
    if EVALUATORS.contains(&program) || program == "let" {
        return vec![Inner::Opaque(format!("it runs `{program}`"))];
    }
    if matches!(program, "mapfile" | "readarray" | "complete" | "compgen")
        && args
            .iter()
            .any(|a| a.known().is_none_or(|a| a.starts_with("-C")))
    {
        return vec![Inner::Opaque(format!("`{program} -C` runs a command"))];
    }
    if let Some(opaque) = variable_names(program, args) {
        return vec![opaque];
    }
    if program == "rg"
        && args.iter().any(|a| {
            a.known()
                .is_some_and(|a| a == "--pre" || a.starts_with("--pre="))
        })
    {
        return vec![Inner::Opaque(
            "`rg --pre` runs a command on each file".into(),
        )];
    }
    if SHELLS.contains(&program) {
        return vec![shell(program, args)];
    }
    if INPUT_COMMANDERS.contains(&program) {
        return vec![Inner::Opaque(format!(
            "`{program}` reads commands from standard input, and runs shell commands among them"
        ))];
    }
    if INTERPRETERS.contains(&program) || program.starts_with("python3.") {
        return interpreter(program, args).into_iter().collect();
    }
    match program {
        "xargs" => vec![xargs(args)],
        "find" => find(args),
        "trap" => trap(args),
        _ => Vec::new(),
    }
}

/// bash builtins given variable names: bash evaluates the subscript of a name like `a[…]` as
/// arithmetic, and `$(…)` in it runs a command (`printf -v "a[\$(cmd)]" x`). A name only known
/// when it runs may hold one.
pub fn variable_names(program: &str, args: &[Word]) -> Option<Inner> {
    let names: Vec<Word> = match program {
        "printf" | "test" | "[" | "wait" => {
            let flag = if program == "wait" { "-p" } else { "-v" };
            let mut names = Vec::new();
            for (index, arg) in args.iter().enumerate() {
                match arg.known().and_then(|a| a.strip_prefix(flag)) {
                    Some("") => names.extend(args.get(index + 1).cloned()),
                    Some(attached) if program == "printf" => {
                        names.push(Word::Known(attached.to_string()))
                    }
                    _ => {}
                }
            }
            names
        }
        "declare" | "typeset" | "local"
            if args.iter().any(|a| {
                a.known()
                    .is_some_and(|a| a.starts_with('-') && a.contains('n'))
            }) =>
        {
            // A name reference: assigning to it sets the variable it names.
            return Some(Inner::Opaque(format!(
                "`{program} -n` makes a name that sets another variable"
            )));
        }
        "read" | "mapfile" | "readarray" | "getopts" | "unset" | "declare" | "typeset"
        | "local" | "export" | "readonly" => args.to_vec(),
        _ => return None,
    };
    // A variable that names a command (`read GIT_EDITOR`) gets a value only known when it runs.
    let unknown = Word::Unknown(format!("what `{program}` sets"));
    if let Some(effect) = names
        .iter()
        .filter_map(Word::known)
        .find_map(|name| assignment(name, &unknown))
    {
        return Some(effect);
    }
    names.into_iter().find_map(|name| match name {
        Word::Unknown(written) => Some(Inner::Opaque(format!(
            "`{program}` is given {written} as a variable name, which is only known when it runs (bash evaluates `a[$(…)]` in a name)"
        ))),
        Word::Known(name) => name
            .find('[')
            .is_some_and(|at| name[at..].contains(['$', '`']))
            .then(|| {
                Inner::Opaque(format!(
                    "`{program}` is given the variable name `{name}`, whose subscript bash evaluates, running what it substitutes"
                ))
            }),
    })
}

/// The command after a wrapper's options and operands (and, for `env`, its assignments).
fn after_options(program: &str, options: &Options, args: &[Word]) -> Inner {
    let mut index = match skip_options(program, options, args) {
        Ok(index) => index,
        Err(reason) => return Inner::Opaque(reason),
    };
    for _ in 0..options.operands {
        if args.get(index).is_some_and(|a| a.known().is_none()) {
            return Inner::Opaque(format!(
                "`{program}`'s operands are only known when it runs"
            ));
        }
        index += 1;
    }
    let mut effects = Vec::new();
    if program == "env" {
        while let Some((name, value)) = args
            .get(index)
            .and_then(Word::known)
            .and_then(|a| a.split_once('='))
            .filter(|(name, _)| !name.is_empty())
        {
            effects.extend(assignment(name, &Word::Known(value.to_string())));
            index += 1;
        }
    }
    // A setting that runs something is refused with the command rather than followed: `env`
    // assignments are rare enough.
    if let Some(effect) = effects.into_iter().next() {
        return match effect {
            Inner::Script(..) => Inner::Opaque(format!(
                "`{program}` sets a variable whose value is a command"
            )),
            other => other,
        };
    }
    Inner::Run(args.get(index..).unwrap_or_default().to_vec())
}

/// The index of the first word after the options. An option not in `options`, or one only
/// known when it runs, is an error: its value could be taken for the command.
fn skip_options(program: &str, options: &Options, args: &[Word]) -> Result<usize, String> {
    let unknown =
        |option: &str| format!("`{program}` has an option Splice does not know: `{option}`");
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        let Some(arg) = arg.known() else {
            return Err(format!(
                "`{program}`'s arguments are only known when it runs"
            ));
        };
        if arg == "--" {
            return Ok(index + 1);
        }
        if program == "env" && arg == "-" {
            index += 1;
            continue;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            if options.long_values.contains(&name) {
                if !long.contains('=') {
                    index += 1;
                    value_known(program, args.get(index))?;
                }
                index += 1;
            } else if options.long_flags.contains(&name) {
                index += 1;
            } else {
                return Err(unknown(arg));
            }
            continue;
        }
        let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) else {
            return Ok(index);
        };
        // `nice -10`: an adjustment.
        if program == "nice" && cluster.chars().all(|c| c.is_ascii_digit()) {
            index += 1;
            continue;
        }
        index += 1;
        for (at, letter) in cluster.char_indices() {
            if options.short_flags.contains(letter) {
                continue;
            }
            if options.short_attached.contains(letter) {
                break;
            }
            if options.short_values.contains(letter) {
                if at + letter.len_utf8() == cluster.len() {
                    value_known(program, args.get(index))?;
                    index += 1;
                }
                break;
            }
            return Err(unknown(arg));
        }
    }
    Ok(index)
}

/// An option's value only known when it runs may be several words, one of them the command.
fn value_known(program: &str, value: Option<&Word>) -> Result<(), String> {
    match value {
        Some(Word::Unknown(written)) => Err(format!(
            "`{program}` is given {written}, which is only known when it runs"
        )),
        _ => Ok(()),
    }
}

/// `sh -c SCRIPT`, `bash -lc SCRIPT`: the script. A shell reading its script from standard
/// input (`… | sh`, `sh <<EOF`) cannot be checked. A script file is not read (see
/// docs/security.md).
fn shell(program: &str, args: &[Word]) -> Inner {
    let mut command = false;
    let mut stdin = false;
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        let Some(arg) = arg.known() else {
            return Inner::Opaque(format!(
                "`{program}`'s arguments are only known when it runs"
            ));
        };
        index += 1;
        if arg == "--" || arg == "-" {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            if matches!(long, "rcfile" | "init-file") {
                index += 1;
            }
            continue;
        }
        let Some(cluster) = arg
            .strip_prefix('-')
            .or_else(|| arg.strip_prefix('+'))
            .filter(|c| !c.is_empty())
        else {
            index -= 1;
            break;
        };
        for letter in cluster.chars() {
            match letter {
                'c' => command = true,
                's' => stdin = true,
                'o' | 'O' => index += 1,
                _ => {}
            }
        }
    }
    match (command, args.get(index)) {
        (true, Some(Word::Known(script))) => match dialect(program) {
            Some(dialect) => Inner::Script(script.clone(), dialect),
            None => Inner::Opaque(format!(
                "`{program} -c` runs a script in its own syntax, which Splice does not read"
            )),
        },
        (true, Some(Word::Unknown(written))) => Inner::Opaque(format!(
            "`{program} -c` runs {written}, which is only known when it runs"
        )),
        (false, Some(Word::Known(script))) if !stdin && !reads_input(script) => {
            Inner::Run(Vec::new())
        }
        _ => Inner::Opaque(format!("`{program}` reads its script from standard input")),
    }
}

/// How the shell `program` reads a `-c` script; `None` for shells whose syntax is not bash's
/// (fish and csh quote differently, zsh runs code from glob qualifiers): refused, not guessed.
fn dialect(program: &str) -> Option<Dialect> {
    match program {
        "sh" | "dash" | "ash" | "posh" => Some(Dialect::Posix),
        "bash" | "rbash" => Some(Dialect::Bash),
        _ => None,
    }
}

/// Whether a script path is standard input or another inherited descriptor (`/dev/stdin`,
/// `/dev/fd/0`, `/proc/self/fd/3`), so the program comes from a pipe or here-document.
fn reads_input(path: &str) -> bool {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    matches!(
        parts.as_slice(),
        ["dev", "stdin"] | ["dev", "fd", ..] | ["proc", ..]
    )
}

/// An interpreter with neither a script nor inline code reads its program from standard input
/// (`curl … | python3`).
fn interpreter(program: &str, args: &[Word]) -> Option<Inner> {
    let inline = ["-c", "-e", "-E", "-m", "-r", "--eval", "-p", "--print"];
    let reads_stdin = args.iter().all(|a| {
        a.known()
            .is_some_and(|a| a.starts_with('-') && !inline.contains(&a))
    }) || args
        .iter()
        .any(|a| a.known().is_some_and(|a| a == "-" || reads_input(a)));
    let unknown = args.iter().any(|a| a.known().is_none());
    (reads_stdin || unknown).then(|| {
        Inner::Opaque(format!(
            "`{program}` may read its program from standard input"
        ))
    })
}

/// `xargs [options] command…`: the command, with arguments from standard input appended (and
/// put in place of `-I` strings).
fn xargs(args: &[Word]) -> Inner {
    let index = match skip_options("xargs", &XARGS, args) {
        Ok(index) => index,
        Err(reason) => return Inner::Opaque(reason),
    };
    let mut command: Vec<Word> = args[index.min(args.len())..]
        .iter()
        .map(|w| match w {
            Word::Known(text) if text.contains("{}") => {
                Word::Unknown("the arguments xargs reads".into())
            }
            other => other.clone(),
        })
        .collect();
    if command.is_empty() {
        command.push(Word::Known("echo".into()));
    }
    command.push(Word::Unknown("the arguments xargs reads".into()));
    Inner::Run(command)
}

/// `find … -exec command… ;`: each command, `{}` standing for a found path.
fn find(args: &[Word]) -> Vec<Inner> {
    if let Some(Word::Unknown(written)) = args.iter().find(|a| a.known().is_none()) {
        return vec![Inner::Opaque(format!(
            "`find`'s expression holds {written}, which is only known when it runs"
        ))];
    }
    let mut out = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if !matches!(word.known(), Some("-exec" | "-execdir" | "-ok" | "-okdir")) {
            continue;
        }
        let mut command = Vec::new();
        for word in words.by_ref() {
            match word.known() {
                Some(";" | "+") => break,
                Some(text) if text.contains("{}") => {
                    command.push(Word::Unknown("the paths find passes".into()))
                }
                _ => command.push(word.clone()),
            }
        }
        out.push(Inner::Run(command));
    }
    out
}

/// `trap ACTION SIGNAL…`: the action is a script.
fn trap(args: &[Word]) -> Vec<Inner> {
    let action = args.iter().find(|a| a.known() != Some("--"));
    match action {
        Some(Word::Known(action)) if !action.starts_with('-') => {
            // Run by the shell at hand: read the stricter way.
            vec![Inner::Script(action.clone(), Dialect::Posix)]
        }
        Some(Word::Known(_)) | None => Vec::new(),
        Some(Word::Unknown(written)) => vec![Inner::Opaque(format!(
            "`trap` runs {written}, which is only known when it runs"
        ))],
    }
}

/// Programs whose arguments are never a command, so `echo git push` prints rather than pushes.
/// For any other program a later word may be a command it runs (`chrt 5 git push`).
pub fn may_run_arguments(program: &str) -> bool {
    !matches!(
        program,
        "echo"
            | "printf"
            | "grep"
            | "egrep"
            | "fgrep"
            | "rg"
            | "git"
            | "man"
            | "which"
            | "type"
            | "whatis"
            | "apropos"
            | "cat"
            | "ls"
            | "test"
            | "["
            | "true"
            | "false"
    )
}

/// Environment variables whose value is a command that git, ssh or a shell will run.
const COMMAND_VARIABLES: [&str; 20] = [
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_EXTERNAL_DIFF",
    "GIT_ASKPASS",
    "GIT_PROXY_COMMAND",
    "SSH_ASKPASS",
    "PAGER",
    "EDITOR",
    "VISUAL",
    "PROMPT_COMMAND",
    "MANPAGER",
    "LESSOPEN",
    "LESSCLOSE",
    "BROWSER",
    "SUDO_ASKPASS",
    "RSYNC_RSH",
    "FCEDIT",
];

/// Environment variables that point git or a shell at configuration or code the rules cannot
/// read (a config file can define aliases and hooks).
const OPAQUE_VARIABLES: [&str; 10] = [
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
    "GIT_ALLOW_PROTOCOL",
    "BASH_ENV",
    "ENV",
];

/// What setting `name=value` makes a later program run.
pub fn assignment(name: &str, value: &Word) -> Option<Inner> {
    if OPAQUE_VARIABLES.contains(&name) || name.starts_with("GIT_CONFIG_KEY_") {
        return Some(Inner::Opaque(format!("it sets `{name}`")));
    }
    if !COMMAND_VARIABLES.contains(&name) {
        return None;
    }
    Some(match value {
        // less runs `LESSOPEN='|cmd %s'` after its `|` (or `||`) and `-` markers.
        Word::Known(script) => Inner::Script(
            script.trim_start_matches(['|', '-']).to_string(),
            Dialect::Posix,
        ),
        Word::Unknown(written) => Inner::Opaque(format!(
            "it sets `{name}` to {written}, which is only known when it runs"
        )),
    })
}

/// What setting git's `key` to `value` (`git -c key=value`, `git config key value`) makes git
/// run: settings that name a program are scripts; includes and hook directories bring in
/// what the rules cannot read.
pub fn git_setting(key: &str, value: &Word) -> Option<Inner> {
    let key = key.to_ascii_lowercase();
    let section = key.split('.').next().unwrap_or_default();
    let name = key.rsplit('.').next().unwrap_or_default();
    // `protocol.ext.allow` lets a URL (`ext::sh -c …`) run a command.
    let opaque = matches!(section, "include" | "includeif")
        || key == "core.hookspath"
        || (section == "protocol" && name == "allow");
    if opaque {
        return Some(Inner::Opaque(format!("it sets git's `{key}`")));
    }
    let runs = match section {
        "core" => matches!(
            name,
            "pager"
                | "editor"
                | "sshcommand"
                | "fsmonitor"
                | "askpass"
                | "gitproxy"
                | "alternaterefscommand"
        ),
        "sequence" => name == "editor",
        "diff" => matches!(name, "external" | "textconv" | "command"),
        "difftool" | "mergetool" => name == "cmd",
        "browser" | "man" => matches!(name, "cmd" | "path"),
        "interactive" => name == "difffilter",
        "hook" => name == "command",
        "submodule" => name == "update",
        "merge" => name == "driver",
        "filter" => matches!(name, "clean" | "smudge" | "process"),
        "gpg" => name == "program",
        "credential" => name == "helper",
        "pager" => true,
        "uploadpack" => name == "packobjectshook",
        "remote" => matches!(name, "uploadpack" | "receivepack"),
        "sendemail" => matches!(name, "sendmailcmd" | "tocmd" | "cccmd" | "smtpserver"),
        "trailer" => matches!(name, "command" | "cmd"),
        _ => false,
    };
    if !runs {
        return None;
    }
    Some(match value {
        // git runs these with the shell; `!` marks a shell command for a few of them.
        Word::Known(script) => {
            Inner::Script(script.trim_start_matches('!').to_string(), Dialect::Posix)
        }
        Word::Unknown(written) => Inner::Opaque(format!(
            "it sets git's `{key}` to {written}, which is only known when it runs"
        )),
    })
}
