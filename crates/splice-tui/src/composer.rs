//! The composer: a multi-line text area with history, paste, `@path` completion and a popup of
//! slash commands. It knows command names and help texts only; the app runs them.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};
use ratatui_textarea::{CursorMove, TextArea, WrapMode};
use unicode_segmentation::UnicodeSegmentation;

use super::theme::Theme;
use super::wrap::{str_width, truncate};

const POPUP_ROWS: usize = 8;
const MAX_FILES: usize = 20_000;
const MAX_INPUT_ROWS: u16 = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComposerAction {
    None,
    Submit(String),
}

/// One line of the popup: what Tab or Enter inserts, and a description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    pub insert: String,
    pub help: String,
    /// A command that takes no argument runs as soon as it is chosen.
    pub runs: bool,
}

/// A command as the composer knows it: for the popup only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandHint {
    pub name: String,
    pub args: String,
    pub help: String,
}

pub struct Composer {
    textarea: TextArea<'static>,
    history: Vec<String>,
    /// Position while browsing history; `None` when editing a fresh draft.
    browsing: Option<usize>,
    draft: String,
    commands: Vec<CommandHint>,
    root: PathBuf,
    files: Option<Vec<String>>,
    selected: usize,
    /// Esc closed the popup; it stays closed until the text changes.
    dismissed: bool,
}

impl Composer {
    pub fn new(root: PathBuf, commands: Vec<CommandHint>) -> Composer {
        let mut composer = Composer {
            textarea: TextArea::default(),
            history: Vec::new(),
            browsing: None,
            draft: String::new(),
            commands,
            root,
            files: None,
            selected: 0,
            dismissed: false,
        };
        composer.reset(Vec::new());
        composer
    }

    fn reset(&mut self, lines: Vec<String>) {
        let mut textarea = TextArea::new(lines);
        textarea.set_wrap_mode(WrapMode::WordOrGlyph);
        textarea.set_cursor_line_style(Style::default());
        textarea
            .set_placeholder_text("Ask Splice to change something · / for commands · @ for files");
        textarea.move_cursor(CursorMove::Bottom);
        textarea.move_cursor(CursorMove::End);
        self.textarea = textarea;
        self.selected = 0;
        self.dismissed = false;
    }

    pub fn set_commands(&mut self, commands: Vec<CommandHint>) {
        self.commands = commands;
    }

    /// Preload files for `@` completion (tests; the app lists them lazily).
    pub fn set_files(&mut self, files: Vec<String>) {
        self.files = Some(files);
    }

    pub fn text(&self) -> String {
        self.textarea.lines().join("\n")
    }

    pub fn set_text(&mut self, text: &str) {
        self.reset(text.split('\n').map(str::to_string).collect());
    }

    pub fn push_history(&mut self, entry: String) {
        if self.history.last() != Some(&entry) && !entry.trim().is_empty() {
            self.history.push(entry);
        }
    }

    pub fn history(&self) -> &[String] {
        &self.history
    }

    pub fn paste(&mut self, text: &str) {
        // Terminals send CR for newlines in bracketed paste.
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.textarea.insert_str(text);
        self.dismissed = false;
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> ComposerAction {
        let popup = self.suggestions();
        let newline_mods = KeyModifiers::SHIFT | KeyModifiers::ALT;
        match key.code {
            KeyCode::Enter if key.modifiers.intersects(newline_mods) => {
                self.textarea.insert_newline();
            }
            KeyCode::Char('j') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.textarea.insert_newline();
            }
            KeyCode::Enter | KeyCode::Tab if !popup.is_empty() => {
                let choice = popup[self.selected.min(popup.len() - 1)].clone();
                // `/model` typed out in full: Enter runs it (showing the current value) rather
                // than completing it to `/model ` and waiting for a second Enter.
                let text = self.text();
                let typed_in_full = popup.iter().any(|c| c.insert.trim_end() == text.trim_end());
                if key.code == KeyCode::Enter && typed_in_full {
                    return self.submit();
                }
                self.accept(&choice);
                if key.code == KeyCode::Enter && choice.runs {
                    return self.submit();
                }
            }
            KeyCode::Enter => return self.submit(),
            KeyCode::Esc if !popup.is_empty() => self.dismissed = true,
            KeyCode::Up if !popup.is_empty() => {
                self.selected = self.selected.checked_sub(1).unwrap_or(popup.len() - 1);
            }
            KeyCode::Down if !popup.is_empty() => {
                self.selected = (self.selected + 1) % popup.len();
            }
            // As in a shell: delete to the start of the line (the text area would undo).
            KeyCode::Char('u') if key.modifiers == KeyModifiers::CONTROL => {
                if self.textarea.delete_line_by_head() {
                    self.selected = 0;
                    self.dismissed = false;
                }
            }
            KeyCode::Up if self.textarea.cursor().0 == 0 => self.history_back(),
            KeyCode::Down if self.textarea.cursor().0 + 1 >= self.textarea.lines().len() => {
                self.history_forward();
            }
            _ => {
                let before = self.text();
                if !self.grapheme_key(key) {
                    self.textarea.input(key);
                }
                self.snap_to_grapheme();
                if self.text() != before {
                    self.selected = 0;
                    self.dismissed = false;
                }
            }
        }
        ComposerAction::None
    }

    /// The text area moves and deletes by `char`; a flag, a skin-toned emoji or a ZWJ family is
    /// several. Backspace, Delete, Left and Right act on the whole cluster. Says whether it
    /// handled the key.
    fn grapheme_key(&mut self, key: KeyEvent) -> bool {
        if self.textarea.selection_range().is_some()
            || key
                .modifiers
                .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT | KeyModifiers::SUPER)
        {
            return false;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let ratatui_textarea::DataCursor(row, col) = self.textarea.cursor();
        let line = self.textarea.lines().get(row).cloned().unwrap_or_default();
        let (before, after) = clusters_around(&line, col);
        match key.code {
            KeyCode::Backspace if !ctrl && before > 0 => {
                for _ in 0..before {
                    self.textarea.delete_char();
                }
            }
            KeyCode::Char('h') if ctrl && before > 0 => {
                for _ in 0..before {
                    self.textarea.delete_char();
                }
            }
            KeyCode::Delete if !ctrl && after > 0 => {
                for _ in 0..after {
                    self.textarea.delete_next_char();
                }
            }
            KeyCode::Left if !ctrl && before > 0 => {
                for _ in 0..before {
                    self.textarea.move_cursor(CursorMove::Back);
                }
            }
            KeyCode::Right if !ctrl && after > 0 => {
                for _ in 0..after {
                    self.textarea.move_cursor(CursorMove::Forward);
                }
            }
            _ => return false,
        }
        true
    }

    /// A cursor left inside a cluster (Up/Down keep the column in chars) moves to its end, so
    /// typing never splits one.
    fn snap_to_grapheme(&mut self) {
        let ratatui_textarea::DataCursor(row, col) = self.textarea.cursor();
        let Some(line) = self.textarea.lines().get(row) else {
            return;
        };
        let mut start = 0;
        for g in line.graphemes(true) {
            let end = start + g.chars().count();
            if col > start && col < end {
                if let (Ok(row), Ok(end)) = (u16::try_from(row), u16::try_from(end)) {
                    self.textarea.move_cursor(CursorMove::Jump(row, end));
                }
                return;
            }
            start = end;
        }
    }

    fn submit(&mut self) -> ComposerAction {
        let text = self.text();
        if text.trim().is_empty() {
            return ComposerAction::None;
        }
        self.push_history(text.clone());
        self.browsing = None;
        self.reset(Vec::new());
        ComposerAction::Submit(text)
    }

    fn history_back(&mut self) {
        if self.history.is_empty() {
            return;
        }
        let next = match self.browsing {
            None => {
                self.draft = self.text();
                self.history.len() - 1
            }
            Some(0) => 0,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        let entry = self.history[next].clone();
        self.set_text(&entry);
    }

    fn history_forward(&mut self) {
        let Some(i) = self.browsing else { return };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            let entry = self.history[i + 1].clone();
            self.set_text(&entry);
        } else {
            self.browsing = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
    }

    /// Replace the token being completed with the suggestion.
    fn accept(&mut self, choice: &Suggestion) {
        let ratatui_textarea::DataCursor(row, col) = self.textarea.cursor();
        let line = self.textarea.lines().get(row).cloned().unwrap_or_default();
        let chars: Vec<char> = line.chars().collect();
        let start = token_start(&chars, col);
        let mut new_line: String = chars[..start].iter().collect();
        new_line.push_str(&choice.insert);
        let cursor_col = new_line.chars().count();
        new_line.extend(&chars[col.min(chars.len())..]);
        let mut lines = self.textarea.lines().to_vec();
        if let Some(slot) = lines.get_mut(row) {
            *slot = new_line;
        }
        self.reset(lines);
        self.textarea.move_cursor(CursorMove::Jump(
            u16::try_from(row).unwrap_or(u16::MAX),
            u16::try_from(cursor_col).unwrap_or(u16::MAX),
        ));
        self.dismissed = true;
    }

    /// The popup's rows for the text at the cursor: commands after a leading `/`, files after `@`.
    pub fn suggestions(&mut self) -> Vec<Suggestion> {
        if self.dismissed {
            return Vec::new();
        }
        let ratatui_textarea::DataCursor(row, col) = self.textarea.cursor();
        let lines = self.textarea.lines();
        let line: Vec<char> = lines
            .get(row)
            .map(|l| l.chars().collect())
            .unwrap_or_default();
        let start = token_start(&line, col);
        let token: String = line[start..col.min(line.len())].iter().collect();
        if lines.len() == 1 && start == 0 && token.starts_with('/') {
            let typed = &token[1..];
            return self
                .commands
                .iter()
                .filter(|c| c.name.starts_with(typed))
                .take(POPUP_ROWS)
                .map(|c| Suggestion {
                    insert: if c.args.is_empty() {
                        format!("/{}", c.name)
                    } else {
                        format!("/{} ", c.name)
                    },
                    help: if c.args.is_empty() {
                        c.help.clone()
                    } else {
                        format!("{} · {}", c.args, c.help)
                    },
                    runs: c.args.is_empty(),
                })
                .collect();
        }
        if let Some(query) = token.strip_prefix('@') {
            let query = query.to_lowercase();
            let files = self.files.get_or_insert_with(|| list_files(&self.root));
            let mut hits: Vec<&String> = files
                .iter()
                .filter(|f| f.to_lowercase().contains(&query))
                .collect();
            // Prefix matches first, then shorter paths, then by name so the order is stable.
            hits.sort_by(|a, b| {
                let key = |f: &String| (!f.to_lowercase().starts_with(&query), f.len());
                key(a).cmp(&key(b)).then_with(|| a.cmp(b))
            });
            return hits
                .into_iter()
                .take(POPUP_ROWS)
                .map(|f| Suggestion {
                    insert: format!("@{f} "),
                    help: String::new(),
                    runs: false,
                })
                .collect();
        }
        Vec::new()
    }

    /// Rows the composer wants for `width`, borders included.
    pub fn height(&self, width: u16) -> u16 {
        let inner = usize::from(width.saturating_sub(2).max(1));
        let rows: usize = self
            .textarea
            .lines()
            .iter()
            // Display columns, not chars: a CJK character takes two.
            .map(|l| {
                unicode_width::UnicodeWidthStr::width(l.as_str())
                    .max(1)
                    .div_ceil(inner)
            })
            .sum();
        u16::try_from(rows)
            .unwrap_or(MAX_INPUT_ROWS)
            .clamp(1, MAX_INPUT_ROWS)
            + 2
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme, title: &str) {
        let block = Block::default()
            .borders(Borders::TOP | Borders::BOTTOM)
            .border_style(theme.border())
            .title(Span::styled(title.to_string(), theme.dim()));
        self.textarea.set_block(block);
        self.textarea.set_style(theme.text());
        self.textarea
            .set_placeholder_style(theme.dim().add_modifier(Modifier::ITALIC));
        (&self.textarea).render(area, buf);
    }

    /// The popup above the composer (`area` is the composer's rectangle).
    pub fn render_popup(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let items = self.suggestions();
        if items.is_empty() {
            return;
        }
        let height = u16::try_from(items.len()).unwrap_or(0) + 2;
        let name_width = items.iter().map(|i| i.insert.len()).max().unwrap_or(0) + 2;
        // As wide as the longest row wants, up to the composer's width: a description is cut
        // only when the terminal is too narrow for it.
        let wanted = items
            .iter()
            .map(|i| name_width + str_width(&i.help))
            .max()
            .unwrap_or(0)
            + 2;
        let rect = Rect {
            x: area.x,
            y: area.y.saturating_sub(height),
            width: area
                .width
                .min(u16::try_from(wanted).unwrap_or(u16::MAX).max(40)),
            height: height.min(area.y),
        };
        let inner = usize::from(rect.width.saturating_sub(2));
        let lines: Vec<Line<'static>> = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let style = if i == self.selected {
                    Style::default()
                        .fg(theme.accent)
                        .bg(theme.highlight_bg)
                        .add_modifier(Modifier::BOLD | Modifier::REVERSED)
                } else {
                    theme.text()
                };
                let name = format!("{:<name_width$}", item.insert.trim_end());
                let help = truncate(&item.help, inner.saturating_sub(name_width));
                Line::from(vec![
                    Span::styled(name, style),
                    Span::styled(help, theme.dim()),
                ])
            })
            .collect();
        theme.clear(rect, buf);
        Paragraph::new(lines)
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(theme.border()),
            )
            .render(rect, buf);
    }
}

/// Start of the whitespace-delimited token that ends at `col`.
/// The length in chars of the grapheme cluster before and after char column `col` of `line`
/// (0 at either end of the line).
fn clusters_around(line: &str, col: usize) -> (usize, usize) {
    let mut start = 0;
    let mut before = 0;
    for g in line.graphemes(true) {
        let len = g.chars().count();
        if start >= col {
            return (before, len);
        }
        before = len;
        start += len;
    }
    (before, 0)
}

fn token_start(line: &[char], col: usize) -> usize {
    let col = col.min(line.len());
    line[..col]
        .iter()
        .rposition(|c| c.is_whitespace())
        .map_or(0, |i| i + 1)
}

/// Files under the root, relative, respecting .gitignore; capped so a huge tree stays quick.
fn list_files(root: &std::path::Path) -> Vec<String> {
    ignore::WalkBuilder::new(root)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| {
            e.path()
                .strip_prefix(root)
                .ok()
                .map(|p| p.display().to_string())
        })
        .take(MAX_FILES)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(c: &mut Composer, text: &str) {
        for ch in text.chars() {
            c.handle_key(key(KeyCode::Char(ch)));
        }
    }

    fn composer() -> Composer {
        let commands = ["help", "model", "mode", "quit"]
            .iter()
            .map(|n| CommandHint {
                name: n.to_string(),
                args: if n.starts_with("mo") {
                    "NAME".into()
                } else {
                    String::new()
                },
                help: format!("{n} help"),
            })
            .collect();
        let mut c = Composer::new(PathBuf::from("."), commands);
        c.set_files(vec![
            "src/main.rs".into(),
            "src/tui/app.rs".into(),
            "README.md".into(),
        ]);
        c
    }

    #[test]
    fn enter_sends_and_shift_enter_adds_a_line() {
        let mut c = composer();
        typed(&mut c, "fix it");
        c.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
        typed(&mut c, "now");
        assert_eq!(
            c.handle_key(key(KeyCode::Enter)),
            ComposerAction::Submit("fix it\nnow".into())
        );
        assert_eq!(c.text(), "");
        assert_eq!(c.handle_key(key(KeyCode::Enter)), ComposerAction::None);
    }

    #[test]
    fn history_walks_back_and_restores_the_draft() {
        let mut c = composer();
        for entry in ["one", "two"] {
            typed(&mut c, entry);
            c.handle_key(key(KeyCode::Enter));
        }
        typed(&mut c, "dra");
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "two");
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "one");
        c.handle_key(key(KeyCode::Down));
        c.handle_key(key(KeyCode::Down));
        assert_eq!(c.text(), "dra");
    }

    #[test]
    fn grapheme_clusters_edit_as_one_unit() {
        let flag = "\u{1f1eb}\u{1f1f7}";
        let thumb = "\u{1f44d}\u{1f3fd}";
        let family = "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}";
        let mut c = composer();
        typed(&mut c, &format!("x{flag}{thumb}{family}"));
        c.handle_key(key(KeyCode::Backspace));
        assert_eq!(c.text(), format!("x{flag}{thumb}"));
        c.handle_key(key(KeyCode::Left));
        typed(&mut c, "y");
        assert_eq!(c.text(), format!("x{flag}y{thumb}"));
        c.handle_key(key(KeyCode::Left));
        c.handle_key(key(KeyCode::Left));
        c.handle_key(key(KeyCode::Delete));
        assert_eq!(c.text(), format!("xy{thumb}"));
        c.handle_key(key(KeyCode::Right));
        c.handle_key(key(KeyCode::Right));
        typed(&mut c, "z");
        assert_eq!(c.text(), format!("xy{thumb}z"));
        // Up and Down keep a column that may fall inside a cluster: the cursor lands after it.
        c.set_text(&format!("{family}\nabcdef"));
        c.handle_key(key(KeyCode::Home));
        for _ in 0..3 {
            c.handle_key(key(KeyCode::Right));
        }
        c.handle_key(key(KeyCode::Up));
        typed(&mut c, "!");
        assert_eq!(c.text(), format!("{family}!\nabcdef"));
    }

    /// Ctrl-U deletes to the start of the line, as in a shell (the text area's own binding
    /// undid the last edit instead, so the line stayed).
    #[test]
    fn ctrl_u_deletes_to_the_start_of_the_line() {
        let ctrl_u = KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL);
        let mut c = composer();
        typed(&mut c, "fix the parser");
        c.handle_key(ctrl_u);
        assert_eq!(c.text(), "");
        typed(&mut c, "keep this");
        c.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
        typed(&mut c, "drop that");
        for _ in 0.."that".len() {
            c.handle_key(key(KeyCode::Left));
        }
        c.handle_key(ctrl_u);
        assert_eq!(c.text(), "keep this\nthat");
        // At the start of a line it takes the line break before it, so pressing it again and
        // again empties the whole composer.
        c.handle_key(ctrl_u);
        assert_eq!(c.text(), "keep thisthat");
        c.handle_key(ctrl_u);
        assert_eq!(c.text(), "that");
    }

    #[test]
    fn height_counts_display_columns() {
        let mut c = composer();
        c.set_text(&"漢".repeat(40));
        // 80 columns of text in a 40-column composer (38 inner): three rows plus two borders.
        assert_eq!(c.height(40), 5);
    }

    #[test]
    fn slash_popup_filters_and_runs_commands_without_arguments() {
        let mut c = composer();
        typed(&mut c, "/mo");
        let names: Vec<String> = c.suggestions().into_iter().map(|s| s.insert).collect();
        assert_eq!(names, ["/model ", "/mode "]);
        // A command with an argument is completed, not run.
        assert_eq!(c.handle_key(key(KeyCode::Enter)), ComposerAction::None);
        assert_eq!(c.text(), "/model ");
        c.set_text("");
        typed(&mut c, "/q");
        assert_eq!(
            c.handle_key(key(KeyCode::Enter)),
            ComposerAction::Submit("/quit".into())
        );
        // Typed out in full, a command runs at once, even when a longer one shares its start.
        for command in ["/mode", "/model", "/tier"] {
            c.set_text("");
            typed(&mut c, command);
            assert_eq!(
                c.handle_key(key(KeyCode::Enter)),
                ComposerAction::Submit(command.into())
            );
        }
    }

    #[test]
    fn at_completes_paths() {
        let mut c = composer();
        typed(&mut c, "look at @app");
        let hits: Vec<String> = c.suggestions().into_iter().map(|s| s.insert).collect();
        assert_eq!(hits, ["@src/tui/app.rs "]);
        c.handle_key(key(KeyCode::Tab));
        assert_eq!(c.text(), "look at @src/tui/app.rs ");
        assert!(c.suggestions().is_empty());
    }

    #[test]
    fn paste_keeps_newlines() {
        let mut c = composer();
        c.paste("a\r\nb");
        assert_eq!(c.text(), "a\nb");
    }
}
