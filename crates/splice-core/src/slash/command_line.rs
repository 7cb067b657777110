//! Arguments in a `` !`command` ``: data, never shell syntax. Each placeholder is quoted for
//! the place it stands in (unquoted: each word single-quoted; inside `'…'` or `"…"`: escaped
//! for that quote), so an argument can add no command, redirection or expansion. Where the
//! quoting could be misread (a placeholder in a command that substitutes commands, has a
//! here-document, a comment or `${…}`), the command is refused; and the line as it will run
//! must read, to the shell grammar, as the same commands as the line with plain words in the
//! placeholders' places, else it is refused too.

use super::args::{self, Arguments, Placeholder};
use crate::permissions::shell;

/// A command line with the arguments in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    /// An argument was put in (a value not empty): the line is partly the invoker's text.
    pub with_arguments: bool,
}

/// Where a placeholder stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Single,
    Double,
}

/// Syntax whose quoting rules differ from the three above: a placeholder near it is refused.
const UNCERTAIN: &[(&str, &str)] = &[
    ("$(", "a command substitution"),
    ("${", "a `${…}` expansion"),
    ("<(", "a process substitution"),
    (">(", "a process substitution"),
    ("<<", "a here-document"),
    ("$'", "a `$'…'` string"),
    ("$\"", "a `$\"…\"` string"),
];

/// `template` (a `` !`…` `` of a command file) with `arguments` in its placeholders, or why
/// it cannot take them safely.
pub fn substitute(template: &str, arguments: &Arguments<'_>) -> Result<Line, String> {
    if !args::names_any(template) {
        return Ok(Line {
            text: template.to_string(),
            with_arguments: false,
        });
    }
    if let Some((_, what)) = UNCERTAIN.iter().find(|(s, _)| template.contains(s)) {
        return Err(format!(
            "takes arguments and has {what}, where Splice cannot quote them with certainty"
        ));
    }
    let (text, with_arguments) = fill(template, |p, quote| quoted(arguments, p, quote))?;
    // The same line with a plain word for each argument given: what the file's author wrote.
    let (plain, _) = fill(template, |p, _| {
        let value = if arguments.value(p).is_empty() {
            ""
        } else {
            "x"
        };
        value.to_string()
    })?;
    if !same_commands(&plain, &text) {
        return Err("would be read by the shell differently once the arguments are in".into());
    }
    Ok(Line {
        text,
        with_arguments,
    })
}

/// The template with each placeholder replaced by `value` of it where it stands, and whether
/// any value was not empty.
fn fill(
    template: &str,
    mut value: impl FnMut(Placeholder, Quote) -> String,
) -> Result<(String, bool), String> {
    let mut out = String::with_capacity(template.len());
    let mut quote = Quote::None;
    let mut any = false;
    let mut previous: Option<char> = None;
    let mut chars = template.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match (quote, c) {
            (Quote::None | Quote::Double, '\\') => {
                out.push(c);
                if let Some((_, next)) = chars.next() {
                    out.push(next);
                }
                previous = None;
                continue;
            }
            (Quote::None, '#')
                if previous.is_none_or(|p| p.is_whitespace() || ";&|()".contains(p)) =>
            {
                return Err("takes arguments and has a comment".into());
            }
            (_, '$') => {
                if let Some((found, len)) = args::placeholder(&template[at + 1..]) {
                    let text = value(found, quote);
                    any |= !text.is_empty() && !matches!(text.as_str(), "''" | "\"\"");
                    out.push_str(&text);
                    // Skip the placeholder's name.
                    for _ in 0..len {
                        chars.next();
                    }
                    previous = Some('x');
                    continue;
                }
            }
            _ => {}
        }
        quote = match (quote, c) {
            (Quote::None, '\'') => Quote::Single,
            (Quote::None, '"') => Quote::Double,
            (Quote::Single, '\'') | (Quote::Double, '"') => Quote::None,
            (current, _) => current,
        };
        out.push(c);
        previous = Some(c);
    }
    if quote != Quote::None {
        return Err("takes arguments and has a quote that is not closed".into());
    }
    Ok((out, any))
}

/// `placeholder`'s value quoted for where it stands.
fn quoted(arguments: &Arguments<'_>, placeholder: Placeholder, quote: Quote) -> String {
    match (quote, placeholder) {
        // Unquoted, `$ARGUMENTS` is its words, each one word still.
        (Quote::None, Placeholder::All) => arguments
            .words
            .iter()
            .map(|w| shell::quote_word(w))
            .collect::<Vec<_>>()
            .join(" "),
        (Quote::None, Placeholder::Word(index)) => arguments
            .words
            .get(index)
            .map(|w| shell::quote_word(w))
            .unwrap_or_default(),
        // In `'…'`: close it, an escaped quote, open it again.
        (Quote::Single, p) => arguments.value(p).replace('\'', "'\\''"),
        // In `"…"`: the four characters that are special there, escaped.
        (Quote::Double, p) => {
            let mut out = String::new();
            for c in arguments.value(p).chars() {
                if matches!(c, '\\' | '"' | '$' | '`') {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        }
    }
}

/// Whether two lines read as the same commands: as many simple commands, as many at the top,
/// the same substitutions, both parsed (or neither) and both seen through (or neither).
fn same_commands(plain: &str, filled: &str) -> bool {
    let (a, b) = (shell::analyze(plain), shell::analyze(filled));
    a.commands.len() == b.commands.len()
        && a.parts.len() == b.parts.len()
        && a.substitutes == b.substitutes
        && a.broken == b.broken
        && a.opaque.is_some() == b.opaque.is_some()
        && a.parts
            .iter()
            .zip(&b.parts)
            .all(|(x, y)| x.writes_file == y.writes_file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(template: &str, arguments: &str) -> Result<Line, String> {
        substitute(template, &Arguments::new(arguments))
    }

    #[test]
    fn arguments_are_quoted_for_where_they_stand() {
        let filled = line("git diff $1 -- $ARGUMENTS", "a.rs 'b c'").expect("filled");
        assert_eq!(filled.text, "git diff a.rs -- a.rs 'b c'");
        assert!(filled.with_arguments);
        let filled = line("echo marker-$1", "x;id").expect("filled");
        assert_eq!(filled.text, "echo marker-'x;id'");
        let filled = line("git commit -m \"$ARGUMENTS\"", "say \"hi\" $(id) `id`").expect("filled");
        assert_eq!(
            filled.text,
            "git commit -m \"say \\\"hi\\\" \\$(id) \\`id\\`\""
        );
        let filled = line("grep '$1' f", "\"it's\"").expect("filled");
        assert_eq!(filled.text, "grep 'it'\\''s' f");
        let none = line("git status", "x; id").expect("no placeholder");
        assert_eq!(none.text, "git status");
        assert!(!none.with_arguments);
        let empty = line("git log $1", "").expect("no argument");
        assert_eq!(empty.text, "git log ");
        assert!(!empty.with_arguments);
        // A `$` that is no placeholder, and one escaped, stay.
        let kept = line("echo $HOME \\$1 $1", "a").expect("filled");
        assert_eq!(kept.text, "echo $HOME \\$1 a");
    }

    #[test]
    fn what_could_be_misread_is_refused() {
        for template in [
            "echo \"$(echo \"$1\")\"",
            "cat <<EOF\n$1\nEOF",
            "echo ${x:-$1}",
            "echo x # $1",
            "echo $'$1'",
            "echo '$1",
        ] {
            assert!(line(template, "a\nid > PWNED").is_err(), "{template}");
        }
    }
}
