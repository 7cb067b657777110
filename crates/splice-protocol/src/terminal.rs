//! Untrusted text made safe for a terminal. Model and tool text can carry escape sequences that
//! retitle the window (OSC 0), write the clipboard (OSC 52), recolour or clear the screen, or
//! move the cursor to hide what was printed. The text printer writes only what this leaves.

use std::borrow::Cow;

const ESC: char = '\u{1b}';
const BEL: char = '\u{7}';
/// The 8-bit "string terminator" C1 control.
const ST: char = '\u{9c}';

/// Whether a character from a model or a saved file may reach the screen as it is: not a
/// control character, nor a bidirectional or invisible format character that disguises text.
pub fn shown_as_is(c: char) -> bool {
    !c.is_control()
        && !matches!(
            c,
            '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}'
        )
}

/// `text` without escape sequences and control characters; newlines and tabs stay. A sequence
/// split across two pieces of a stream loses its introducer here, so its tail can only ever
/// print as plain characters.
pub fn strip_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ESC => match chars.next() {
                // CSI: parameters and intermediates up to one final byte in @..~.
                Some('[') => skip_while_then_one(&mut chars, |c| !('@'..='~').contains(&c)),
                // OSC, DCS, SOS, PM, APC: a string up to BEL or ST (ESC \ or the C1 ST).
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // Character-set designations take one more character.
                Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '#' | '%') => {
                    chars.next();
                }
                // Any other two-character sequence (ESC c resets the terminal, ESC 7/8 …).
                _ => {}
            },
            '\u{9b}' => skip_while_then_one(&mut chars, |c| !('@'..='~').contains(&c)),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            // A lone carriage return would let later text overwrite what came before it.
            '\r' if chars.peek() == Some(&'\n') => {}
            c if is_unsafe(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Controls, and the bidirectional embeddings, overrides and isolates with which a terminal that
/// lays out bidirectional text (VTE, Konsole) would show `rm -rf ~` as something else.
fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || c == '\u{7f}'
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

fn skip_while_then_one(chars: &mut impl Iterator<Item = char>, inside: impl Fn(char) -> bool) {
    for c in chars.by_ref() {
        if !inside(c) {
            return;
        }
    }
}

fn skip_string(chars: &mut std::iter::Peekable<impl Iterator<Item = char>>) {
    while let Some(c) = chars.next() {
        match c {
            BEL | ST => return,
            ESC => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "fn main() {\n\tprintln!(\"hi\");\n}\n";
        assert!(matches!(strip_controls(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn escape_sequences_and_controls_are_removed() {
        let cases = [
            ("\u{1b}]0;pwned\u{7}title", "title"),
            ("\u{1b}]52;c;ZWNobyBoaQ==\u{1b}\\after", "after"),
            ("\u{1b}[31mred\u{1b}[0m", "red"),
            ("\u{1b}[2J\u{1b}[Hclear", "clear"),
            ("a\u{1b}cb", "ab"),
            ("\u{1b}(Bx", "x"),
            ("\u{9b}31mc1", "c1"),
            ("\u{9d}0;t\u{9c}osc", "osc"),
            ("\u{1b}Pq#0;2;0;0;0\u{1b}\\sixel", "sixel"),
            ("bell\u{7}del\u{7f}nul\u{0}", "belldelnul"),
            ("line\r\nnext", "line\nnext"),
            ("hidden\rshown", "hiddenshown"),
            // An unterminated string swallows the rest of this piece, never the terminal.
            ("\u{1b}]0;never ends", ""),
            ("tail\u{1b}", "tail"),
            ("a\u{202e}b\u{202c}c\u{2066}d\u{2069}", "abcd"),
        ];
        for (input, expected) in cases {
            assert_eq!(strip_controls(input), expected, "{input:?}");
        }
    }

    #[test]
    fn a_sequence_split_across_pieces_cannot_form() {
        let (first, second) = ("before\u{1b}", "]0;title\u{7}after");
        let joined = format!("{}{}", strip_controls(first), strip_controls(second));
        assert!(!joined.contains(ESC) && !joined.contains(BEL));
    }
}
