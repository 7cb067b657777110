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
}
