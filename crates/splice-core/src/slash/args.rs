//! A command's arguments in its body: `$ARGUMENTS` is all of them as typed, `$1` … `$9` each
//! word, split as a shell would (quotes group words, a backslash escapes). A body that names
//! none gets the arguments appended (`ARGUMENTS: …`), as Claude Code does, so they are never
//! dropped silently. Arguments are data: they are put in after the body was read for
//! `` !`…` `` commands and `@` files, so nothing in them is one.

/// A placeholder of a body: `$ARGUMENTS`, or `$1` … `$9` (the word's index from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholder {
    All,
    Word(usize),
}

/// The placeholder the text after a `$` starts with, and its length in bytes.
pub fn placeholder(after_dollar: &str) -> Option<(Placeholder, usize)> {
    if after_dollar.starts_with("ARGUMENTS") {
        return Some((Placeholder::All, "ARGUMENTS".len()));
    }
    let digit = after_dollar
        .chars()
        .next()
        .filter(|c| ('1'..='9').contains(c))?;
    Some((Placeholder::Word(digit as usize - '1' as usize), 1))
}

/// Whether `text` names any placeholder.
pub fn names_any(text: &str) -> bool {
    text.match_indices('$')
        .any(|(at, _)| placeholder(&text[at + 1..]).is_some())
}

/// The arguments of one invocation: as typed, and as words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arguments<'a> {
    pub raw: &'a str,
    pub words: Vec<String>,
}

impl<'a> Arguments<'a> {
    pub fn new(raw: &'a str) -> Arguments<'a> {
        Arguments {
            raw,
            words: split(raw),
        }
    }

    /// What `placeholder` stands for: the text as typed, or the word (empty when not given).
    pub fn value(&self, placeholder: Placeholder) -> &str {
        match placeholder {
            Placeholder::All => self.raw,
            Placeholder::Word(index) => self.words.get(index).map_or("", String::as_str),
        }
    }
}

/// `text` with each placeholder replaced by `value` of it; other `$` stay.
pub fn replace(text: &str, mut value: impl FnMut(Placeholder) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match placeholder(after) {
            Some((found, len)) => {
                out.push_str(&value(found));
                rest = &after[len..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Text of a body with the placeholders replaced by the arguments, as text.
pub fn substitute(text: &str, arguments: &Arguments<'_>) -> String {
    replace(text, |p| arguments.value(p).to_string())
}

/// `expanded`, the body `body` with its arguments in place, with the arguments appended when
/// `body` names none.
pub fn append_unnamed(body: &str, expanded: String, arguments: &str) -> String {
    if names_any(body) || arguments.is_empty() {
        expanded
    } else {
        format!("{}\n\nARGUMENTS: {arguments}", expanded.trim_end())
    }
}

/// Shell-like words: whitespace separates, `'…'` and `"…"` group, `\` escapes the next
/// character (outside single quotes).
pub fn split(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"') | None, '\\') => {
                if let Some(next) = chars.next() {
                    current.push(next);
                }
                in_word = true;
            }
            (Some(_), c) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            (None, c) => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_respect_quotes_and_escapes() {
        assert_eq!(
            split(r#"src/a.rs "two words" 'single $x' back\ slash "" end"#),
            [
                "src/a.rs",
                "two words",
                "single $x",
                "back slash",
                "",
                "end"
            ]
        );
        assert!(split("   ").is_empty());
    }

    #[test]
    fn placeholders_are_replaced() {
        let arguments = Arguments::new("12 \"the parser\"");
        assert_eq!(
            substitute(
                "Fix $1 in $2 ($ARGUMENTS); $3 is empty; $5.00 stays $",
                &arguments
            ),
            "Fix 12 in the parser (12 \"the parser\");  is empty; .00 stays $"
        );
        assert_eq!(substitute("cost $ 5", &Arguments::new("")), "cost $ 5");
        assert!(names_any("a $1") && names_any("$ARGUMENTS") && !names_any("$0 $ x $HOME"));
    }

    #[test]
    fn arguments_not_named_are_appended() {
        let body = "Review.\n";
        assert_eq!(
            append_unnamed(body, body.to_string(), "a b"),
            "Review.\n\nARGUMENTS: a b"
        );
        assert_eq!(append_unnamed(body, body.to_string(), ""), "Review.\n");
        assert_eq!(append_unnamed("$1", "a".into(), "a b"), "a");
    }
}
