//! What a hook's command line reaches, read as `sh` will run it: the working directories its
//! `cd`s lead to, the variables Splice sets for hooks (`$CLAUDE_PROJECT_DIR`,
//! `$SPLICE_PROJECT_DIR`, `$PWD`, `$HOME`) expanded, quoted or not, and each word that may
//! name a file resolved against every directory it may run in. What cannot be known before
//! it runs is kept apart: a glob bounds the files it may name by the directory before it; a
//! word made by a variable Splice does not set, a substitution or `eval` bounds nothing. Such
//! a word where a program or script is named (`sh "$F"`, `cd "$(…)"`), or where a command
//! is run as code (`sh -c "$X"`) makes the line one that cannot be pinned (`refused`);
//! elsewhere it makes it `uncertain`, and the project's hook directories are pinned whole.

use std::path::{Component, Path, PathBuf};

use tree_sitter::{Node, Parser};

use crate::permissions::shell::Word;

/// How deep nested scripts (`sh -c '…'`, `eval`, a heredoc fed to `sh`) are read.
const MAX_DEPTH: usize = 4;
/// How many working directories a line may lead to before it cannot be pinned.
const MAX_CWDS: usize = 16;
/// How often a loop is read again while its `cd`s lead somewhere new.
const MAX_ROUNDS: usize = 4;

/// Programs that run the command after them (their options skipped).
const WRAPPERS: &[&str] = &[
    "exec", "command", "builtin", "env", "nice", "nohup", "time", "timeout", "setsid", "stdbuf",
    "xargs", "sudo", "doas", "ionice", "chrt", "taskset",
];
/// Shells: their first operand is a script file, or the operand of `-c` a script.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash"];
/// Interpreters whose first operand is the script they run.
const INTERPRETERS: &[&str] = &[
    "node",
    "nodejs",
    "deno",
    "bun",
    "ruby",
    "perl",
    "php",
    "lua",
    "luajit",
    "tsx",
    "ts-node",
    "Rscript",
    "osascript",
    "awk",
    "gawk",
];

#[derive(Debug, Default)]
pub(super) struct Reach {
    /// Paths words may name (not resolved; the caller keeps those the model could write).
    pub files: Vec<PathBuf>,
    /// Directories a glob may name any file in (absolute).
    pub dirs: Vec<PathBuf>,
    /// Every directory the line may run a command in.
    pub cwds: Vec<PathBuf>,
    /// Something it names is known only when it runs.
    pub uncertain: bool,
    /// Why what it runs cannot be known from here.
    pub refused: Option<String>,
}

impl Reach {
    pub fn extend(&mut self, other: Reach) {
        self.files.extend(other.files);
        self.dirs.extend(other.dirs);
        self.cwds.extend(other.cwds);
        self.uncertain |= other.uncertain;
        if self.refused.is_none() {
            self.refused = other.refused;
        }
    }
}

/// Where a word stands.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    /// An argument, a redirection's source, an assignment's value.
    Plain,
    /// The program, or the script file an interpreter or `source` runs.
    Code,
    /// Text a shell runs (`sh -c TEXT`).
    Script,
}

/// A word as the shell will expand it.
enum Expanded {
    Known(String),
    /// A glob (or brace expansion): only names beneath `dir`, unless `escapes` (a `..` after
    /// the pattern).
    Glob {
        dir: String,
        escapes: bool,
    },
    /// Depends on what only running tells; why, for the reason.
    Computed(String),
}

/// What `command` reaches run by `sh -c` in `root`. `strict`: a part that cannot be known
/// refuses the line (a hook's command, a server's `sh -c` script); otherwise (text that is
/// only perhaps a command line, such as a server's argument) it only makes it uncertain.
/// `places`: where, outside the root, the model may write (resolved).
pub(super) fn reach(command: &str, root: &Path, places: &[PathBuf], strict: bool) -> Reach {
    let mut walker = Walker {
        root,
        places,
        top: command,
        home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from),
        cwds: vec![root.to_path_buf()],
        functions: Vec::new(),
        in_function: false,
        depth: 0,
        out: Reach::default(),
    };
    if strict && let Some(reason) = misread(command) {
        walker.fail(true, reason);
    }
    // In the order it runs: the directories a command may run in only grow along the way,
    // so each word is read from every directory it may be read from.
    walker.script(command, strict);
    // A function runs where it is called, perhaps after the last `cd`: its body is read from
    // every directory the line reaches.
    walker.in_function = true;
    while let Some((body, strict)) = walker.functions.pop() {
        walker.script(&body, strict);
    }
    walker.out.cwds = walker.cwds;
    walker.out
}

/// Why `sh` may read `command` otherwise than the grammar does, if it may.
fn misread(command: &str) -> Option<String> {
    let analysis = crate::permissions::shell::analyze(command);
    analysis.broken.then(|| {
        analysis
            .opaque
            .unwrap_or_else(|| "it does not parse as a shell command".into())
    })
}

struct Walker<'a> {
    root: &'a Path,
    places: &'a [PathBuf],
    /// The whole line, to tell whether it sets a variable Splice sets.
    top: &'a str,
    home: Option<PathBuf>,
    /// Every directory a command may run in from here on (only ever added to).
    cwds: Vec<PathBuf>,
    /// Function bodies, read last.
    functions: Vec<(String, bool)>,
    in_function: bool,
    depth: usize,
    out: Reach,
}

impl Walker<'_> {
    fn fail(&mut self, strict: bool, reason: String) {
        self.out.uncertain = true;
        if strict {
            self.out.refused.get_or_insert(reason);
        }
    }

    fn script(&mut self, text: &str, strict: bool) {
        if self.depth >= MAX_DEPTH {
            self.fail(strict, "it nests scripts too deeply to follow".into());
            return;
        }
        let mut parser = Parser::new();
        let tree = parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .ok()
            .and_then(|()| parser.parse(text, None));
        let Some(tree) = tree.filter(|t| !t.root_node().has_error()) else {
            self.fail(strict, "it does not parse as a shell command".into());
            return;
        };
        self.depth += 1;
        self.visit(tree.root_node(), text, strict);
        self.depth -= 1;
    }

    fn visit(&mut self, node: Node<'_>, src: &str, strict: bool) {
        match node.kind() {
            "command" => self.command(node, src, strict),
            "redirected_statement" => self.redirected(node, src, strict),
            "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                self.redirect(node, src, strict, false)
            }
            "comment" | "variable_name" | "heredoc_start" | "heredoc_end" => {}
            "function_definition" => match node.child_by_field_name("body") {
                Some(body) if !self.in_function => self
                    .functions
                    .push((src[body.byte_range()].to_string(), strict)),
                _ => self.children(node, src, strict),
            },
            // A loop runs its body again from where its `cd`s led.
            "for_statement" | "while_statement" | "c_style_for_statement" => {
                let mut rounds = 0;
                loop {
                    let before = self.cwds.len();
                    self.children(node, src, strict);
                    if self.cwds.len() == before {
                        break;
                    }
                    rounds += 1;
                    if rounds >= MAX_ROUNDS {
                        self.fail(strict, "it changes directory in a loop".into());
                        break;
                    }
                }
            }
            "word" | "string" | "raw_string" | "concatenation" | "simple_expansion"
            | "expansion" | "number" | "ansi_c_string" | "translated_string" => {
                self.word(node, src, Role::Plain, strict);
                self.substitutions(node, src, strict);
            }
            _ => self.children(node, src, strict),
        }
    }

    fn children(&mut self, node: Node<'_>, src: &str, strict: bool) {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            self.visit(child, src, strict);
        }
    }

    /// The commands inside a word (`$(…)`, backticks, `<(…)`) run too.
    fn substitutions(&mut self, node: Node<'_>, src: &str, strict: bool) {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                "command_substitution" | "process_substitution" => {
                    self.children(child, src, strict)
                }
                _ => self.substitutions(child, src, strict),
            }
        }
    }

    /// A statement with redirections: a heredoc or herestring fed to a shell is a script.
    fn redirected(&mut self, node: Node<'_>, src: &str, strict: bool) {
        let body = node.child_by_field_name("body");
        let feeds_shell = body.is_some_and(|b| b.kind() == "command" && self.runs_shell(b, src));
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for (index, child) in children.into_iter().enumerate() {
            if node.field_name_for_child(index as u32) == Some("redirect") {
                self.redirect(child, src, strict, feeds_shell);
            } else {
                self.visit(child, src, strict);
            }
        }
    }

    /// `<` reads a file (pinned); what `>` and the like write is output, not code: pinned,
    /// a hook's log would stop it after its first run.
    fn redirect(&mut self, node: Node<'_>, src: &str, strict: bool, feeds_shell: bool) {
        match node.kind() {
            "file_redirect" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
                let operator = children
                    .iter()
                    .find(|c| !c.is_named())
                    .map(|c| &src[c.byte_range()])
                    .unwrap_or_default();
                let reads = matches!(operator, "<" | "<>");
                for (index, child) in children.into_iter().enumerate() {
                    if node.field_name_for_child(index as u32) == Some("destination") {
                        if reads {
                            self.word(child, src, Role::Plain, strict);
                        }
                        self.substitutions(child, src, strict);
                    }
                }
            }
            "heredoc_redirect" => {
                let mut cursor = node.walk();
                let bodies: Vec<Node<'_>> = node
                    .children(&mut cursor)
                    .filter(|c| c.kind() == "heredoc_body")
                    .collect();
                for body in bodies {
                    let text = &src[body.byte_range()];
                    self.script(text, strict && feeds_shell);
                }
            }
            "herestring_redirect" => {
                let mut cursor = node.walk();
                let words: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                for word in words {
                    let role = if feeds_shell {
                        Role::Script
                    } else {
                        Role::Plain
                    };
                    self.word(word, src, role, strict);
                    self.substitutions(word, src, strict);
                }
            }
            _ => self.children(node, src, strict),
        }
    }

    /// Whether the simple command `node` runs a shell reading its standard input.
    fn runs_shell(&self, node: Node<'_>, src: &str) -> bool {
        let words = command_words(node);
        let texts: Vec<Option<String>> = words.iter().map(|w| self.literal(*w, src)).collect();
        let program = program_index(&texts);
        let name = texts.get(program).cloned().flatten();
        name.as_deref()
            .map(basename)
            .is_some_and(|p| SHELLS.contains(&p))
    }

    fn command(&mut self, node: Node<'_>, src: &str, strict: bool) {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        let feeds_shell = self.runs_shell(node, src);
        for (index, child) in children.iter().enumerate() {
            match node.field_name_for_child(index as u32) {
                Some("redirect") => self.redirect(*child, src, strict, feeds_shell),
                Some("name") | Some("argument") => {}
                _ if child.kind() == "variable_assignment" => self.children(*child, src, strict),
                _ => {}
            }
        }
        let words = command_words(node);
        let texts: Vec<Option<String>> = words.iter().map(|w| self.literal(*w, src)).collect();
        let mut roles = vec![Role::Plain; words.len()];
        let program = program_index(&texts);
        if program < words.len() {
            roles[program] = Role::Code;
        }
        let name = texts
            .get(program)
            .cloned()
            .flatten()
            .map(|p| basename(&p).to_string());
        let operands = program + 1..words.len();
        match name.as_deref() {
            Some("cd" | "pushd") => self.cd(&words[operands], src, strict),
            Some("eval") => {
                let args: Option<Vec<String>> = texts[operands].iter().cloned().collect();
                match args {
                    Some(args) => self.script(&args.join(" "), strict),
                    None => self.fail(
                        strict,
                        "it runs `eval` on words known only when it runs".into(),
                    ),
                }
            }
            Some("source" | ".") => {
                if let Some(role) = roles.get_mut(program + 1) {
                    *role = Role::Code;
                }
            }
            Some(shell) if SHELLS.contains(&shell) => {
                script_operand(&texts, operands, &mut roles, true)
            }
            Some(other) if is_interpreter(other) => {
                script_operand(&texts, operands, &mut roles, false)
            }
            _ => {}
        }
        for (word, role) in words.iter().zip(roles) {
            self.word(*word, src, role, strict);
            self.substitutions(*word, src, strict);
        }
    }

    /// `cd DIR`, `pushd DIR`: DIR, from every directory the line may be in, is one more.
    fn cd(&mut self, operands: &[Node<'_>], src: &str, strict: bool) {
        if self.in_function {
            // Where the function is called from is not followed.
            self.fail(strict, "it changes directory inside a function".into());
            return;
        }
        let target = operands.iter().find(|w| {
            !self
                .literal(**w, src)
                .is_some_and(|t| t.starts_with('-') && t != "-")
        });
        let Some(target) = target else {
            // `cd` alone: HOME.
            match self.home.clone() {
                Some(home) => self.add_cwd(home),
                None => self.fail(strict, "it changes to HOME, which is not set".into()),
            }
            return;
        };
        let cdpath: Vec<PathBuf> = std::env::var_os("CDPATH")
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| p.is_absolute())
                    .collect()
            })
            .unwrap_or_default();
        for cwd in self.cwds.clone() {
            match self.expand(*target, src, &cwd) {
                // `cd -`: a directory it was in already.
                Expanded::Known(dir) if dir == "-" => {}
                Expanded::Known(dir) => {
                    let dir = self.path(&dir, &cwd);
                    if !Path::new(&dir).is_absolute() {
                        continue;
                    }
                    for base in &cdpath {
                        if let Ok(rest) = dir.strip_prefix(&cwd) {
                            self.add_cwd(normalize(&base.join(rest)));
                        }
                    }
                    self.add_cwd(normalize(&dir));
                }
                Expanded::Glob { .. } | Expanded::Computed(_) => {
                    let text = &src[target.byte_range()];
                    self.fail(
                        strict,
                        format!("it changes directory to `{text}`, known only when it runs"),
                    );
                    return;
                }
            }
        }
    }

    fn add_cwd(&mut self, dir: PathBuf) {
        if self.cwds.contains(&dir) {
            return;
        }
        if self.cwds.len() >= MAX_CWDS {
            self.fail(true, "it changes directory too often to follow".into());
            return;
        }
        self.cwds.push(dir);
    }

    /// Record what `node` names, from every directory the line may be in.
    fn word(&mut self, node: Node<'_>, src: &str, role: Role, strict: bool) {
        let text = src[node.byte_range()].to_string();
        if role == Role::Script {
            match self.literal(node, src) {
                Some(script) => self.script(&script, strict),
                None => self.fail(
                    strict,
                    format!("it runs the script `{text}`, known only when it runs"),
                ),
            }
            return;
        }
        for cwd in self.cwds.clone() {
            match self.expand(node, src, &cwd) {
                Expanded::Known(word) => {
                    if let Some((_, value)) = word.split_once('=') {
                        let path = self.path(value, &cwd);
                        self.out.files.push(path);
                    }
                    if !word.starts_with('-') {
                        let path = self.path(&word, &cwd);
                        self.out.files.push(path);
                    }
                    // A word that holds a command line (`NODE_OPTIONS='--require x.js'`).
                    if word.contains(char::is_whitespace) && self.depth < MAX_DEPTH {
                        self.script(&word, false);
                    }
                }
                Expanded::Glob {
                    dir,
                    escapes: false,
                } => {
                    let dir = normalize(&self.path(&dir, &cwd));
                    self.bounded(dir, &text, role, strict);
                }
                Expanded::Glob { escapes: true, .. } => {
                    self.unknown(&text, "a pattern followed by `..`".into(), role, strict)
                }
                Expanded::Computed(why) => self.unknown(&text, why, role, strict),
            }
        }
    }

    /// A glob that may name any file beneath `dir`.
    fn bounded(&mut self, dir: PathBuf, text: &str, role: Role, strict: bool) {
        let real = crate::permissions::own::resolved(&dir);
        let root = crate::permissions::own::resolved(self.root);
        let beneath = |place: &Path| real != place && real.starts_with(place);
        let holds = |place: &Path| place.starts_with(&real);
        if holds(&root) || self.places.iter().any(|p| holds(p)) {
            let why = format!("a pattern that may name any file in {}", dir.display());
            self.unknown(text, why, role, strict);
        } else if beneath(&root) || self.places.iter().any(|p| beneath(p)) {
            self.out.dirs.push(dir);
        }
        // Elsewhere the model writes nothing.
    }

    fn unknown(&mut self, text: &str, why: String, role: Role, strict: bool) {
        self.out.uncertain = true;
        if role == Role::Code {
            self.fail(
                strict,
                format!("`{text}` runs a file known only when it runs ({why})"),
            );
        }
    }

    /// The word's text when it is the same from every directory.
    fn literal(&self, node: Node<'_>, src: &str) -> Option<String> {
        match self.expand(node, src, self.root) {
            Expanded::Known(text) if !src[node.byte_range()].contains("PWD") => Some(text),
            _ => None,
        }
    }

    /// The absolute path `word` names from `cwd` (not normalized: the kernel reads `..`
    /// through links).
    fn path(&self, word: &str, cwd: &Path) -> PathBuf {
        match (word.strip_prefix("~/"), &self.home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => cwd.join(word),
        }
    }

    fn expand(&self, node: Node<'_>, src: &str, pwd: &Path) -> Expanded {
        let mut acc = Acc::default();
        self.append(node, src, pwd, false, &mut acc);
        if let Some(why) = acc.computed {
            return Expanded::Computed(why);
        }
        if let Some(at) = acc.glob_at {
            let (before, after) = acc.text.split_at(at);
            let dir = before.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
            let dir = if dir.is_empty() && before.starts_with('/') {
                "/"
            } else {
                dir
            };
            return Expanded::Glob {
                dir: if dir.is_empty() {
                    ".".into()
                } else {
                    dir.into()
                },
                escapes: Path::new(after)
                    .components()
                    .any(|c| c == Component::ParentDir),
            };
        }
        Expanded::Known(acc.text)
    }

    fn append(&self, node: Node<'_>, src: &str, pwd: &Path, quoted: bool, acc: &mut Acc) {
        let text = &src[node.byte_range()];
        let computed = |acc: &mut Acc| {
            acc.computed.get_or_insert_with(|| format!("`{text}`"));
        };
        match node.kind() {
            "word" | "number" => unquoted(text, acc, self.home.as_deref()),
            "string_content" => acc
                .text
                .push_str(&crate::permissions::shell::unescape(text, |c| {
                    matches!(c, '$' | '`' | '"' | '\\')
                })),
            "raw_string" => match text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
                Some(inner) => acc.text.push_str(inner),
                None => computed(acc),
            },
            "ansi_c_string" => match crate::permissions::shell::word_of(node, src) {
                Word::Known(decoded) => acc.text.push_str(&decoded),
                Word::Unknown(_) => computed(acc),
            },
            "string" => {
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    if child.is_named() {
                        self.append(child, src, pwd, true, acc);
                    }
                }
            }
            "concatenation" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
                let contiguous = children
                    .windows(2)
                    .all(|pair| pair[0].end_byte() == pair[1].start_byte());
                if !contiguous {
                    computed(acc);
                }
                for child in children {
                    self.append(child, src, pwd, quoted, acc);
                }
            }
            "simple_expansion" | "expansion" => match self.variable(node, src, pwd) {
                // Unquoted, a value is split at blanks and globbed.
                Some(value)
                    if quoted
                        || !value.contains(|c: char| c.is_whitespace() || "*?[".contains(c)) =>
                {
                    acc.text.push_str(&value)
                }
                _ => computed(acc),
            },
            _ => computed(acc),
        }
    }

    /// The value of `$NAME` or `${NAME}` when it is one Splice sets for hooks and the line
    /// never sets it itself.
    fn variable(&self, node: Node<'_>, src: &str, pwd: &Path) -> Option<String> {
        let text = &src[node.byte_range()];
        let name = text
            .strip_prefix("${")
            .and_then(|t| t.strip_suffix('}'))
            .or_else(|| text.strip_prefix('$'))?;
        if !only_expanded(self.top, name) || (src != self.top && !only_expanded(src, name)) {
            return None;
        }
        let value = match name {
            "CLAUDE_PROJECT_DIR" | "SPLICE_PROJECT_DIR" => self.root.to_path_buf(),
            "PWD" => pwd.to_path_buf(),
            "HOME" => self.home.clone()?,
            _ => return None,
        };
        value.to_str().map(str::to_string)
    }
}

#[derive(Default)]
struct Acc {
    text: String,
    /// Where in `text` the first unquoted pattern character is.
    glob_at: Option<usize>,
    computed: Option<String>,
}

/// Unquoted word text: escapes removed, a leading `~/` as HOME, the first pattern or brace
/// character noted.
fn unquoted(text: &str, acc: &mut Acc, home: Option<&Path>) {
    let mut rest = text;
    if acc.text.is_empty() && rest.starts_with('~') {
        match (
            rest == "~" || rest.starts_with("~/"),
            home.and_then(Path::to_str),
        ) {
            (true, Some(home)) => {
                acc.text.push_str(home);
                rest = &rest[1..];
            }
            _ => {
                acc.computed.get_or_insert_with(|| format!("`{text}`"));
                return;
            }
        }
    }
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => acc.text.push(next),
            },
            '*' | '?' | '[' | '{' => {
                acc.glob_at.get_or_insert(acc.text.len());
                acc.text.push(c);
            }
            _ => acc.text.push(c),
        }
    }
}

/// Whether `name` appears in `src` only as `$NAME` or `${NAME}` (never set, exported, read
/// into, or expanded with an operator such as `${NAME:-…}`).
fn only_expanded(src: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(at) = src[from..].find(name).map(|i| i + from) {
        let end = at + name.len();
        from = end;
        let before = src[..at].chars().next_back();
        let after = src[end..].chars().next();
        if before.is_some_and(ident) || after.is_some_and(ident) {
            continue;
        }
        let plain = before == Some('$');
        let braced = src[..at].ends_with("${") && after == Some('}');
        if !plain && !braced {
            return false;
        }
    }
    true
}

/// The program's name without its directory.
fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

fn is_interpreter(name: &str) -> bool {
    INTERPRETERS.contains(&name) || name.starts_with("python") || name.starts_with("pypy")
}

/// The words of a simple command: its name, then its arguments.
fn command_words(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    let mut words = Vec::new();
    for (index, child) in children.into_iter().enumerate() {
        match node.field_name_for_child(index as u32) {
            Some("name") => words.push(child.named_child(0).unwrap_or(child)),
            Some("argument") => words.push(child),
            _ => {}
        }
    }
    words
}

/// Which word is the program, past wrappers and their options (`env A=1 nice -n 5 sh x`).
fn program_index(texts: &[Option<String>]) -> usize {
    let mut at = 0;
    while let Some(Some(word)) = texts.get(at) {
        if !WRAPPERS.contains(&basename(word)) {
            break;
        }
        at += 1;
        while let Some(Some(word)) = texts.get(at) {
            let option = word.starts_with('-')
                || word.contains('=')
                || word.starts_with(|c: char| c.is_ascii_digit())
                || word == "{}";
            if !option {
                break;
            }
            at += 1;
        }
    }
    at
}

/// Mark the script an interpreter runs: its first operand (a file), or, for a shell, the
/// operand of `-c` (a script). Inline code (`-c`, `-e`, `-m` of other interpreters) names no
/// file.
fn script_operand(
    texts: &[Option<String>],
    operands: std::ops::Range<usize>,
    roles: &mut [Role],
    shell: bool,
) {
    let mut index = operands.start;
    while index < operands.end {
        let Some(word) = &texts[index] else {
            roles[index] = Role::Code;
            return;
        };
        if word == "--" {
            index += 1;
            continue;
        }
        if let Some(flags) = word.strip_prefix('-').filter(|f| !f.starts_with('-')) {
            if shell && flags.contains('c') {
                if let Some(role) = roles.get_mut(index + 1) {
                    *role = Role::Script;
                }
                return;
            }
            if !shell && flags.starts_with(['c', 'e', 'm']) {
                return;
            }
            // `-o OPTION` takes the next word.
            if shell && flags.ends_with('o') {
                index += 1;
            }
            index += 1;
            continue;
        }
        if word.starts_with("--") {
            if !shell && (word == "--eval" || word.starts_with("--eval=")) {
                return;
            }
            index += 1;
            continue;
        }
        roles[index] = Role::Code;
        return;
    }
}

/// `path` with `.` and `..` taken away as the shell's `cd` does (logically).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
