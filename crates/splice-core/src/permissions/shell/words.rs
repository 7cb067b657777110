//! One shell word as the program receives it: quotes removed, escapes resolved, line
//! continuations dropped; or unknown, when only running the command would tell (a variable,
//! `$(…)`, a glob, a brace expansion).

use tree_sitter::Node;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    Known(String),
    /// Decided when the command runs; it may become several words or none. Holds what it
    /// depends on, as a phrase for reasons ("`$X`").
    Unknown(String),
}

impl Word {
    pub fn known(&self) -> Option<&str> {
        match self {
            Word::Known(text) => Some(text),
            Word::Unknown(_) => None,
        }
    }
}

/// The word a node stands for.
pub fn word(node: Node<'_>, src: &str) -> Word {
    let written = format!("`{}`", &src[node.byte_range()]);
    let mut out = String::new();
    // The unquoted source, with quoted runs as `_`: globs and braces expand only there.
    let mut unquoted = String::new();
    if append(node, src, &mut out, &mut unquoted) && !expands(&unquoted) {
        Word::Known(out)
    } else {
        Word::Unknown(written)
    }
}

fn append(node: Node<'_>, src: &str, out: &mut String, unquoted: &mut String) -> bool {
    let text = &src[node.byte_range()];
    match node.kind() {
        "word" | "number" => {
            unquoted.push_str(text);
            out.push_str(&unescape(text, |_| true));
            true
        }
        "raw_string" => match text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
            Some(inner) => {
                unquoted.push('_');
                out.push_str(inner);
                true
            }
            None => false,
        },
        "string" => {
            let mut cursor = node.walk();
            let plain = node
                .children(&mut cursor)
                .all(|c| c.kind() == "string_content" || c.kind() == "\"");
            match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
                Some(inner) if plain => {
                    unquoted.push('_');
                    // Inside double quotes a backslash escapes only these.
                    out.push_str(&unescape(inner, |c| matches!(c, '$' | '`' | '"' | '\\')));
                    true
                }
                _ => false,
            }
        }
        "ansi_c_string" => match text
            .strip_prefix("$'")
            .and_then(|t| t.strip_suffix('\''))
            .and_then(ansi_c)
        {
            Some(decoded) => {
                unquoted.push('_');
                out.push_str(&decoded);
                true
            }
            None => false,
        },
        "concatenation" => {
            let mut cursor = node.walk();
            let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
            // Text between the parts that no node covers would be lost: refuse it.
            let contiguous = children
                .windows(2)
                .all(|pair| pair[0].end_byte() == pair[1].start_byte());
            contiguous && children.iter().all(|c| append(*c, src, out, unquoted))
        }
        _ => false,
    }
}

/// Backslash removal: `\` + newline disappears, `\c` is `c` when `escapes(c)`, else both stay.
pub fn unescape(text: &str, escapes: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\n') => {}
            Some(next) if escapes(next) => out.push(next),
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Whether unquoted text would be expanded: a glob (`*`, `?`, `[`), a leading `~`, or a brace
/// expansion (`{a,b}`, `{1..3}`). Escaped characters do not count.
fn expands(unquoted: &str) -> bool {
    if unquoted.starts_with('~') {
        return true;
    }
    let mut open_brace = false;
    let mut brace_list = false;
    let mut chars = unquoted.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '*' | '?' | '[' => return true,
            '{' => open_brace = true,
            ',' if open_brace => brace_list = true,
            '.' if open_brace && chars.peek() == Some(&'.') => brace_list = true,
            '}' if brace_list => return true,
            _ => {}
        }
    }
    false
}

/// The text of `$'…'` (without its quotes), or `None` for an escape not decoded here.
fn ansi_c(inner: &str) -> Option<String> {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = match chars.next()? {
            'a' => '\x07',
            'b' => '\x08',
            'e' | 'E' => '\x1b',
            'f' => '\x0c',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\x0b',
            c @ ('\\' | '\'' | '"' | '?') => c,
            'x' => radix(&mut chars, 16, 2)?,
            'u' => radix(&mut chars, 16, 4)?,
            'U' => radix(&mut chars, 16, 8)?,
            d @ '0'..='7' => {
                let mut value = d.to_digit(8)?;
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(digit) => {
                            value = value * 8 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                char::from_u32(value)?
            }
            _ => return None,
        };
        out.push(escaped);
    }
    Some(out)
}

fn radix(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    base: u32,
    most: usize,
) -> Option<char> {
    let mut value = 0u32;
    let mut digits = 0;
    while digits < most {
        match chars.peek().and_then(|c| c.to_digit(base)) {
            Some(digit) => {
                value = value.checked_mul(base)?.checked_add(digit)?;
                chars.next();
                digits += 1;
            }
            None => break,
        }
    }
    if digits == 0 {
        return None;
    }
    char::from_u32(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_expansions() {
        assert_eq!(unescape("pu\\sh\\\n", |_| true), "push");
        assert_eq!(unescape("a\\nb\\$", |c| c == '$'), "a\\nb$");
        assert_eq!(ansi_c("pu\\x73h\\101\\u0041").as_deref(), Some("pushAA"));
        assert_eq!(ansi_c("\\q"), None);
        for expanding in ["*.rs", "pus?", "[p]ush", "~/x", "{push,x}", "{1..3}"] {
            assert!(expands(expanding), "{expanding}");
        }
        for plain in ["-I{}", "{}", "a\\*b", "x=1", "a.b"] {
            assert!(!expands(plain), "{plain}");
        }
    }
}
