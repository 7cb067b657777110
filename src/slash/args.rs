//! A command's arguments in its body: `$ARGUMENTS` is all of them as typed, `$1` … `$9` each
//! word, split as a shell would (quotes group words, a backslash escapes). A body that names
//! none gets the arguments appended (`ARGUMENTS: …`), as Claude Code does, so they are never
//! dropped silently.

/// `body` with the placeholders replaced by `arguments`.
pub fn substitute(body: &str, arguments: &str) -> String {
    let words = split(arguments);
    let mut out = String::with_capacity(body.len() + arguments.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(arguments);
            used = true;
            rest = tail;
        } else if let Some(digit) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
            let index = digit as usize - '1' as usize;
            out.push_str(words.get(index).map_or("", String::as_str));
            used = true;
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    if !used && !arguments.is_empty() {
        out = format!("{}\n\nARGUMENTS: {arguments}", out.trim_end());
    }
    out
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
        assert_eq!(
            substitute(
                "Fix $1 in $2 ($ARGUMENTS); $3 is empty; $5.00 stays $",
                "12 \"the parser\""
            ),
            "Fix 12 in the parser (12 \"the parser\");  is empty; .00 stays $"
        );
        assert_eq!(substitute("cost $ 5", ""), "cost $ 5");
    }

    #[test]
    fn arguments_not_named_are_appended() {
        assert_eq!(substitute("Review.\n", "a b"), "Review.\n\nARGUMENTS: a b");
        assert_eq!(substitute("Review.\n", ""), "Review.\n");
    }
}
