//! Markdown to styled logical lines: headings, emphasis, inline code, lists, quotes, aligned
//! tables, links with their URL, and fenced code blocks highlighted with syntect. Wrapping to a
//! width happens afterwards.

use std::borrow::Cow;

use pulldown_cmark::{
    Alignment, CodeBlockKind, Event as Md, HeadingLevel, Options, Parser, Tag, TagEnd,
};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::highlight;
use super::theme::Theme;
use super::wrap::str_width;

/// A table being read: its rows of cells (each cell its styled spans), header rows first.
struct Table {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
    head_rows: usize,
}

/// An open link or image: its destination and the text shown for it so far.
struct OpenLink {
    url: String,
    text: String,
}

struct Writer<'t> {
    theme: &'t Theme,
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Per open list: the next number for an ordered list.
    lists: Vec<Option<u64>>,
    quote_depth: usize,
    code: Option<(String, String)>,
    /// A prefix waiting for the first text of a list item.
    pending_prefix: Option<String>,
    table: Option<Table>,
    links: Vec<OpenLink>,
}

impl Writer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_text(&mut self, text: &str) {
        if let Some(link) = self.links.last_mut() {
            link.text.push_str(text);
        }
        let style = self.style();
        if let Some(table) = &mut self.table {
            if let Some(cell) = table.rows.last_mut().and_then(|row| row.last_mut()) {
                cell.push(Span::styled(text.to_string(), style));
            }
            return;
        }
        if self.current.is_empty() {
            let mut prefix = "│ ".repeat(self.quote_depth);
            if let Some(item) = self.pending_prefix.take() {
                prefix.push_str(&item);
            } else if !self.lists.is_empty() {
                prefix.push_str(&"  ".repeat(self.lists.len()));
            }
            if !prefix.is_empty() {
                self.current.push(Span::styled(prefix, self.theme.dim()));
            }
        }
        self.current
            .push(Span::styled(text.to_string(), self.style()));
    }

    fn flush(&mut self) {
        if !self.current.is_empty() {
            self.lines
                .push(Line::from(std::mem::take(&mut self.current)));
        }
    }

    fn blank(&mut self) {
        self.flush();
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }

    fn push_style(&mut self, patch: Style) {
        let next = self.style().patch(patch);
        self.styles.push(next);
    }
}

pub fn render(markdown: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut w = Writer {
        theme,
        lines: Vec::new(),
        current: Vec::new(),
        styles: vec![theme.text()],
        lists: Vec::new(),
        quote_depth: 0,
        code: None,
        pending_prefix: None,
        table: None,
        links: Vec::new(),
    };
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    let markdown = keep_code_line_breaks(markdown);
    for event in Parser::new_ext(&markdown, options) {
        match event {
            Md::Start(tag) => start(&mut w, tag),
            Md::End(tag) => end(&mut w, tag),
            Md::Text(text) => {
                if let Some((_, code)) = &mut w.code {
                    code.push_str(&text);
                } else {
                    // Soft line breaks inside a text run still end the row.
                    let mut first = true;
                    for piece in text.split('\n') {
                        if !first {
                            w.flush();
                        }
                        first = false;
                        if !piece.is_empty() {
                            w.push_text(piece);
                        }
                    }
                }
            }
            Md::Code(code) => {
                let style = Style::default().fg(theme.code);
                w.styles.push(style);
                w.push_text(&code);
                w.styles.pop();
            }
            Md::SoftBreak => w.push_text(" "),
            Md::HardBreak => w.flush(),
            Md::Rule => {
                w.blank();
                w.lines
                    .push(Line::from(Span::styled("───".to_string(), theme.dim())));
            }
            Md::TaskListMarker(done) => w.push_text(if done { "[x] " } else { "[ ] " }),
            Md::Html(html) | Md::InlineHtml(html) => w.push_text(&html),
            Md::FootnoteReference(_) | Md::InlineMath(_) | Md::DisplayMath(_) => {}
        }
    }
    if let Some((lang, code)) = w.code.take() {
        // An unclosed fence while streaming: show what has arrived, highlighted.
        w.flush();
        w.lines.extend(code_lines(&code, &lang, theme));
    }
    w.flush();
    while w.lines.last().is_some_and(|l| l.spans.is_empty()) {
        w.lines.pop();
    }
    w.lines
}

fn code_lines(code: &str, lang: &str, theme: &Theme) -> Vec<Line<'static>> {
    highlight(code, lang, theme)
        .into_iter()
        .map(|mut line| {
            line.spans
                .insert(0, Span::styled("  ".to_string(), theme.dim()));
            line
        })
        .collect()
}

fn start(w: &mut Writer<'_>, tag: Tag<'_>) {
    match tag {
        Tag::Paragraph => {}
        Tag::Heading { level, .. } => {
            w.blank();
            let marks = match level {
                HeadingLevel::H1 => "# ",
                HeadingLevel::H2 => "## ",
                _ => "### ",
            };
            w.push_style(w.theme.bold(w.theme.heading));
            w.push_text(marks);
        }
        Tag::BlockQuote(_) => {
            w.flush();
            w.quote_depth += 1;
            w.push_style(Style::default().add_modifier(Modifier::ITALIC));
        }
        Tag::CodeBlock(kind) => {
            w.blank();
            let lang = match kind {
                CodeBlockKind::Fenced(info) => {
                    info.split_whitespace().next().unwrap_or("").to_string()
                }
                CodeBlockKind::Indented => String::new(),
            };
            w.code = Some((lang, String::new()));
        }
        Tag::List(first) => {
            if w.lists.is_empty() {
                w.blank();
            } else {
                w.flush();
            }
            w.lists.push(first);
        }
        Tag::Item => {
            w.flush();
            let depth = w.lists.len().saturating_sub(1);
            let bullet = match w.lists.last_mut() {
                Some(Some(n)) => {
                    let text = format!("{n}. ");
                    *n += 1;
                    text
                }
                _ => "• ".to_string(),
            };
            w.pending_prefix = Some(format!("{}{bullet}", "  ".repeat(depth)));
        }
        Tag::Emphasis => w.push_style(Style::default().add_modifier(Modifier::ITALIC)),
        Tag::Strong => w.push_style(Style::default().add_modifier(Modifier::BOLD)),
        Tag::Strikethrough => w.push_style(Style::default().add_modifier(Modifier::CROSSED_OUT)),
        Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
            w.links.push(OpenLink {
                url: clean_url(&dest_url),
                text: String::new(),
            });
            w.push_style(
                Style::default()
                    .fg(w.theme.accent)
                    .add_modifier(Modifier::UNDERLINED),
            );
        }
        Tag::Table(aligns) => {
            w.blank();
            w.table = Some(Table {
                aligns,
                rows: Vec::new(),
                head_rows: 0,
            });
        }
        Tag::TableHead | Tag::TableRow => {
            if let Some(table) = &mut w.table {
                table.rows.push(Vec::new());
            }
        }
        Tag::TableCell => {
            if let Some(row) = w.table.as_mut().and_then(|t| t.rows.last_mut()) {
                row.push(Vec::new());
            }
        }
        _ => {}
    }
}

fn end(w: &mut Writer<'_>, tag: TagEnd) {
    match tag {
        TagEnd::Paragraph => {
            w.flush();
            if w.lists.is_empty() {
                w.lines.push(Line::default());
            }
        }
        TagEnd::Heading(_) => {
            w.styles.pop();
            w.flush();
            w.lines.push(Line::default());
        }
        TagEnd::BlockQuote(_) => {
            w.styles.pop();
            w.flush();
            w.quote_depth = w.quote_depth.saturating_sub(1);
        }
        TagEnd::CodeBlock => {
            if let Some((lang, code)) = w.code.take() {
                w.flush();
                let lines = code_lines(&code, &lang, w.theme);
                w.lines.extend(lines);
                w.lines.push(Line::default());
            }
        }
        TagEnd::List(_) => {
            w.flush();
            w.lists.pop();
            if w.lists.is_empty() {
                w.lines.push(Line::default());
            }
        }
        TagEnd::Item => w.flush(),
        TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
            w.styles.pop();
        }
        TagEnd::Link | TagEnd::Image => {
            w.styles.pop();
            if let Some(link) = w.links.pop() {
                // The URL is shown unless the text already is it (an autolink).
                let shown = link.text.trim();
                let bare = link.url.strip_prefix("mailto:").unwrap_or(&link.url);
                if !link.url.is_empty() && shown != link.url && shown != bare {
                    w.styles.push(w.theme.dim());
                    w.push_text(&format!(" ({})", link.url));
                    w.styles.pop();
                }
            }
        }
        TagEnd::TableHead => {
            if let Some(table) = &mut w.table {
                table.head_rows = table.rows.len();
            }
        }
        TagEnd::Table => {
            if let Some(table) = w.table.take() {
                let lines = table_lines(table, w.theme);
                w.lines.extend(lines);
                w.lines.push(Line::default());
            }
        }
        _ => {}
    }
}

/// A table as aligned rows: columns as wide as their widest cell, `│` between them, and a rule
/// under the header.
fn table_lines(table: Table, theme: &Theme) -> Vec<Line<'static>> {
    let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
    let cell_width = |cell: &Vec<Span<'static>>| cell.iter().map(|s| str_width(&s.content)).sum();
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            table
                .rows
                .iter()
                .filter_map(|row| row.get(c))
                .map(cell_width)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut lines = Vec::new();
    for (r, row) in table.rows.iter().enumerate() {
        let head = r < table.head_rows;
        let mut spans = Vec::new();
        for (c, width) in widths.iter().enumerate() {
            if c > 0 {
                spans.push(Span::styled(" │ ".to_string(), theme.dim()));
            }
            let empty = Vec::new();
            let cell = row.get(c).unwrap_or(&empty);
            let room = width.saturating_sub(cell_width(cell));
            let (before, after) = match table.aligns.get(c) {
                Some(Alignment::Right) => (room, 0),
                Some(Alignment::Center) => (room / 2, room - room / 2),
                _ => (0, room),
            };
            spans.push(Span::raw(" ".repeat(before)));
            for span in cell {
                let style = if head {
                    span.style.add_modifier(Modifier::BOLD)
                } else {
                    span.style
                };
                spans.push(Span::styled(span.content.clone(), style));
            }
            spans.push(Span::raw(" ".repeat(after)));
        }
        lines.push(Line::from(spans));
        if head && r + 1 == table.head_rows {
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            lines.push(Line::from(Span::styled(rule.join("─┼─"), theme.dim())));
        }
    }
    lines
}

/// A link's destination as it may be shown: no control characters (no escape sequence can
/// ride in on it) and no bidirectional or invisible format characters that could disguise it.
fn clean_url(url: &str) -> String {
    url.chars().filter(|c| shown_as_is(*c)).collect()
}

pub use splice_core::sanitize::terminal::shown_as_is;

/// Markdown joins a paragraph's lines; a model's code-like lines (commands, paths, settings)
/// are meant one per line, so a line break next to one is kept (as a hard break).
fn keep_code_line_breaks(markdown: &str) -> Cow<'_, str> {
    let lines: Vec<&str> = markdown.split('\n').collect();
    let mut out = String::with_capacity(markdown.len() + 16);
    let mut fence: Option<&str> = None;
    let mut changed = false;
    for (i, line) in lines.iter().enumerate() {
        // A CRLF line keeps its CR last, so the hard break's spaces go before it.
        let (line, cr) = line
            .strip_suffix('\r')
            .map_or((*line, ""), |body| (body, "\r"));
        out.push_str(line);
        let trimmed = line.trim_start();
        let opens = ["```", "~~~"].into_iter().find(|f| trimmed.starts_with(f));
        match (fence, opens) {
            (None, Some(f)) => fence = Some(f),
            (Some(f), Some(g)) if f == g => fence = None,
            _ => {}
        }
        let Some(next) = lines.get(i + 1) else {
            break;
        };
        let in_paragraph = fence.is_none() && opens.is_none() && !line.trim().is_empty();
        if in_paragraph && !next.trim().is_empty() && (code_like(line) || code_like(next)) {
            out.push_str("  ");
            changed = true;
        }
        out.push_str(cr);
        out.push('\n');
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(markdown)
    }
}

/// A line that reads as code rather than prose: a command, a path, an assignment, a statement.
fn code_like(line: &str) -> bool {
    let t = line.trim();
    if t.is_empty() || t.starts_with("```") || t.starts_with("~~~") {
        return false;
    }
    let starts = ["$ ", "% ", ">>> ", "./", "../", "~/", "--", "#!"];
    let ends = [';', '{', '}', '\\'];
    let contains = [" = ", "==", "->", "=>", "::", "&&", "||", " | "];
    if starts.iter().any(|s| t.starts_with(s))
        || t.ends_with(ends)
        || t.ends_with("()")
        || contains.iter().any(|c| t.contains(c))
        || (t.len() > 1 && t.starts_with('`') && t.ends_with('`'))
    {
        return true;
    }
    // One token with path or identifier punctuation: `src/main.rs`, `KEY=value`.
    let body = t.trim_end_matches(['.', ',', ':']);
    !t.contains(char::is_whitespace)
        && (body.contains(['/', '_', '=']) || body.trim_start_matches('.').contains('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'static>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn headings_lists_and_code_blocks() {
        let md = "# Title\n\nSome *text* and `code`.\n\n- one\n- two\n\n1. first\n2. second\n\n```rust\nlet x = 1;\n```\n";
        let lines = render(md, &Theme::ansi());
        assert_eq!(
            plain(&lines),
            [
                "# Title",
                "",
                "Some text and code.",
                "",
                "• one",
                "• two",
                "",
                "1. first",
                "2. second",
                "",
                "  let x = 1;",
            ]
        );
        assert!(
            lines[0].spans[0]
                .style
                .add_modifier
                .contains(Modifier::BOLD)
        );
    }

    #[test]
    fn an_unclosed_fence_still_shows_its_code() {
        let lines = render("Look:\n\n```python\nprint(1)\n", &Theme::ansi());
        assert_eq!(plain(&lines).last().map(String::as_str), Some("  print(1)"));
    }

    #[test]
    fn tables_are_aligned_under_a_header_rule() {
        let md = "| name | size |\n|:-----|-----:|\n| a.rs | 12 |\n| 日本.rs | 3400 |\n";
        let lines = render(md, &Theme::ansi());
        assert_eq!(
            plain(&lines),
            [
                "name    │ size",
                "────────┼─────",
                "a.rs    │   12",
                "日本.rs │ 3400",
            ]
        );
        assert!(
            lines[0]
                .spans
                .iter()
                .any(|s| s.content == "name" && s.style.add_modifier.contains(Modifier::BOLD))
        );
    }

    #[test]
    fn links_show_their_url_without_control_characters() {
        let md = "See [the docs](https://example.com/a?b=1) and <https://example.com/>.\n\n\
                  [x](<https://e.com/\u{1b}]8;;evil\u{7}\u{202e}y>)\n";
        let text = plain(&render(md, &Theme::ansi())).join("\n");
        assert!(
            text.contains("the docs (https://example.com/a?b=1)"),
            "{text}"
        );
        // An autolink is not repeated.
        assert!(text.contains("and https://example.com/."), "{text}");
        assert!(text.contains("x (https://e.com/]8;;evily)"), "{text}");
        assert!(!text.contains(|c: char| (c.is_control() && c != '\n') || c == '\u{202e}'));
    }

    #[test]
    fn single_newlines_stay_line_breaks_in_code_like_lines() {
        let md = "Changed files:\nsrc/a.rs\nsrc/b.rs\n\nRun:\n$ cargo build\n$ cargo test\n\nA prose line\nwraps as one paragraph.\n";
        assert_eq!(
            plain(&render(&md.replace('\n', "\r\n"), &Theme::ansi())),
            plain(&render(md, &Theme::ansi()))
        );
        assert_eq!(
            plain(&render(md, &Theme::ansi())),
            [
                "Changed files:",
                "src/a.rs",
                "src/b.rs",
                "",
                "Run:",
                "$ cargo build",
                "$ cargo test",
                "",
                "A prose line wraps as one paragraph.",
            ]
        );
    }
}
