//! Markdown to styled logical lines: headings, emphasis, inline code, lists, quotes, and fenced
//! code blocks highlighted with syntect. Wrapping to a width happens afterwards.

use pulldown_cmark::{CodeBlockKind, Event as Md, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::highlight;
use super::theme::Theme;

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
}

impl Writer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_text(&mut self, text: &str) {
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
    };
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    for event in Parser::new_ext(markdown, options) {
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
        Tag::Link { .. } => w.push_style(
            Style::default()
                .fg(w.theme.accent)
                .add_modifier(Modifier::UNDERLINED),
        ),
        Tag::TableRow | Tag::TableHead => w.flush(),
        Tag::TableCell => w.push_text("│ "),
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
        TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link => {
            w.styles.pop();
        }
        TagEnd::TableRow | TagEnd::TableHead => w.flush(),
        _ => {}
    }
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
}
