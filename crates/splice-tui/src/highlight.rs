//! Syntax highlighting of code blocks and diffs with syntect, following the UI theme.

use std::sync::OnceLock;

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme as SyntectTheme, ThemeSet};
use syntect::parsing::SyntaxSet;

use super::theme::Theme;

/// The ANSI theme highlights with this syntect theme, then maps each colour onto the palette.
const ANSI_BASE: &str = "base16-ocean.dark";

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn themes() -> &'static ThemeSet {
    static SET: OnceLock<ThemeSet> = OnceLock::new();
    SET.get_or_init(ThemeSet::load_defaults)
}

fn syntect_theme(theme: &Theme) -> Option<&'static SyntectTheme> {
    let name = theme.syntax.as_deref().unwrap_or(ANSI_BASE);
    themes()
        .themes
        .get(name)
        .or_else(|| themes().themes.get(ANSI_BASE))
}

/// Highlight `code` written in `lang` (a fence token or a file extension). Unknown languages
/// come back in the theme's code colour, one `Line` per source line.
pub fn highlight(code: &str, lang: &str, theme: &Theme) -> Vec<Line<'static>> {
    let plain = || {
        code.lines()
            .map(|l| Line::from(Span::styled(l.to_string(), Style::default().fg(theme.code))))
            .collect()
    };
    let set = syntaxes();
    let Some(syntax) = (!lang.is_empty())
        .then(|| set.find_syntax_by_token(lang))
        .flatten()
    else {
        return plain();
    };
    let Some(syn_theme) = syntect_theme(theme) else {
        return plain();
    };
    let mut lines = HighlightLines::new(syntax, syn_theme);
    let mut out = Vec::new();
    for source in syntect::util::LinesWithEndings::from(code) {
        let Ok(ranges) = lines.highlight_line(source, set) else {
            return plain();
        };
        let spans: Vec<Span<'static>> = ranges
            .into_iter()
            .map(|(style, text)| {
                let fg = style.foreground;
                let color = if theme.syntax.is_some() {
                    Color::Rgb(fg.r, fg.g, fg.b)
                } else {
                    nearest_ansi(fg.r, fg.g, fg.b)
                };
                Span::styled(
                    text.trim_end_matches(['\n', '\r']).to_string(),
                    Style::default().fg(color),
                )
            })
            .filter(|s| !s.content.is_empty())
            .collect();
        out.push(Line::from(spans));
    }
    out
}

/// The ANSI colour closest in hue to an RGB colour, so highlighting respects the palette.
fn nearest_ansi(r: u8, g: u8, b: u8) -> Color {
    let (r, g, b) = (f32::from(r), f32::from(g), f32::from(b));
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    if max - min < 24.0 {
        return if max < 110.0 {
            Color::DarkGray
        } else {
            Color::Reset
        };
    }
    let hue = if (max - r).abs() < f32::EPSILON {
        60.0 * (((g - b) / (max - min)).rem_euclid(6.0))
    } else if (max - g).abs() < f32::EPSILON {
        60.0 * ((b - r) / (max - min) + 2.0)
    } else {
        60.0 * ((r - g) / (max - min) + 4.0)
    };
    match hue as u32 {
        0..=20 | 331..=360 => Color::Red,
        21..=70 => Color::Yellow,
        71..=160 => Color::Green,
        161..=200 => Color::Cyan,
        201..=260 => Color::Blue,
        _ => Color::Magenta,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_code_gets_several_colours_and_keeps_its_text() {
        let theme = Theme::load("dark").expect("load dark");
        let lines = highlight("fn main() {\n    let x = 1;\n}\n", "rust", &theme);
        assert_eq!(lines.len(), 3);
        let text: String = lines[1].spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "    let x = 1;");
        let colours: std::collections::HashSet<_> =
            lines[0].spans.iter().map(|s| s.style.fg).collect();
        assert!(colours.len() > 1, "{lines:?}");
    }

    #[test]
    fn ansi_theme_uses_only_named_colours() {
        let lines = highlight("fn main() {}\n", "rs", &Theme::ansi());
        for span in &lines[0].spans {
            assert!(!matches!(span.style.fg, Some(Color::Rgb(..))), "{span:?}");
        }
    }

    #[test]
    fn unknown_language_is_plain() {
        let lines = highlight("a\nb", "no-such-lang", &Theme::ansi());
        assert_eq!(lines.len(), 2);
    }
}
