//! Word wrapping of styled lines to a width, keeping each span's style. Text is measured and
//! cut by grapheme cluster, as ratatui draws it, so a flag, a skin-toned emoji or a ZWJ family is
//! one unit: never split across rows, never counted as more columns than it takes.

use ratatui::buffer::CellWidth;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;

const TAB: &str = "    ";

/// Wrap one logical line into rows of at most `width` columns. Breaks at spaces and around each
/// wide (CJK) character, as CJK text breaks by character; a word wider than a row is broken
/// between grapheme clusters. An empty line stays one empty row.
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
                for g in token.graphemes(true) {
                    let w = grapheme_width(g);
                    if used + w > width {
                        rows.push(Vec::new());
                        used = 0;
                    }
                    push(&mut rows, g, style);
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Space,
    Word,
    /// A two-column character: a break may come before and after it.
    Wide,
    /// Closing CJK punctuation: never starts a row, so it stays with what precedes it.
    Close,
}

fn class(g: &str) -> Class {
    if g.starts_with(char::is_whitespace) {
        Class::Space
    } else if g.chars().count() == 1 && "。、，．！？：；）」』】〉》〕・ー".contains(g)
    {
        Class::Close
    } else if grapheme_width(g) >= 2 {
        Class::Wide
    } else {
        Class::Word
    }
}

/// Tokens a row may break between: runs of whitespace, runs of narrow non-whitespace, and each
/// wide character on its own (with any closing punctuation after it).
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut previous: Option<Class> = None;
    for (i, g) in text.grapheme_indices(true) {
        let class = class(g);
        let boundary = match (previous, class) {
            (None, _) => false,
            (Some(Class::Space), Class::Close) => true,
            (Some(_), Class::Close) => false,
            (Some(Class::Wide | Class::Close), _) | (Some(_), Class::Wide) => true,
            (Some(before), now) => (before == Class::Space) != (now == Class::Space),
        };
        if boundary {
            pieces.push(&text[start..i]);
            start = i;
        }
        previous = Some(class);
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces.into_iter()
}

/// Columns a grapheme cluster takes, measured as ratatui measures it when drawing; a control
/// character is never drawn, so it takes none.
pub fn grapheme_width(g: &str) -> usize {
    if g.contains(char::is_control) {
        0
    } else {
        usize::from(g.cell_width())
    }
}

pub fn str_width(text: &str) -> usize {
    text.graphemes(true).map(grapheme_width).sum()
}

/// Cut `text` to at most `width` columns, marking a cut with an ellipsis.
pub fn truncate(text: &str, width: usize) -> String {
    if str_width(text) <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for g in text.graphemes(true) {
        let w = grapheme_width(g);
        if used + w + 1 > width {
            break;
        }
        out.push_str(g);
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

    #[test]
    fn grapheme_clusters_are_one_unit() {
        let family = "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}";
        let thumb = "\u{1f44d}\u{1f3fd}";
        let flag = "\u{1f1eb}\u{1f1f7}";
        assert_eq!(str_width(family), 2);
        assert_eq!(str_width(thumb), 2);
        assert_eq!(str_width(flag), 2);
        let line = Line::from(format!("{family}{thumb}{flag}"));
        assert_eq!(texts(&wrap_line(&line, 3)), [family, thumb, flag]);
        assert_eq!(truncate(&format!("{family}abc"), 4), format!("{family}a…"));
        assert_eq!(
            truncate(&format!("{flag}{flag}{flag}"), 5),
            format!("{flag}{flag}…")
        );
    }

    #[test]
    fn cjk_wraps_by_character_and_keeps_closing_punctuation() {
        assert_eq!(
            texts(&wrap_line(&Line::from("Hello 世界你好吗"), 10)),
            ["Hello 世界", "你好吗"]
        );
        assert_eq!(
            texts(&wrap_line(&Line::from("你好。世界"), 4)),
            ["你", "好。", "世界"]
        );
    }
}
