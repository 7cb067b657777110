//! A hook group's `matcher`, as Claude Code reads it: empty or `*` matches everything; a plain
//! name or `|`-list of names (letters, digits, `_`, `|`) matches those names exactly; anything
//! else is a regular expression searched in the name. A tool is tried under its Splice name and
//! under the Claude Code name it stands for, so `Bash` matches `run_command`.

use regex::Regex;

#[derive(Debug, Clone)]
pub enum Matcher {
    All,
    Names(Vec<String>),
    Pattern(Regex),
}

impl Matcher {
    /// `Err` carries the regex engine's words for a pattern that does not compile.
    pub fn parse(text: &str) -> Result<Matcher, String> {
        let text = text.trim();
        if text.is_empty() || text == "*" {
            return Ok(Matcher::All);
        }
        if text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
        {
            return Ok(Matcher::Names(
                text.split('|')
                    .filter(|n| !n.is_empty())
                    .map(str::to_string)
                    .collect(),
            ));
        }
        Regex::new(text)
            .map(Matcher::Pattern)
            .map_err(|e| e.to_string())
    }

    /// Whether any of `names` (a tool's name and its alias, a stage, a trigger) matches.
    pub fn matches(&self, names: &[&str]) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(list) => names.iter().any(|n| list.iter().any(|l| l == n)),
            Matcher::Pattern(regex) => names.iter().any(|n| regex.is_match(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names the hooks of the tool `name` are matched under (its handler's).
    fn tool_names(name: &str) -> Vec<&str> {
        let claude = crate::tools::registry::builtin_named(name).and_then(|h| h.claude());
        super::super::tool::HookedTool { name, claude }.names()
    }

    fn m(text: &str) -> Matcher {
        Matcher::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn plain_names_are_exact_and_aliases_count() {
        assert!(m("Bash").matches(&tool_names("run_command")));
        assert!(m("run_command").matches(&tool_names("run_command")));
        assert!(!m("Bash").matches(&tool_names("read_file")));
        assert!(m("Write|Edit").matches(&tool_names("edit_file")));
        assert!(!m("Write").matches(&tool_names("write_files_extra")));
        assert!(m("").matches(&["anything"]));
        assert!(m("*").matches(&["anything"]));
    }

    #[test]
    fn patterns_are_searched_and_bad_ones_refused() {
        assert!(m("mcp__.*").matches(&tool_names("mcp__docs__search")));
        assert!(m("^acme\\.").matches(&["acme.text.count"]));
        assert!(!m("^mcp__").matches(&tool_names("run_command")));
        assert!(Matcher::parse("(unclosed").is_err());
    }
}
