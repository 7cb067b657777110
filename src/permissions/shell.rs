//! Just enough shell syntax to judge a command by its parts: `a && b; c | d` is four simple
//! commands, and a rule that allows `a*` must not let `b`, `c` or `d` through with it.

/// One simple command of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub text: String,
    /// It redirects output into a file (`> f`, `>> f`); `2>&1` is not a file.
    pub writes_file: bool,
}

/// Split `command` on `;`, `&&`, `||`, `|`, `&` and newlines outside quotes. `None` when it
/// substitutes commands (`$(…)`, backticks, `<(…)`), whose parts cannot be judged from here.
pub fn split(command: &str) -> Option<Vec<Part>> {
    let chars: Vec<char> = command.chars().collect();
    let mut parts = Vec::new();
    let mut current = Part {
        text: String::new(),
        writes_file: false,
    };
    let (mut single, mut double) = (false, false);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if single {
            single = c != '\'';
            current.text.push(c);
            i += 1;
            continue;
        }
        if c == '\\' {
            current.text.push(c);
            current.text.extend(next);
            i += 2;
            continue;
        }
        if c == '`' || (c == '$' && next == Some('(')) {
            return None;
        }
        if double {
            double = c != '"';
            current.text.push(c);
            i += 1;
            continue;
        }
        match c {
            '\'' => single = true,
            '"' => double = true,
            '<' | '>' if next == Some('(') => return None,
            // `>&2`, `2>&1`: a file descriptor, not a file.
            '>' if next != Some('&') => current.writes_file = true,
            '&' if i > 0 && chars[i - 1] == '>' => {}
            ';' | '\n' | '&' | '|' => {
                finish(&mut parts, &mut current);
                // `&&`, `||`: one operator.
                if next == Some(c) {
                    i += 1;
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        current.text.push(c);
        i += 1;
    }
    finish(&mut parts, &mut current);
    Some(parts)
}

/// Wrappers that run the command after them unchanged.
const PREFIXES: [&str; 7] = ["env", "command", "exec", "nohup", "time", "builtin", "sudo"];
/// git options that take a value as the next word.
const GIT_VALUE_OPTIONS: [&str; 4] = ["-c", "-C", "--git-dir", "--work-tree"];

/// The command a part runs, spelled plainly for deny rules: no `VAR=x` or `env`/`command`
/// prefixes, no directory on the program, no quotes, and for git no global options before the
/// subcommand (`git -c x=y push` is `git push`). A best effort, not a shell.
pub fn normalized(part: &str) -> String {
    let words: Vec<String> = part
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '\'' || c == '"').to_string())
        .collect();
    let mut rest = words.as_slice();
    while let Some((first, tail)) = rest.split_first() {
        let is_assignment = first.contains('=') && !first.starts_with('-');
        if is_assignment || PREFIXES.contains(&first.as_str()) {
            rest = tail;
        } else {
            break;
        }
    }
    let Some((program, args)) = rest.split_first() else {
        return String::new();
    };
    let program = program.rsplit('/').next().unwrap_or(program).to_string();
    let mut out = vec![program.clone()];
    let mut args = args.iter();
    if program == "git" {
        // Skip global options up to the subcommand.
        while let Some(arg) = args.clone().next() {
            if !arg.starts_with('-') {
                break;
            }
            args.next();
            if GIT_VALUE_OPTIONS.contains(&arg.as_str()) {
                args.next();
            }
        }
    }
    out.extend(args.cloned());
    out.join(" ")
}

fn finish(parts: &mut Vec<Part>, current: &mut Part) {
    let text = current.text.trim().to_string();
    if !text.is_empty() {
        parts.push(Part {
            text,
            writes_file: current.writes_file,
        });
    }
    *current = Part {
        text: String::new(),
        writes_file: false,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(command: &str) -> Option<Vec<String>> {
        split(command).map(|parts| parts.into_iter().map(|p| p.text).collect())
    }

    #[test]
    fn splits_on_operators_outside_quotes() {
        assert_eq!(
            texts("cargo test; rm -rf x && echo 'a;b' || grep \"x|y\" f | wc -l &"),
            Some(vec![
                "cargo test".to_string(),
                "rm -rf x".to_string(),
                "echo 'a;b'".to_string(),
                "grep \"x|y\" f".to_string(),
                "wc -l".to_string(),
            ])
        );
    }

    #[test]
    fn substitutions_cannot_be_judged() {
        assert_eq!(texts("echo $(curl x)"), None);
        assert_eq!(texts("echo `id`"), None);
        assert_eq!(texts("diff <(ls a) <(ls b)"), None);
        assert_eq!(
            texts("echo '$(not run)'"),
            Some(vec!["echo '$(not run)'".to_string()])
        );
    }

    #[test]
    fn file_redirects_are_noticed_but_descriptor_copies_are_not() {
        let parts = split("cargo test 2>&1").unwrap_or_default();
        assert_eq!(parts.len(), 1);
        assert!(!parts[0].writes_file);
        let parts = split("cargo test > log.txt").unwrap_or_default();
        assert!(parts[0].writes_file);
    }

    #[test]
    fn normalized_drops_wrappers_and_git_global_options() {
        assert_eq!(
            normalized("git -c x.y=1 push origin main"),
            "git push origin main"
        );
        assert_eq!(
            normalized("GIT_TRACE=1 env /usr/bin/git -C . --no-pager push -f"),
            "git push -f"
        );
        assert_eq!(normalized("command 'rm' -rf build"), "rm -rf build");
        assert_eq!(normalized("cargo test"), "cargo test");
    }
}
