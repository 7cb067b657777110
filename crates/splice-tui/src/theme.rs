//! UI themes: the built-in ANSI palette (the default, so the user's terminal scheme decides the
//! actual colours) and JSON theme files (`themes/*.json`, or a path) with explicit colours.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use thiserror::Error;

const BUILT_IN: [(&str, &str); 3] = [
    ("dark", include_str!("../../../themes/dark.json")),
    ("light", include_str!("../../../themes/light.json")),
    (
        "high-contrast",
        include_str!("../../../themes/high-contrast.json"),
    ),
];

#[derive(Debug, Error)]
pub enum ThemeError {
    #[error(
        "unknown theme `{0}` (expected ansi, dark, light, high-contrast or a path to a theme file)"
    )]
    Unknown(String),
    #[error("cannot read theme file {path}: {message}")]
    Read { path: String, message: String },
    #[error("invalid theme {name}: {message}")]
    Invalid { name: String, message: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: String,
    syntax: String,
    colors: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    /// The syntect theme code blocks use; `None` maps highlighting onto the ANSI palette.
    pub syntax: Option<String>,
    pub text: Color,
    pub dim: Color,
    pub accent: Color,
    pub user: Color,
    pub heading: Color,
    pub code: Color,
    pub error: Color,
    pub warning: Color,
    pub success: Color,
    pub border: Color,
    pub added: Color,
    pub removed: Color,
    pub highlight_bg: Color,
    /// Painted under the whole screen; `Reset` keeps the terminal's own. A light theme sets
    /// it, or its dark text would sit on a dark terminal's background.
    pub background: Color,
}

impl Default for Theme {
    fn default() -> Theme {
        Theme::ansi()
    }
}

impl Theme {
    /// Named ANSI colours only: the terminal's own palette decides what they look like.
    pub fn ansi() -> Theme {
        Theme {
            name: "ansi".into(),
            syntax: None,
            text: Color::Reset,
            dim: Color::DarkGray,
            accent: Color::Cyan,
            user: Color::Blue,
            heading: Color::Yellow,
            code: Color::Green,
            error: Color::Red,
            warning: Color::Yellow,
            success: Color::Green,
            border: Color::DarkGray,
            added: Color::Green,
            removed: Color::Red,
            highlight_bg: Color::Reset,
            background: Color::Reset,
        }
    }

    /// Blank an area for an overlay (popup, prompt), keeping the theme's background.
    pub fn clear(&self, area: ratatui::layout::Rect, buf: &mut ratatui::buffer::Buffer) {
        use ratatui::widgets::Widget;
        ratatui::widgets::Clear.render(area, buf);
        if self.background != Color::Reset {
            buf.set_style(area, ratatui::style::Style::default().bg(self.background));
        }
    }

    /// `ansi`, a built-in theme name, or a path to a theme file.
    pub fn load(name: &str) -> Result<Theme, ThemeError> {
        if name == "ansi" || name.is_empty() {
            return Ok(Theme::ansi());
        }
        if let Some((_, text)) = BUILT_IN.iter().find(|(n, _)| *n == name) {
            return Theme::parse(name, text);
        }
        let path = Path::new(name);
        if path.extension().is_some_and(|e| e == "json") || path.exists() {
            let text = std::fs::read_to_string(path).map_err(|e| ThemeError::Read {
                path: name.to_string(),
                message: e.to_string(),
            })?;
            return Theme::parse(name, &text);
        }
        Err(ThemeError::Unknown(name.to_string()))
    }

    pub fn parse(name: &str, text: &str) -> Result<Theme, ThemeError> {
        let invalid = |message: String| ThemeError::Invalid {
            name: name.to_string(),
            message,
        };
        let file: ThemeFile = serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let mut theme = Theme::ansi();
        theme.name = file.name;
        theme.syntax = Some(file.syntax);
        for (key, value) in &file.colors {
            let color = Color::from_str(value)
                .map_err(|_| invalid(format!("`{value}` is not a colour (key {key})")))?;
            let slot = match key.as_str() {
                "text" => &mut theme.text,
                "dim" => &mut theme.dim,
                "accent" => &mut theme.accent,
                "user" => &mut theme.user,
                "heading" => &mut theme.heading,
                "code" => &mut theme.code,
                "error" => &mut theme.error,
                "warning" => &mut theme.warning,
                "success" => &mut theme.success,
                "border" => &mut theme.border,
                "added" => &mut theme.added,
                "removed" => &mut theme.removed,
                "highlight_bg" => &mut theme.highlight_bg,
                "background" => &mut theme.background,
                other => return Err(invalid(format!("unknown colour key `{other}`"))),
            };
            *slot = color;
        }
        Ok(theme)
    }

    pub fn text(&self) -> Style {
        Style::default().fg(self.text)
    }

    pub fn dim(&self) -> Style {
        Style::default().fg(self.dim)
    }

    pub fn accent(&self) -> Style {
        Style::default().fg(self.accent)
    }

    pub fn bold(&self, color: Color) -> Style {
        Style::default().fg(color).add_modifier(Modifier::BOLD)
    }

    pub fn border(&self) -> Style {
        Style::default().fg(self.border)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_themes_parse_and_name_a_syntect_theme() {
        for name in ["dark", "light", "high-contrast"] {
            let theme = Theme::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(theme.name, name);
            assert!(theme.syntax.is_some());
            assert!(matches!(theme.text, Color::Rgb(..)), "{name}");
        }
        assert_eq!(Theme::load("ansi").ok(), Some(Theme::ansi()));
    }

    #[test]
    fn bad_themes_are_errors() {
        assert!(matches!(Theme::load("neon"), Err(ThemeError::Unknown(_))));
        let bad = r##"{"name":"x","syntax":"InspiredGitHub","colors":{"text":"#zz"}}"##;
        assert!(Theme::parse("x", bad).is_err());
        let unknown = r##"{"name":"x","syntax":"InspiredGitHub","colors":{"sparkle":"red"}}"##;
        assert!(Theme::parse("x", unknown).is_err());
    }
}
