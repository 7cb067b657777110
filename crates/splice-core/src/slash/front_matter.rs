//! A command file's front matter: the `---` block at its top, in the small part of YAML that
//! Claude Code's command files use (`key: value`, quoted or not; a list as `[a, b]` or as `- a`
//! lines). Keys other than those read here are ignored, as Claude Code ignores them, so a
//! file written for it (with `disable-model-invocation`, say) works unchanged. Agent
//! definitions (`.splice/agents/*.md`) use the same front matter with keys of their own
//! (`name`, `tools`, `permissionMode`, `maxTurns`).

/// What the front matter says; a key absent is `None` (an empty list).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrontMatter {
    pub description: Option<String>,
    pub argument_hint: Option<String>,
    pub model: Option<String>,
    /// Permission rules, as written (`Bash(git add:*)` or `run_command(git add *)`).
    pub allowed_tools: Vec<String>,
    /// An agent definition's name.
    pub name: Option<String>,
    /// The tools an agent definition allows, as written (`read_file`, or Claude Code's `Read`).
    pub tools: Vec<String>,
    /// An agent definition's `permissionMode`, as written.
    pub permission_mode: Option<String>,
    /// An agent definition's `maxTurns`, as written.
    pub max_turns: Option<String>,
}

/// The front matter of `text` and the body after it; text without front matter is all body.
/// An unclosed block is not front matter.
pub fn split(text: &str) -> (FrontMatter, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(after_open) = strip_fence(text) else {
        return (FrontMatter::default(), text);
    };
    let mut offset = 0;
    for line in after_open.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let block = &after_open[..offset];
            return (parse(block), &after_open[offset + line.len()..]);
        }
        offset += line.len();
    }
    (FrontMatter::default(), text)
}

/// The text after an opening `---` line.
fn strip_fence(text: &str) -> Option<&str> {
    let first = text.split_inclusive('\n').next()?;
    (first.trim_end() == "---").then(|| &text[first.len()..])
}

fn parse(block: &str) -> FrontMatter {
    let mut matter = FrontMatter::default();
    let mut list_of: Option<String> = None;
    for line in block.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let (Some(key), Some(item)) = (&list_of, trimmed.strip_prefix("- ")) {
            match key.as_str() {
                "allowed-tools" => matter.allowed_tools.push(unquote(item).to_string()),
                "tools" => matter.tools.push(unquote(item).to_string()),
                _ => {}
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim().to_string(), value.trim());
        list_of = value.is_empty().then(|| key.clone());
        match key.as_str() {
            "description" => matter.description = text_value(value),
            "argument-hint" => matter.argument_hint = text_value(value),
            "model" => matter.model = text_value(value),
            "allowed-tools" => matter.allowed_tools.extend(rules(value)),
            "name" => matter.name = text_value(value),
            "tools" => matter.tools.extend(rules(value)),
            "permissionMode" => matter.permission_mode = text_value(value),
            "maxTurns" => matter.max_turns = text_value(value),
            _ => {}
        }
    }
    matter
}

fn text_value(value: &str) -> Option<String> {
    let value = unquote(value);
    (!value.is_empty()).then(|| value.to_string())
}

fn unquote(value: &str) -> &str {
    let value = value.trim();
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// Rules written on one line: `[a, b]`, or separated by commas or spaces outside parentheses
/// (`Bash(git add:*), Bash(git status:*)`).
fn rules(value: &str) -> Vec<String> {
    let value = unquote(value);
    let value = value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .unwrap_or(value);
    let mut rules = Vec::new();
    let (mut depth, mut current) = (0usize, String::new());
    for c in value.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c == ',' || c.is_whitespace()) {
            push_rule(&mut rules, &mut current);
        } else {
            current.push(c);
        }
    }
    push_rule(&mut rules, &mut current);
    rules
}

fn push_rule(rules: &mut Vec<String>, current: &mut String) {
    let rule = unquote(current).to_string();
    if !rule.is_empty() {
        rules.push(rule);
    }
    current.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_keys_and_ignores_others() {
        let text = "---\ndescription: Review a file\nargument-hint: \"[path]\"\nmodel: 'sonnet'\n\
                    disable-model-invocation: true\nallowed-tools: Bash(git add:*), Bash(git status:*) Read\n---\nBody $1\n";
        let (matter, body) = split(text);
        assert_eq!(matter.description.as_deref(), Some("Review a file"));
        assert_eq!(matter.argument_hint.as_deref(), Some("[path]"));
        assert_eq!(matter.model.as_deref(), Some("sonnet"));
        assert_eq!(
            matter.allowed_tools,
            ["Bash(git add:*)", "Bash(git status:*)", "Read"]
        );
        assert_eq!(body, "Body $1\n");
    }

    #[test]
    fn lists_in_brackets_and_on_lines() {
        let (matter, _) = split("---\nallowed-tools: [read_file, \"run_command(ls *)\"]\n---\n");
        assert_eq!(matter.allowed_tools, ["read_file", "run_command(ls *)"]);
        let (matter, body) =
            split("---\nallowed-tools:\n  - run_command(git diff *)\n  - read_file\n---\nx");
        assert_eq!(
            matter.allowed_tools,
            ["run_command(git diff *)", "read_file"]
        );
        assert_eq!(body, "x");
    }

    #[test]
    fn an_agent_definitions_keys() {
        let text = "---\nname: reviewer\ndescription: Reviews diffs\ntools: [read_file, Grep]\n\
                    permissionMode: accept-edits\nmaxTurns: 7\nmodel: mini\n---\nYou review.\n";
        let (matter, body) = split(text);
        assert_eq!(matter.name.as_deref(), Some("reviewer"));
        assert_eq!(matter.tools, ["read_file", "Grep"]);
        assert_eq!(matter.permission_mode.as_deref(), Some("accept-edits"));
        assert_eq!(matter.max_turns.as_deref(), Some("7"));
        assert_eq!(matter.model.as_deref(), Some("mini"));
        assert_eq!(body, "You review.\n");
        let (matter, _) = split("---\ntools:\n  - write_file\n  - run_command\n---\n");
        assert_eq!(matter.tools, ["write_file", "run_command"]);
    }

    #[test]
    fn without_a_closed_block_all_is_body() {
        assert_eq!(split("Just text\n").1, "Just text\n");
        assert_eq!(
            split("---\ndescription: x\nno end").1,
            "---\ndescription: x\nno end"
        );
        assert_eq!(split("---\n---\nbody").1, "body");
    }
}
