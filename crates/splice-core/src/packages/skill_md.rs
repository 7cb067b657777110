//! `SKILL.md`: the sections packages.md asks for, and every manifest tool named in the tools
//! section. A section is a level-2 heading as CommonMark reads it (`## Tools`, or a setext
//! heading underlined with `---`); its title matches when, compared case-insensitively, it is
//! one of the accepted titles or starts with one followed by a non-letter (`## Limits and
//! sizes`). Its body is everything up to the next level-1 or level-2 heading, subsections
//! included.

use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};

use super::Issue;

/// The required sections: a key for paths (`SKILL.md#tools`) and the titles accepted for it.
pub const SECTIONS: [(&str, &[&str]); 5] = [
    ("when-to-use", &["when to use"]),
    ("tools", &["tools"]),
    ("errors", &["errors"]),
    ("limits", &["limits"]),
    ("permissions", &["permissions", "security"]),
];

/// The sections found, keyed as in [`SECTIONS`], with their plain text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Skill {
    pub sections: Vec<(&'static str, String)>,
}

impl Skill {
    pub fn section(&self, key: &str) -> Option<&str> {
        self.sections
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, body)| body.as_str())
    }
}

/// Read `text` (the content of SKILL.md) and report what is missing; `tools` are the
/// manifest's tool names, each of which the tools section must mention as a word.
pub fn check(text: &str, tools: &[&str]) -> (Skill, Vec<Issue>) {
    let skill = read(text);
    let mut issues = Vec::new();
    for (key, titles) in SECTIONS {
        match skill.section(key) {
            None => issues.push(Issue::new(
                "SKILL.md",
                format!(
                    "missing the section `## {}` (a level-2 heading)",
                    capitalise(titles[0])
                ),
            )),
            Some(body) if body.trim().is_empty() => {
                issues.push(Issue::new(
                    format!("SKILL.md#{key}"),
                    "the section is empty",
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(body) = skill.section("tools") {
        for tool in tools {
            if !mentions(body, tool) {
                issues.push(Issue::new(
                    "SKILL.md#tools",
                    format!("does not mention the tool `{tool}`"),
                ));
            }
        }
    }
    (skill, issues)
}

fn read(text: &str) -> Skill {
    let mut skill = Skill::default();
    let mut current: Option<&'static str> = None;
    let mut heading: Option<String> = None;
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::Heading { level, .. })
                if matches!(level, HeadingLevel::H1 | HeadingLevel::H2) =>
            {
                current = None;
                heading = (level == HeadingLevel::H2).then(String::new);
            }
            Event::End(TagEnd::Heading(_)) if heading.is_some() => {
                let title = heading.take().unwrap_or_default();
                current = section_key(&title);
                // The first heading of a kind counts; a repeat adds to it.
                if let Some(key) = current
                    && skill.section(key).is_none()
                {
                    skill.sections.push((key, String::new()));
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(title) = heading.as_mut() {
                    title.push_str(&t);
                } else if let Some(key) = current
                    && let Some((_, body)) = skill.sections.iter_mut().find(|(k, _)| *k == key)
                {
                    body.push_str(&t);
                    body.push(' ');
                }
            }
            _ => {}
        }
    }
    skill
}

fn section_key(title: &str) -> Option<&'static str> {
    let title = title.trim().to_lowercase();
    SECTIONS.iter().find_map(|(key, titles)| {
        titles
            .iter()
            .any(|t| {
                title
                    .strip_prefix(t)
                    .is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric()))
            })
            .then_some(*key)
    })
}

/// `word` appears with no letter, digit, `-` or `_` on either side.
fn mentions(body: &str, word: &str) -> bool {
    let part = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    body.match_indices(word).any(|(at, _)| {
        !body[..at].chars().next_back().is_some_and(part)
            && !body[at + word.len()..].chars().next().is_some_and(part)
    })
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMPLETE: &str = "# splice/json\n\nIntro.\n\n## When to use it\n\nFor JSON.\n\n\
        ## Tools\n\n### `parse`\nParses.\n\n- query: finds a value\n\n## ERRORS\n\nINVALID_JSON\n\n\
        Limits\n---\n\n1 MB.\n\n## Permissions and security boundaries\n\nNone.\n";

    fn issues(text: &str, tools: &[&str]) -> Vec<String> {
        check(text, tools)
            .1
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_complete_skill_passes_with_any_case_and_setext_headings() {
        assert_eq!(issues(COMPLETE, &["parse", "query"]), Vec::<String>::new());
        let (skill, _) = check(COMPLETE, &[]);
        assert_eq!(
            skill.section("when-to-use").map(str::trim),
            Some("For JSON.")
        );
    }

    #[test]
    fn missing_and_empty_sections_and_unmentioned_tools() {
        let text = "## When to use\n\n## Toolshed\n\nparse\n\n## Tools\n\nparser, parse_x, re-parse\n\n\
            ```\n## Errors\n```\n\n### Limits\n\ntext\n\n## Security\n\nok\n";
        assert_eq!(
            issues(text, &["parse"]),
            [
                "SKILL.md#when-to-use: the section is empty",
                "SKILL.md: missing the section `## Errors` (a level-2 heading)",
                "SKILL.md: missing the section `## Limits` (a level-2 heading)",
                "SKILL.md#tools: does not mention the tool `parse`",
            ]
        );
        assert_eq!(issues("", &[]).len(), 5);
    }
}
