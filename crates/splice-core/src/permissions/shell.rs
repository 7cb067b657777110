//! A command line read the way the shell will run it, so rules judge what runs rather than how
//! it is spelled: every simple command (in lists, pipelines, subshells, groups, loop and `if`
//! bodies, functions, substitutions), its words unquoted and unescaped, and the commands run
//! through wrappers (`nice`, `env`, `xargs`, `find -exec`, `sh -c '…'`, git aliases…).
//!
//! The grammar is tree-sitter-bash (what codex-rs uses for the same job): a maintained grammar
//! with a small pure-C runtime (two crates, a 2 s C compile, no proc macros). brush-parser
//! pulls in peg, bon, cached and insta at run time; yash-syntax is GPL-3.0.

mod git;
mod misreads;
mod programs;
mod words;

use tree_sitter::{Node, Parser};

use programs::Dialect;
pub use words::Word;
pub(crate) use words::unescape;

/// The word a grammar node stands for (for readers of their own, as `permissions::pinned`).
pub(crate) fn word_of(node: Node<'_>, src: &str) -> Word {
    words::word(node, src)
}

/// One simple command of a command line, as written, for allow rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub text: String,
    /// It redirects output into a file (`> f`, `>> f`); `2>&1` is not a file.
    pub writes_file: bool,
}

/// One command the line may run, as a deny rule reads it: the program without its directory,
/// git without its global options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub words: Vec<Word>,
}

/// Everything a command line runs, as far as it can be seen.
#[derive(Debug, Default)]
pub struct Analysis {
    pub commands: Vec<Command>,
    /// Why part of it cannot be seen through (`eval`, `… | sh`, a parse error).
    pub opaque: Option<String>,
    /// The top-level simple commands as written.
    pub parts: Vec<Part>,
    /// It substitutes commands (`$(…)`, backticks, `<(…)`).
    pub substitutes: bool,
    /// It did not parse, or `sh` reads it differently, so `parts` are not the whole line.
    pub broken: bool,
    /// How deep the walk is, across nested scripts: bounded so a hostile line cannot overflow
    /// the stack.
    level: usize,
}

/// How deep wrappers and nested scripts may go before the command is refused.
const MAX_DEPTH: usize = 8;

/// How deep syntax may nest, nested scripts included, before the command is refused. Real
/// commands stay far below; thousands of `$(` once overflowed the stack and aborted the run.
const MAX_LEVEL: usize = 100;

/// How many leading words of an unknown program are tried as the command it wraps: a wrapper
/// puts the command early, and a bound keeps a long argument list from costing quadratic time.
const SUFFIX_STARTS: usize = 32;

/// Node kinds whose children are searched for commands.
const DESCEND: &[&str] = &[
    "program",
    "list",
    "pipeline",
    "subshell",
    "compound_statement",
    "do_group",
    "negated_command",
    "if_statement",
    "elif_clause",
    "else_clause",
    "while_statement",
    "for_statement",
    "c_style_for_statement",
    "case_statement",
    "case_item",
    "function_definition",
    "test_command",
    "declaration_command",
    "unset_command",
    "variable_assignment",
    "variable_assignments",
    "command_name",
    "concatenation",
    "string",
    "translated_string",
    "expansion",
    "simple_expansion",
    "arithmetic_expansion",
    "binary_expression",
    "unary_expression",
    "ternary_expression",
    "postfix_expression",
    "parenthesized_expression",
    "subscript",
    "array",
    "brace_expression",
    "file_redirect",
    "heredoc_redirect",
    "herestring_redirect",
    "heredoc_body",
];

/// Node kinds that hold no command.
const LEAVES: &[&str] = &[
    "word",
    "number",
    "raw_string",
    "string_content",
    "ansi_c_string",
    "variable_name",
    "special_variable_name",
    "comment",
    "file_descriptor",
    "heredoc_start",
    "heredoc_end",
    "heredoc_content",
    "extglob_pattern",
    "regex",
    "test_operator",
];

/// `word` as one shell word: as it is when no character needs quoting, else single-quoted.
pub fn quote_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%_+=:,./-".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

pub fn analyze(command: &str) -> Analysis {
    let mut analysis = Analysis::default();
    parse_into(command, 0, &mut analysis, true, Dialect::Posix);
    analysis
}

/// Split `command` into its simple commands for allow rules. `None` when it substitutes
/// commands (`$(…)`, backticks, `<(…)`), whose parts cannot be judged from here, or does not
/// parse.
pub fn split(command: &str) -> Option<Vec<Part>> {
    let analysis = analyze(command);
    (!analysis.substitutes && !analysis.broken).then_some(analysis.parts)
}

/// Read `src` as `dialect` reads it: the top level is `sh -c`.
fn parse_into(src: &str, depth: usize, out: &mut Analysis, top: bool, dialect: Dialect) {
    if depth > MAX_DEPTH {
        out.refuse("it nests commands too deeply".into());
        return;
    }
    let mut parser = Parser::new();
    let tree = parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()
        .and_then(|()| parser.parse(src, None));
    let Some(tree) = tree.filter(|t| !t.root_node().has_error()) else {
        out.broken |= top;
        out.refuse("it does not parse as a shell command".into());
        return;
    };
    if let Some(reason) = misreads::joined_words(tree.root_node(), src) {
        out.broken |= top;
        out.refuse(reason);
        return;
    }
    let mut walker = Walker {
        src,
        depth,
        top,
        dialect,
        out,
    };
    walker.walk(tree.root_node(), false);
}

impl Analysis {
    fn refuse(&mut self, reason: String) {
        self.opaque.get_or_insert(reason);
    }
}

struct Walker<'a> {
    src: &'a str,
    depth: usize,
    top: bool,
    dialect: Dialect,
    out: &'a mut Analysis,
}

impl Walker<'_> {
    fn walk(&mut self, node: Node<'_>, writes_file: bool) {
        if self.out.level >= MAX_LEVEL {
            self.misread("it nests commands too deeply".into());
            return;
        }
        let misread = match self.dialect {
            Dialect::Posix => misreads::bash_only(node, self.src),
            Dialect::Bash => None,
        };
        let misread = misread
            .or_else(|| misreads::split_word(node))
            .or_else(|| misreads::unread_substitution(node, self.src))
            .or_else(|| misreads::bracket_list(node))
            .or_else(|| misreads::arithmetic_variable(node, self.src));
        if let Some(why) = misread {
            self.misread(why);
            return;
        }
        self.out.level += 1;
        self.visit(node, writes_file);
        self.out.level -= 1;
    }

    /// The shell reads this part differently from the grammar: refused, and no allow rule
    /// covers the line.
    fn misread(&mut self, why: String) {
        self.out.broken |= self.top;
        self.out.refuse(why);
    }

    fn visit(&mut self, node: Node<'_>, writes_file: bool) {
        match node.kind() {
            "command" => self.command(node, node, writes_file, Vec::new()),
            "redirected_statement" => {
                let writes = writes_file || writes_to_file(node, self.src);
                let mut cursor = node.walk();
                let children: Vec<(Node<'_>, bool)> = node
                    .children(&mut cursor)
                    .enumerate()
                    .map(|(index, child)| {
                        let body = node.field_name_for_child(index as u32) == Some("body");
                        (child, body)
                    })
                    .collect();
                // Words the grammar hung on the redirections belong to the command.
                let extra: Vec<Word> = children
                    .iter()
                    .filter(|(_, body)| !body)
                    .flat_map(|(child, _)| redirect_extras(*child, self.src))
                    .collect();
                for (child, body) in children {
                    if body && child.kind() == "command" {
                        self.command(child, node, writes, extra.clone());
                    } else if body && !extra.is_empty() {
                        self.misread("words follow a redirection of a compound command".into());
                    } else {
                        self.walk(child, writes);
                    }
                }
            }
            "command_substitution" | "process_substitution" => {
                self.out.substitutes = true;
                self.children(node, false);
                self.backticks_again(node);
            }
            "heredoc_redirect" => {
                if let Some(why) = misreads::heredoc_unread(node, self.src) {
                    self.misread(why);
                }
                self.children(node, writes_file);
            }
            // Kept as text by the grammar, expanded by the shell.
            "regex" | "extglob_pattern" => {
                let text = &self.src[node.byte_range()];
                if text.contains("$(") || text.contains('`') {
                    self.misread(
                        "a pattern holds a command substitution, which the shell runs".into(),
                    );
                }
            }
            "variable_assignment" => {
                self.assignment(node);
                self.children(node, writes_file);
            }
            "declaration_command" | "unset_command" => {
                self.declaration(node);
                self.children(node, writes_file);
            }
            "test_command" => {
                self.tested_names(node);
                self.children(node, writes_file);
            }
            "for_statement" => {
                self.loop_variable(node);
                self.children(node, writes_file);
            }
            "expansion" => {
                self.default_assignment(node);
                self.children(node, writes_file);
            }
            kind if DESCEND.contains(&kind) => self.children(node, writes_file),
            kind if LEAVES.contains(&kind) || !node.is_named() => {}
            kind => self.out.refuse(format!(
                "it uses shell syntax Splice does not check (`{kind}`)"
            )),
        }
    }

    /// Inside backticks the shell removes `\` before `$`, `` ` `` and `\`, then reads the text
    /// again: `` `echo \`cmd\`` `` runs `cmd`. Read it the same second time.
    fn backticks_again(&mut self, node: Node<'_>) {
        let text = &self.src[node.byte_range()];
        let Some(body) = text.strip_prefix('`').and_then(|t| t.strip_suffix('`')) else {
            return;
        };
        if body.contains('\\') {
            let again = words::unescape(body, |c| matches!(c, '$' | '`' | '\\'));
            parse_into(&again, self.depth + 1, self.out, false, self.dialect);
        }
    }

    fn children(&mut self, node: Node<'_>, writes_file: bool) {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.walk(child, writes_file);
        }
    }

    /// `NAME=value` where NAME makes a later program run something (`GIT_SSH_COMMAND`).
    fn assignment(&mut self, node: Node<'_>) {
        let name = node
            .child_by_field_name("name")
            .map(|n| &self.src[n.byte_range()]);
        let value = match node.child_by_field_name("value") {
            Some(value) => words::word(value, self.src),
            None => Word::Known(String::new()),
        };
        if let Some(effect) = name.and_then(|name| programs::assignment(name, &value)) {
            self.follow(effect, self.depth);
        }
    }

    /// `declare`, `local`, `export`, `readonly`, `unset`: names whose subscripts bash evaluates.
    fn declaration(&mut self, node: Node<'_>) {
        let program = node.child(0).map(|c| &self.src[c.byte_range()]);
        let mut cursor = node.walk();
        let names: Vec<Word> = node
            .named_children(&mut cursor)
            .filter(|c| c.kind() != "variable_assignment")
            .map(|c| match c.kind() {
                "variable_name" => Word::Known(self.src[c.byte_range()].to_string()),
                _ => words::word(c, self.src),
            })
            .collect();
        if let Some(effect) = program.and_then(|p| programs::variable_names(p, &names)) {
            self.follow(effect, self.depth);
        }
    }

    /// `${NAME:=VALUE}` and `${NAME=VALUE}` set NAME, as `NAME=VALUE` would.
    fn default_assignment(&mut self, node: Node<'_>) {
        let mut cursor = node.walk();
        let assigns = node
            .children(&mut cursor)
            .any(|c| matches!(c.kind(), ":=" | "="));
        let name = node
            .named_child(0)
            .filter(|n| n.kind() == "variable_name")
            .map(|n| &self.src[n.byte_range()]);
        if let (true, Some(name)) = (assigns, name) {
            let value = Word::Unknown(format!("`{}`", &self.src[node.byte_range()]));
            if let Some(effect) = programs::assignment(name, &value) {
                self.follow(effect, self.depth);
            }
        }
    }

    /// `for NAME in VALUE…` (and `select`) sets NAME to each value, as `NAME=VALUE` would.
    fn loop_variable(&mut self, node: Node<'_>) {
        let Some(name) = node
            .child_by_field_name("variable")
            .map(|n| &self.src[n.byte_range()])
        else {
            return;
        };
        let mut cursor = node.walk();
        let mut values: Vec<Word> = node
            .children_by_field_name("value", &mut cursor)
            .map(|value| words::word(value, self.src))
            .collect();
        if values.is_empty() {
            values.push(Word::Unknown("the positional parameters".into()));
        }
        for value in values {
            if let Some(effect) = programs::assignment(name, &value) {
                self.follow(effect, self.depth);
            }
        }
    }

    /// `[ -v NAME ]`, `[[ -v NAME ]]`: a name whose subscript bash evaluates.
    fn tested_names(&mut self, node: Node<'_>) {
        let mut stack = vec![node];
        while let Some(node) = stack.pop() {
            let mut cursor = node.walk();
            stack.extend(node.named_children(&mut cursor).filter(|c| {
                matches!(
                    c.kind(),
                    "binary_expression" | "unary_expression" | "parenthesized_expression"
                )
            }));
            let tests_name = node.kind() == "unary_expression"
                && node
                    .child_by_field_name("operator")
                    .is_some_and(|op| &self.src[op.byte_range()] == "-v");
            let operand = node
                .named_children(&mut node.walk())
                .find(|c| c.kind() != "test_operator");
            if let (true, Some(operand)) = (tests_name, operand) {
                let args = [Word::Known("-v".into()), words::word(operand, self.src)];
                if let Some(effect) = programs::variable_names("test", &args) {
                    self.follow(effect, self.depth);
                }
            }
        }
    }

    fn follow(&mut self, inner: programs::Inner, depth: usize) {
        match inner {
            programs::Inner::Run(words) => self.resolve(words, depth + 1, true),
            programs::Inner::Script(script, dialect) => {
                parse_into(&script, depth + 1, self.out, false, dialect)
            }
            programs::Inner::Opaque(reason) => self.out.refuse(reason),
        }
    }

    /// A simple command: `written` is the node whose text allow rules see (with redirects).
    /// `extra`: words after the command's trailing redirections, which are its arguments.
    fn command(&mut self, node: Node<'_>, written: Node<'_>, writes_file: bool, extra: Vec<Word>) {
        let mut words = Vec::new();
        let mut writes = writes_file;
        let mut cursor = node.walk();
        for (index, child) in node.children(&mut cursor).enumerate() {
            match node.field_name_for_child(index as u32) {
                Some("name") => match child.named_child(0) {
                    Some(name) => words.push(words::word(name, self.src)),
                    None => words.push(words::word(child, self.src)),
                },
                Some("argument") => words.push(words::word(child, self.src)),
                Some("redirect") => {
                    writes |= redirect_writes(child, self.src);
                    let hung = redirect_extras(child, self.src);
                    if !hung.is_empty() && words.is_empty() {
                        self.misread("a redirection hides which program runs".into());
                    }
                    words.extend(hung);
                }
                _ => {}
            }
            // Substitutions inside words and assignments run too.
            self.walk(child, false);
        }
        words.extend(extra);
        if self.top {
            self.out.parts.push(Part {
                text: self.src[written.byte_range()].trim().to_string(),
                writes_file: writes,
            });
        }
        self.resolve(words, self.depth, true);
    }

    /// Record `words` and what it runs in turn. `suffixes`: also read each later word as a
    /// program, for wrappers Splice does not know (`chrt 5 git push`).
    fn resolve(&mut self, mut words: Vec<Word>, depth: usize, suffixes: bool) {
        if depth > MAX_DEPTH {
            self.out.refuse("it nests commands too deeply".into());
            return;
        }
        let Some(first) = words.first_mut() else {
            return;
        };
        if let Word::Known(program) = first {
            *program = programs::basename(program).to_string();
        }
        // git's builtins are installed as `git-push` and so on too, and run so they are git.
        let dashed = words[0]
            .known()
            .and_then(|p| p.strip_prefix("git-"))
            .filter(|sub| git::is_builtin(sub))
            .map(str::to_string);
        if let Some(sub) = dashed {
            words.splice(0..1, [Word::Known("git".into()), Word::Known(sub)]);
        }
        let mut inner = if suffixes {
            programs::inner(&words)
        } else {
            Vec::new()
        };
        let program = words[0].known().map(str::to_string);
        if program.as_deref() == Some("git") {
            let (plain, runs) = git::plain(&words[1..]);
            words = plain;
            inner.extend(runs);
        }
        let known_inner = !inner.is_empty();
        for next in inner {
            self.follow(next, depth);
        }
        if suffixes && !known_inner && program.as_deref().is_some_and(programs::may_run_arguments) {
            for start in 1..words.len().min(SUFFIX_STARTS) {
                let starts_command = words[start]
                    .known()
                    .is_some_and(|w| !w.is_empty() && !w.starts_with('-') && !w.contains('='));
                if starts_command {
                    self.resolve(words[start..].to_vec(), depth + 1, false);
                }
            }
        }
        self.out.commands.push(Command { words });
    }
}

/// The words tree-sitter-bash attaches to a redirection after its target (`>x push` has `x`
/// and `push` as destinations, `<<EOF push` has `push` as an argument): the shell passes them
/// to the command.
fn redirect_extras(redirect: Node<'_>, src: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut target = false;
    let mut cursor = redirect.walk();
    for (index, child) in redirect.children(&mut cursor).enumerate() {
        match redirect.field_name_for_child(index as u32) {
            Some("destination") if target => out.push(words::word(child, src)),
            Some("destination") => target = true,
            Some("argument") => out.push(words::word(child, src)),
            _ => {}
        }
    }
    out
}

/// Whether a `redirected_statement` writes a file through one of its own redirects.
fn writes_to_file(node: Node<'_>, src: &str) -> bool {
    let mut cursor = node.walk();
    node.children(&mut cursor)
        .enumerate()
        .any(|(index, child)| {
            node.field_name_for_child(index as u32) == Some("redirect")
                && redirect_writes(child, src)
        })
}

/// `> f`, `>> f`, `&> f`, `>| f`, `<> f` and `>& f` write a file; `2>&1`, `>&-` do not.
fn redirect_writes(redirect: Node<'_>, src: &str) -> bool {
    if redirect.kind() != "file_redirect" {
        return false;
    }
    let mut cursor = redirect.walk();
    let children: Vec<Node<'_>> = redirect.children(&mut cursor).collect();
    let Some(operator) = children.iter().find(|c| !c.is_named()) else {
        return false;
    };
    // The first destination is the target; any later ones are the command's arguments.
    let destination = children
        .iter()
        .find(|c| c.is_named() && c.kind() != "file_descriptor")
        .map(|c| &src[c.byte_range()]);
    match operator.kind() {
        ">" | ">>" | "&>" | "&>>" | ">|" | "<>" => true,
        ">&" => !destination.is_some_and(|d| d == "-" || d.chars().all(|c| c.is_ascii_digit())),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(command: &str) -> Option<Vec<String>> {
        split(command).map(|parts| parts.into_iter().map(|p| p.text).collect())
    }

    #[test]
    fn splits_on_operators_outside_quotes() {
        assert_eq!(
            texts("cargo test; rm -rf x && echo 'a;b' || grep \"x|y\" f | wc -l &"),
            Some(vec![
                "cargo test".to_string(),
                "rm -rf x".to_string(),
                "echo 'a;b'".to_string(),
                "grep \"x|y\" f".to_string(),
                "wc -l".to_string(),
            ])
        );
    }

    #[test]
    fn substitutions_cannot_be_judged() {
        assert_eq!(texts("echo $(curl x)"), None);
        assert_eq!(texts("echo `id`"), None);
        assert_eq!(texts("diff <(ls a) <(ls b)"), None);
        assert_eq!(texts("echo 'unclosed"), None);
        assert_eq!(
            texts("echo '$(not run)'"),
            Some(vec!["echo '$(not run)'".to_string()])
        );
    }

    #[test]
    fn file_redirects_are_noticed_but_descriptor_copies_are_not() {
        let parts = split("cargo test 2>&1").unwrap_or_default();
        assert_eq!(parts.len(), 1);
        assert!(!parts[0].writes_file);
        let parts = split("cargo test > log.txt").unwrap_or_default();
        assert!(parts[0].writes_file);
        assert_eq!(parts[0].text, "cargo test > log.txt");
        let parts = split("{ a; b; } >> log.txt").unwrap_or_default();
        assert!(parts.iter().all(|p| p.writes_file));
        let parts = split("cargo test 2>&1 -- --nocapture").unwrap_or_default();
        assert!(!parts[0].writes_file);
    }

    fn plain(command: &str) -> Vec<String> {
        analyze(command)
            .commands
            .iter()
            .map(|c| {
                c.words
                    .iter()
                    .map(|w| w.known().unwrap_or("?"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    /// `sh` is dash here: where it and bash part ways without a syntax error the line is
    /// refused, and no allow rule covers it; a `bash -c` script is read as bash.
    #[test]
    fn bash_syntax_that_sh_reads_differently_is_refused() {
        for misread in [
            "echo $'\\' ; git push ; #'",
            "echo &>/dev/null git push",
            "true &>>log git push",
            "[[ a || sh -c 'git push' ]]",
            "(( x )) || true",
            "sh -c \"echo &>x git push\"",
            "git -c 'alias.p=!echo &>x git push' p",
            "trap \"echo &>x git push\" EXIT",
        ] {
            let analysis = analyze(misread);
            assert!(analysis.opaque.is_some(), "{misread:?}: {analysis:?}");
            assert!(
                misread.contains(" -c") || misread.starts_with("trap") || split(misread).is_none(),
                "{misread:?}"
            );
        }
        for read in [
            "bash -c \"echo \\$'a\\\\tb'\"",
            "bash -c 'cargo test &>log'",
            "bash -c '[[ -n x ]] && ls'",
            "cargo test > log 2>&1",
            "[ -n x ] && ls",
            "[ a = b -o -z c ]",
        ] {
            assert_eq!(analyze(read).opaque, None, "{read:?}");
        }
    }

    /// `[ … ]` is a command: `||` inside it ends it, in every shell.
    #[test]
    fn operators_inside_brackets_are_refused() {
        for misread in [
            "[ a || sh -c 'git push' ]",
            "[ a > b ]",
            "bash -c '[ a || b ]'",
        ] {
            assert!(analyze(misread).opaque.is_some(), "{misread:?}");
        }
    }

    /// fish and csh quote differently from bash (`'a\'b'` is one word in fish) and zsh runs
    /// code from glob qualifiers: their scripts are refused rather than read as bash.
    #[test]
    fn scripts_for_shells_with_other_syntax_are_refused() {
        for other in [
            "fish -c \"echo 'a\\' ; echo ' ; git push ; echo '#'\"",
            "zsh -c 'echo *(e:\"git push\":)'",
            "csh -c 'echo x'",
            "ksh -c 'echo x'",
        ] {
            assert!(analyze(other).opaque.is_some(), "{other:?}");
        }
    }

    /// Nesting deeper than the walk allows is refused, in one script or across nested ones,
    /// on a stack smaller than a runtime worker's.
    #[test]
    fn deep_nesting_is_refused_within_a_small_stack() {
        let deep = format!("echo {}x{}", "$(".repeat(5000), ")".repeat(5000));
        let mut nested = "echo x".to_string();
        for _ in 0..8 {
            nested = format!(
                "sh -c {}",
                quote_for_sh(&format!("{}{nested}{}", "( ".repeat(40), " )".repeat(40)))
            );
        }
        let analyses = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(move || [analyze(&deep), analyze(&nested)])
            .expect("spawn")
            .join()
            .unwrap_or_else(|_| panic!("the analysis panicked"));
        let [deep, nested] = analyses;
        assert!(deep.opaque.is_some() && deep.broken, "{deep:?}");
        assert_eq!(
            nested.opaque.as_deref(),
            Some("it nests commands too deeply"),
            "{nested:?}"
        );
    }

    fn quote_for_sh(text: &str) -> String {
        format!("'{}'", text.replace('\'', "'\\''"))
    }

    /// git runs commands named by its options, its `ext::` transport and `bisect run`, and
    /// git commands through `for-each-repo`; bash runs `a[$(…)]` found in a variable's value
    /// when it evaluates arithmetic.
    #[test]
    fn commands_in_git_options_and_arithmetic_are_seen() {
        let runs_push = |command: &str| plain(command).iter().any(|c| c.starts_with("git push"));
        for command in [
            "git ls-remote --upload-pack='git push; git-upload-pack' r",
            "git fetch --upload='git push' r",
            "git ls-remote --exec='git push' r",
            "git fetch-pack --exec='git push' r",
            "git clone -u 'git push' r",
            "git archive --remote=r --exec='git push' HEAD",
            "git rebase -ix 'git push' HEAD",
            "git rebase --exec='git push' --root",
            "git -c alias.r=rebase r -x 'git push'",
            "git difftool --extcmd='git push'",
            "git grep '-Ogit push' x",
            "git bisect run git push",
            "git -c maintenance.repo=. for-each-repo --config=maintenance.repo push",
            "git -c interactive.diffFilter='git push; cat' add -p",
            "git -c browser.x.path='git push' help -w log",
        ] {
            assert!(runs_push(command), "{command:?}: {:?}", plain(command));
        }
        for opaque in [
            "git -c protocol.ext.allow=always ls-remote 'ext::sh -c git% push'",
            "git config protocol.allow always",
            "GIT_ALLOW_PROTOCOL=ext git fetch x",
            "git remote add o 'ext::sh -c x'",
            "git rebase $OPTS --root",
            "git clone --template=t r",
            "x='a[$(git push)]' bash -c 'echo $((x))'",
            "bash -c '[[ $x -eq 1 ]]'",
            "bash -c '((x))'",
            "echo $((x + 1))",
            "echo ${a[i]} ${s:n}",
            "for ((i = 0; i < n; i++)); do :; done",
            "let x=1",
        ] {
            assert!(analyze(opaque).opaque.is_some(), "{opaque:?}");
        }
        for clear in [
            "git rebase -i HEAD~3",
            "git push -u origin main",
            "git grep -n -e x",
            "echo $((1 + 2)) ${a[0]} ${a[@]} ${s:1:2} ${x:-y}",
            "bash -c '[[ -f x && 1 -eq 1 ]]'",
        ] {
            assert_eq!(analyze(clear).opaque, None, "{clear:?}");
        }
    }

    /// Variable names with `$(…)` in a subscript, names only known when the command runs,
    /// `rg --pre`, and variables that name a command for less, man or a browser.
    #[test]
    fn variable_names_and_command_variables_are_seen() {
        for opaque in [
            "printf -v 'a[$(git push)]' x",
            "printf -v\"a[\\$(id)]\" x",
            "printf -v \"$name\" x",
            "test -v 'a[`id`]'",
            "[ -v 'a[$i]' ]",
            "read 'a[$(id)]' < f",
            "read -r \"$name\" < f",
            "mapfile 'a[$(id)]' < f",
            "declare 'a[$(id)]=1'",
            "local \"$n\"",
            "unset 'a[$(id)]'",
            "builtin declare 'a[$(id)]=1'",
            "wait -p 'a[$(id)]'",
            "rg --pre ./x pattern",
            "rg --pre=git pattern push",
            "read GIT_EDITOR < f",
            "printf -v GIT_SSH_COMMAND x",
            "for GIT_PAGER; do git -p log; done",
            ": ${GIT_EDITOR:=x}",
            "echo ${EDITOR=vi}",
            "declare -n r=GIT_EDITOR",
            "local -n r=x",
        ] {
            assert!(analyze(opaque).opaque.is_some(), "{opaque:?}");
        }
        for command in [
            "LESSOPEN='|git push %s' less a.txt",
            "LESSOPEN='||-git push %s' less a.txt",
            "MANPAGER='git push' man ls",
            "BROWSER='git push' xdg-open x",
            "for GIT_EDITOR in 'git push'; do git commit; done",
        ] {
            assert!(
                plain(command).iter().any(|c| c.starts_with("git push")),
                "{command:?}: {:?}",
                plain(command)
            );
        }
        for clear in [
            "printf '%s\\n' \"$HOME\" 'a[$(x)]'",
            "read -r line < f",
            "declare -a names",
            "export PATH=\"$PATH:x\"",
            "rg 'git push' src",
            "wait $!",
            "test -n \"$x\"",
            "for f in a b; do wc -l \"$f\"; done",
            "echo ${name:=x} ${EDITOR:-vi}",
        ] {
            assert_eq!(analyze(clear).opaque, None, "{clear:?}");
        }
    }

    /// tree-sitter-bash hangs the words after a redirection on it (`git 2>&1 push` parses as
    /// `git` redirected to `1` and `push`); the shell passes them to the command.
    #[test]
    fn words_after_a_redirection_are_arguments() {
        for (command, runs) in [
            ("git 2>&1 push", "git push"),
            ("git >/dev/null push origin", "git push origin"),
            ("git <in push", "git push"),
            ("git >>log push -f", "git push -f"),
            ("git >x push >y origin", "git push origin"),
            ("git >x \"push\"", "git push"),
            ("sudo >x git push", "git push"),
            ("echo x 2>/dev/null; nice >x git push", "git push"),
            ("cat <<EOF push\nx\nEOF", "cat push"),
        ] {
            assert!(
                plain(command).iter().any(|c| c == runs),
                "{command:?}: {:?}",
                plain(command)
            );
        }
        for refused in ["{ git; } >x push", "(git) 2>&1 push"] {
            assert!(analyze(refused).opaque.is_some(), "{refused:?}");
        }
    }

    #[test]
    fn a_script_path_that_is_standard_input_is_refused() {
        for stdin in [
            "echo x | sh /dev/stdin",
            "sh /dev/./stdin",
            "bash -e /dev/../dev/fd/0",
            "sh /proc/self/fd/3 3<f",
            "echo x | python3 /dev/stdin",
        ] {
            assert!(analyze(stdin).opaque.is_some(), "{stdin:?}");
        }
        for script in ["sh deploy.sh", "bash ./x.sh a b", "python3 tool.py"] {
            assert_eq!(analyze(script).opaque, None, "{script:?}");
        }
    }

    #[test]
    fn substitutions_in_patterns_and_nested_backticks_are_seen() {
        assert!(plain("echo `echo \\`git push\\``").contains(&"git push".to_string()));
        let escaped = "echo `echo \\$(git push)`";
        assert!(
            analyze(escaped).opaque.is_some() || plain(escaped).contains(&"git push".to_string())
        );
        for refused in ["echo ${x#$(git push)}", "echo ${x%%`id`}"] {
            assert!(analyze(refused).opaque.is_some(), "{refused:?}");
        }
        assert!(plain("bash -c '[[ x =~ $(git push) ]]'").contains(&"git push".to_string()));
        assert_eq!(analyze("echo ${x#*/} ${x%.rs}").opaque, None);
        for refused in [
            "cat <<EOF\n`git push`\nEOF",
            "cat <<-EOF\n\t$(git push)\n\tEOF",
        ] {
            assert!(analyze(refused).opaque.is_some(), "{refused:?}");
        }
        for clear in [
            "cat <<'EOF'\n`x` $(y)\nEOF",
            "cat <<-EOF\n\t$HOME $((1 + 2))\n\tEOF",
        ] {
            assert_eq!(analyze(clear).opaque, None, "{clear:?}");
        }
    }

    /// Where the grammar drops an escaped character between two words, or keeps a
    /// substitution as plain text, the line is refused.
    #[test]
    fn words_the_grammar_splits_or_leaves_unread_are_refused() {
        for refused in [
            "bash -c \"git\"\\ pu\"\"sh",
            "ls \"a b\"\\ c",
            "echo \"${x:-`git push`}\"",
            ": ${x=`git push`}",
        ] {
            assert!(analyze(refused).opaque.is_some(), "{refused:?}");
        }
        assert!(plain(": ${x=$(git push)}").contains(&"git push".to_string()));
        for clear in [
            "echo a\\ b",
            "cd my\\ dir && ls",
            "grep -n \"\\`\" f",
            "echo \"a\\$(b\"",
        ] {
            assert_eq!(analyze(clear).opaque, None, "{clear:?}");
        }
    }

    #[test]
    fn commands_are_read_as_the_shell_runs_them() {
        assert!(
            plain("GIT_TRACE=1 env /usr/bin/git -C . --no-pager push -f")
                .contains(&"git push -f".to_string())
        );
        assert!(plain("command 'rm' -rf build").contains(&"rm -rf build".to_string()));
        assert!(plain("timeout -k 5 20 git push").contains(&"git push".to_string()));
        assert!(plain("git -c alias.p=push p origin").contains(&"git push origin".to_string()));
        assert!(plain("git -c 'alias.p=!git push' p").contains(&"git push".to_string()));
        assert!(plain("echo x | xargs -I{} git push").contains(&"git push ?".to_string()));
        assert!(
            plain("find . -name '*.rs' -exec git push {} \\;").contains(&"git push ?".to_string())
        );
        assert_eq!(plain("echo \"git push\""), ["echo git push"]);
        assert!(plain("cargo test").contains(&"cargo test".to_string()));
        assert_eq!(plain("git p"), ["git ?"]);
        assert!(
            plain("/usr/lib/git-core/git-push origin").contains(&"git push origin".to_string())
        );
    }
}
