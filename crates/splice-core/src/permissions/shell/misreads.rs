//! Where tree-sitter-bash and the shell that runs the line part ways: constructs the grammar
//! reads one way and `sh` (dash) or bash another, or leaves as text though the shell runs them.
//! Each check names why, and the walk refuses the line (fail closed) rather than guess.

use tree_sitter::Node;

/// tree-sitter reads `pu\<newline>sh` as two words; the shell removes `\<newline>` first and
/// runs `push`. Where only line continuations separate two tokens, refuse.
pub fn joined_words(root: Node<'_>, src: &str) -> Option<String> {
    let mut leaves = Vec::new();
    collect_leaves(root, &mut leaves);
    leaves.windows(2).find_map(|pair| {
        let gap = &src[pair[0].end_byte()..pair[1].start_byte()];
        let rest = gap.replace("\\\r\n", "").replace("\\\n", "");
        if !gap.is_empty() && rest.is_empty() {
            return Some("it splits a word across lines with `\\`".to_string());
        }
        // `"git"\ push` is one word; the grammar drops the `\ ` and reads two.
        rest.contains('\\')
            .then(|| "the grammar drops an escaped character the shell keeps in a word".into())
    })
}

/// The leaves in order, without recursion: the tree may be deeper than the stack allows.
fn collect_leaves<'t>(root: Node<'t>, out: &mut Vec<Node<'t>>) {
    let mut cursor = root.walk();
    loop {
        if cursor.goto_first_child() {
            continue;
        }
        out.push(cursor.node());
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

/// Bash syntax that `sh` (dash) reads as something else without a syntax error, and why.
pub fn bash_only(node: Node<'_>, src: &str) -> Option<String> {
    let first = node.child(0).map(|c| c.kind());
    match node.kind() {
        "ansi_c_string" => Some(
            "`$'…'` is bash syntax: sh reads `$` and a quoted string, so its quotes pair differently"
                .into(),
        ),
        "file_redirect" => {
            let mut cursor = node.walk();
            let operator = node
                .children(&mut cursor)
                .find(|c| !c.is_named())
                .map(|c| &src[c.byte_range()]);
            matches!(operator, Some("&>" | "&>>")).then(|| {
                "`&>` is bash syntax: sh runs what comes before it in the background and reads the rest as another command".into()
            })
        }
        "test_command" if first == Some("[[") => Some(
            "`[[ … ]]` is bash syntax: sh runs `[[` as a command, so `&&`, `||`, `<` and `>` inside it work as they do outside"
                .into(),
        ),
        "compound_statement" if first == Some("((") => {
            Some("`(( … ))` is bash syntax: sh reads two subshells running a command".into())
        }
        _ => None,
    }
}

/// bash evaluates arithmetic recursively: a variable (or substitution) read in `$((…))`,
/// `((…))`, `for ((…))`, `[[ … -eq … ]]`, an array index or `${x:offset}` has its value
/// evaluated in turn, and `a[$(…)]` in that value runs a command. `sh` may be bash.
pub fn arithmetic_variable(node: Node<'_>, src: &str) -> Option<String> {
    let first = node.child(0).map(|c| c.kind());
    let mut scope: Vec<Node<'_>> = Vec::new();
    match node.kind() {
        "arithmetic_expansion" => scope.push(node),
        "compound_statement" if first == Some("((") => scope.push(node),
        "c_style_for_statement" => {
            for field in ["initializer", "condition", "update"] {
                scope.extend(node.children_by_field_name(field, &mut node.walk()));
            }
        }
        "subscript" => scope.extend(
            node.child_by_field_name("index")
                .filter(|index| !matches!(&src[index.byte_range()], "@" | "*")),
        ),
        "test_command" if first == Some("[[") => {
            let mut stack = vec![node];
            while let Some(node) = stack.pop() {
                let operator = node.child_by_field_name("operator");
                let arithmetic = operator.is_some_and(|op| {
                    matches!(
                        &src[op.byte_range()],
                        "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge"
                    )
                });
                if arithmetic {
                    scope.extend(node.child_by_field_name("left"));
                    scope.extend(node.child_by_field_name("right"));
                }
                let mut cursor = node.walk();
                stack.extend(node.named_children(&mut cursor).filter(|c| {
                    matches!(
                        c.kind(),
                        "binary_expression" | "unary_expression" | "parenthesized_expression"
                    )
                }));
            }
        }
        "expansion" => {
            // `${x:offset:length}`, not `${x:-default}`.
            let mut cursor = node.walk();
            if node.children(&mut cursor).any(|c| c.kind() == ":") {
                scope.extend(node.named_children(&mut node.walk()).skip(1));
            }
        }
        _ => return None,
    }
    while let Some(node) = scope.pop() {
        if matches!(
            node.kind(),
            "variable_name" | "word" | "simple_expansion" | "expansion" | "command_substitution"
        ) {
            return Some(
                "it reads a variable in arithmetic, where bash evaluates the variable's value and `a[$(…)]` in it runs a command"
                    .into(),
            );
        }
        let mut cursor = node.walk();
        scope.extend(node.named_children(&mut cursor));
    }
    None
}

/// Node kinds that stand for one shell word, or part of one.
const WORDISH: &[&str] = &[
    "word",
    "string",
    "raw_string",
    "ansi_c_string",
    "translated_string",
    "concatenation",
    "simple_expansion",
    "expansion",
    "command_substitution",
    "number",
    "command_name",
];

/// The grammar sometimes ends a word where the shell does not (`"git"\ pu""sh` as `"git"` and
/// `\ pu""sh`): two words of a command with nothing between them are one word to the shell.
pub fn split_word(node: Node<'_>) -> Option<String> {
    if !matches!(
        node.kind(),
        "command" | "declaration_command" | "unset_command" | "file_redirect" | "for_statement"
    ) {
        return None;
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    children
        .windows(2)
        .any(|pair| {
            pair[0].end_byte() == pair[1].start_byte()
                && WORDISH.contains(&pair[0].kind())
                && WORDISH.contains(&pair[1].kind())
        })
        .then(|| "the shell reads as one word what the grammar splits in two".into())
}

/// Text the grammar kept as a plain word (`${x:-`cmd`}`'s default) that holds a backtick or
/// `$(` the shell would run.
pub fn unread_substitution(node: Node<'_>, src: &str) -> Option<String> {
    if !matches!(node.kind(), "word" | "string_content") {
        return None;
    }
    let mut chars = src[node.byte_range()].chars().peekable();
    while let Some(c) = chars.next() {
        let runs = match c {
            '\\' => {
                chars.next();
                false
            }
            '`' => true,
            '$' => chars.peek() == Some(&'('),
            _ => false,
        };
        if runs {
            return Some("a command substitution the grammar left as text".into());
        }
    }
    None
}

/// `[ … ]` is a command in every shell, not syntax: `&&`, `||`, `<`, `>` and parentheses
/// inside it separate commands, redirect, or fail, whatever the grammar makes of them.
pub fn bracket_list(node: Node<'_>) -> Option<String> {
    if node.kind() != "test_command" || node.child(0).map(|c| c.kind()) != Some("[") {
        return None;
    }
    let mut stack = vec![node];
    while let Some(node) = stack.pop() {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            let kind = child.kind();
            if matches!(kind, "&&" | "||" | "<" | ">" | "(" | ")") {
                return Some(format!(
                    "`{kind}` inside `[ … ]` is read by the shell as an operator, not a test"
                ));
            }
            if matches!(
                kind,
                "binary_expression"
                    | "unary_expression"
                    | "parenthesized_expression"
                    | "negated_expression"
            ) {
                stack.push(child);
            }
        }
    }
    None
}

/// A here-document whose delimiter is unquoted has its substitutions run; the grammar leaves
/// backticks, and `$(…)` in a `<<-` body, as text. Refuse what it did not read.
pub fn heredoc_unread(node: Node<'_>, src: &str) -> Option<String> {
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    let quoted = children
        .iter()
        .find(|c| c.kind() == "heredoc_start")
        .is_some_and(|start| src[start.byte_range()].contains(['\'', '"', '\\']));
    if quoted {
        return None;
    }
    let unread = children
        .iter()
        .filter(|c| c.kind() == "heredoc_body")
        .any(|body| {
            let text = &src[body.byte_range()];
            let mut parsed = 0;
            let mut stack = vec![*body];
            while let Some(node) = stack.pop() {
                parsed += usize::from(node.kind() == "command_substitution");
                stack.extend(node.named_children(&mut node.walk()));
            }
            let written = text.matches("$(").count() - text.matches("$((").count();
            text.contains('`') || written > parsed
        });
    unread.then(|| {
        "a here-document holds a substitution the shell runs but Splice cannot read".into()
    })
}
