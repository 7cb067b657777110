//! Word wrapping of styled lines to a width, keeping each span's style.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

const TAB: &str = "    ";

/// Wrap one logical line into rows of at most `width` columns. Breaks at spaces; a word wider
/// than a row is broken between characters. An empty line stays one empty row.
pub fn wrap_line(line: &Line<'static>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let mut rows: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    let mut used = 0usize;
    for span in &line.spans {
        let style = line.style.patch(span.style);
        // A terminal cell cannot hold a tab: expand it, or indentation in code disappears.
        let content = span.content.replace('\t', TAB);
        for token in tokens(&content) {
            let token_width = str_width(token);
            let is_space = token.starts_with(char::is_whitespace);
            if used + token_width <= width {
                push(&mut rows, token, style);
                used += token_width;
            } else if is_space {
                // A break at a space swallows the space.
                rows.push(Vec::new());
                used = 0;
            } else if token_width <= width {
                rows.push(Vec::new());
                push(&mut rows, token, style);
                used = token_width;
            } else {
                for c in token.chars() {
                    let w = c.width().unwrap_or(0);
                    if used + w > width {
                        rows.push(Vec::new());
                        used = 0;
                    }
                    let mut buf = [0u8; 4];
                    push(&mut rows, c.encode_utf8(&mut buf), style);
                    used += w;
                }
            }
        }
    }
    rows.into_iter()
        .map(|mut row| {
            // Spaces at a break are not content.
            while row.len() > 1 && row.last().is_some_and(|s| s.content.trim_end().is_empty()) {
                row.pop();
            }
            if let Some(last) = row.last_mut() {
                let trimmed = last.content.trim_end().len();
                last.content.to_mut().truncate(trimmed);
            }
            Line::from(row)
        })
        .collect()
}

fn push(rows: &mut [Vec<Span<'static>>], text: &str, style: Style) {
    let Some(row) = rows.last_mut() else { return };
    if let Some(last) = row.last_mut()
        && last.style == style
    {
        last.content.to_mut().push_str(text);
        return;
    }
    row.push(Span::styled(text.to_string(), style));
}

/// Alternating runs of whitespace and non-whitespace.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let space = first.is_whitespace();
        let end = rest
            .char_indices()
            .find(|(_, c)| c.is_whitespace() != space)
            .map_or(rest.len(), |(i, _)| i);
        let (token, tail) = rest.split_at(end);
        rest = tail;
        Some(token)
    })
}

pub fn str_width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Cut `text` to at most `width` columns, marking a cut with an ellipsis.
pub fn truncate(text: &str, width: usize) -> String {
    if str_width(text) <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn tabs_become_spaces() {
        let rows = wrap_line(&Line::from("\treturn\tx"), 40);
        let text: String = rows[0].spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "    return    x");
    }

    use super::*;

    fn texts(rows: &[Line<'static>]) -> Vec<String> {
        rows.iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wraps_at_spaces_and_breaks_long_words() {
        let line = Line::from("hello brave new world abcdefghijkl");
        assert_eq!(
            texts(&wrap_line(&line, 10)),
            ["hello", "brave new", "world abcd", "efghijkl"]
        );
    }

    #[test]
    fn keeps_styles_across_a_break() {
        let bold = Style::default().add_modifier(ratatui::style::Modifier::BOLD);
        let line = Line::from(vec![Span::raw("aa "), Span::styled("bbbb", bold)]);
        let rows = wrap_line(&line, 4);
        assert_eq!(texts(&rows), ["aa", "bbbb"]);
        assert_eq!(rows[1].spans[0].style, bold);
    }

    #[test]
    fn wide_characters_count_double() {
        assert_eq!(
            texts(&wrap_line(&Line::from("日本語です"), 4)),
            ["日本", "語で", "す"]
        );
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
