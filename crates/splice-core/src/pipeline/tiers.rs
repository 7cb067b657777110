//! Tiers and their stage sets, and the `auto` tier's classification of a request.

pub use crate::protocol::stage::Stage;
use crate::settings::Tier;

const STANDARD: [Stage; 3] = [
    Stage::CodeWriter,
    Stage::TestRunner,
    Stage::AcceptanceVerifier,
];
const FULL: [Stage; 6] = [
    Stage::CodeWriter,
    Stage::TestGenerator,
    Stage::StaticAnalyzer,
    Stage::SecurityAuditor,
    Stage::TestRunner,
    Stage::AcceptanceVerifier,
];

/// The scheduled stages of a tier, in order; `light` schedules none.
pub fn stages(tier: Tier) -> &'static [Stage] {
    match tier {
        Tier::Standard => &STANDARD,
        Tier::Full => &FULL,
        Tier::Light | Tier::Auto => &[],
    }
}

/// The stage list a marker belongs to: the tier whose `total` stages have `stage` at `index`
/// (1-based). `None` for a stage list no tier schedules (another producer's stream).
pub fn stages_for_marker(stage: &str, index: u32, total: u32) -> Option<&'static [Stage]> {
    [Tier::Standard, Tier::Full]
        .into_iter()
        .map(stages)
        .find(|list| {
            u32::try_from(list.len()).is_ok_and(|n| n == total)
                && index
                    .checked_sub(1)
                    .and_then(|i| list.get(i as usize))
                    .is_some_and(|s| s.name() == stage)
        })
}

/// Words that open a question.
const QUESTION_WORDS: [&str; 26] = [
    "what", "why", "how", "where", "when", "which", "who", "whose", "whom", "is", "are", "was",
    "were", "does", "do", "did", "can", "could", "would", "should", "will", "shall", "has", "have",
    "am", "may",
];
/// Verbs that ask to run, explain or review something: the answer is words, not a change.
const ASK_VERBS: [&str; 29] = [
    "run",
    "execute",
    "exec",
    "build",
    "compile",
    "lint",
    "check",
    "explain",
    "describe",
    "summarize",
    "summarise",
    "show",
    "list",
    "print",
    "display",
    "find",
    "search",
    "grep",
    "locate",
    "look",
    "read",
    "open",
    "tell",
    "review",
    "analyze",
    "analyse",
    "inspect",
    "walk",
    "understand",
];
/// Verbs that ask for a change to the code.
const CHANGE_VERBS: [&str; 63] = [
    "add",
    "fix",
    "implement",
    "change",
    "rename",
    "remove",
    "delete",
    "drop",
    "update",
    "upgrade",
    "bump",
    "refactor",
    "rewrite",
    "write",
    "create",
    "make",
    "replace",
    "move",
    "convert",
    "support",
    "handle",
    "improve",
    "optimize",
    "optimise",
    "edit",
    "modify",
    "split",
    "extract",
    "migrate",
    "introduce",
    "port",
    "clean",
    "tidy",
    "document",
    "append",
    "insert",
    "set",
    "enable",
    "disable",
    "allow",
    "prevent",
    "reject",
    "restrict",
    "validate",
    "sanitize",
    "sanitise",
    "harden",
    "secure",
    "patch",
    "correct",
    "adjust",
    "tweak",
    "wire",
    "integrate",
    "use",
    "switch",
    "swap",
    "generate",
    "deprecate",
    "simplify",
    "reorganize",
    "restructure",
    "cache",
];
/// Verbs that ask the agent to use something it has: a tool, a package, an MCP server.
const TOOL_VERBS: [&str; 6] = ["use", "call", "invoke", "try", "ask", "query"];
/// What such a verb names when it asks to use a tool rather than to change the code
/// (`use argon2 instead of sha1` is a change).
const TOOL_NOUNS: [&str; 12] = [
    "tool",
    "tools",
    "package",
    "packages",
    "skill",
    "skills",
    "mcp",
    "server",
    "servers",
    "plugin",
    "plugins",
    "transcribe",
];

/// Greetings and thanks.
const GREETINGS: [&str; 14] = [
    "hi",
    "hello",
    "hey",
    "hiya",
    "yo",
    "thanks",
    "thank",
    "thx",
    "cheers",
    "good",
    "morning",
    "bye",
    "howdy",
    "greetings",
];
/// Politeness and glue before the verb that carries the request.
const FILLER: [&str; 20] = [
    "please", "pls", "plz", "kindly", "now", "also", "then", "and", "ok", "okay", "so", "just",
    "go", "ahead", "hey", "hi", "hello", "you", "u", "lets",
];
/// Words that make a change worth the full pipeline: tests, validation, security, structure.
const FULL_WORDS: [&str; 34] = [
    "test",
    "tests",
    "testing",
    "unittest",
    "unittests",
    "validation",
    "validate",
    "validates",
    "validating",
    "security",
    "secure",
    "insecure",
    "vulnerability",
    "vulnerable",
    "auth",
    "authentication",
    "authorization",
    "password",
    "passwords",
    "sanitize",
    "sanitise",
    "injection",
    "xss",
    "csrf",
    "refactor",
    "refactoring",
    "restructure",
    "reorganize",
    "reorganise",
    "split",
    "module",
    "modules",
    "migrate",
    "migration",
];
/// A change this short with no sign of a larger change is a small edit: the light agent makes
/// it (it edits files too), and a wrong guess towards light costs less than one towards the
/// pipeline, which fails on a request that needs no change.
const SMALL_EDIT_WORDS: usize = 10;

/// What one clause of a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Greeting,
    Question,
    Ask,
    Change,
    Other,
}

/// The request cut into clauses of lowercase words: at sentence punctuation (`.` only before
/// a space, so `main.rs` stays whole), commas, and the words `and` / `then`. A clause that
/// ended with `?` is flagged.
fn clauses(request: &str) -> Vec<(Vec<String>, bool)> {
    let mut out = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = request.to_lowercase().chars().collect();
    let mut close = |words: &mut Vec<String>, question: bool| {
        if !words.is_empty() {
            out.push((std::mem::take(words), question));
        }
    };
    for (i, &c) in chars.iter().enumerate() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        // `calc.py`, `mcp__fs__read`, `acme.math`: one name, one word.
        let joins = |n: Option<&char>| n.is_some_and(|n| n.is_alphanumeric() || *n == '_');
        if c == '.' && !word.is_empty() && joins(chars.get(i + 1)) {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            let done = std::mem::take(&mut word);
            if done == "and" || done == "then" {
                close(&mut words, false);
            }
            words.push(done);
        }
        let next_blank = chars.get(i + 1).is_none_or(|n| n.is_whitespace());
        match c {
            '?' => close(&mut words, true),
            '!' | ';' | '\n' => close(&mut words, false),
            '.' | ',' | ':' if next_blank => close(&mut words, false),
            _ => {}
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    close(&mut words, false);
    out
}

/// Drop the politeness before the verb: "please", "can you", "I'd like you to", "let's".
fn strip_polite(words: &[String]) -> &[String] {
    let mut rest = words;
    loop {
        let w = |i: usize| rest.get(i).map(String::as_str).unwrap_or("");
        let skip = match (w(0), w(1)) {
            ("can" | "could" | "would" | "will", "you" | "u") => 2,
            ("let", "s") | ("help", "me") => 2,
            ("i", "want" | "need") if w(2) == "you" && w(3) == "to" => 4,
            ("i", "d" | "would") if w(2) == "like" && w(3) == "you" && w(4) == "to" => 5,
            (first, _) if FILLER.contains(&first) => 1,
            _ => 0,
        };
        if skip == 0 {
            return rest;
        }
        rest = &rest[skip.min(rest.len())..];
    }
}

/// Whether a clause names a tool, package or MCP server: a noun for one, a wire name
/// (`mcp__server__tool`), or a dotted package tool (`acme.math.sum`).
fn names_a_tool(words: &[String]) -> bool {
    words.iter().any(|w| {
        TOOL_NOUNS.contains(&w.as_str())
            || w.contains("__")
            || (w.matches('.').count() >= 2 && !w.ends_with('.'))
    })
}

fn kind(words: &[String], asked: bool) -> Kind {
    let has_change = words.iter().any(|w| CHANGE_VERBS.contains(&w.as_str()));
    if words
        .first()
        .is_some_and(|w| GREETINGS.contains(&w.as_str()))
        && !has_change
    {
        return Kind::Greeting;
    }
    let rest = strip_polite(words);
    let Some(first) = rest.first().map(String::as_str) else {
        return Kind::Greeting;
    };
    if TOOL_VERBS.contains(&first) && names_a_tool(rest) {
        Kind::Ask
    } else if CHANGE_VERBS.contains(&first) {
        Kind::Change
    } else if ASK_VERBS.contains(&first) {
        Kind::Ask
    } else if asked || QUESTION_WORDS.contains(&first) {
        Kind::Question
    } else if has_change {
        Kind::Change
    } else {
        Kind::Other
    }
}

/// Pick a tier for `auto` and say why, in words a user reads in the reasoning line.
/// Questions, greetings and requests to run or explain something are light; a change is light
/// when short, full when it asks for tests, validation, security or structure, else standard.
pub fn classify(request: &str) -> (Tier, &'static str) {
    let parts = clauses(request);
    let kinds: Vec<Kind> = parts.iter().map(|(w, asked)| kind(w, *asked)).collect();
    let words: Vec<&String> = parts.iter().flat_map(|(w, _)| w).collect();
    let wants_full = words.iter().any(|w| FULL_WORDS.contains(&w.as_str()));
    let change = kinds.contains(&Kind::Change);
    // A question with a change beside it ("why does add fail? fix it"): unsure, so light,
    // whose agent answers and edits; the pipeline is kept for changes that ask for tests,
    // validation, security or structure.
    if change && kinds.contains(&Kind::Question) && !wants_full {
        return (
            Tier::Light,
            "the request asks a question as well as a change; the light agent can do both",
        );
    }
    if !change {
        // A clause that is a question or an ask makes the whole request one.
        if let Some(first) = kinds
            .iter()
            .find(|k| matches!(k, Kind::Question | Kind::Ask))
        {
            return match first {
                Kind::Question => (Tier::Light, "the request is a question"),
                _ => (
                    Tier::Light,
                    "the request asks to run, explain or review something, not to change code",
                ),
            };
        }
        if kinds.iter().all(|k| *k == Kind::Greeting) {
            return (Tier::Light, "the request is a greeting");
        }
    }
    if wants_full {
        return (
            Tier::Full,
            "the change touches tests, validation, security or structure, so every stage runs",
        );
    }
    if words.len() <= SMALL_EDIT_WORDS {
        return if change {
            (Tier::Light, "the request is a small edit")
        } else {
            (Tier::Light, "the request is short and names no code change")
        };
    }
    (
        Tier::Standard,
        "the request is a code change: write, test, verify",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real requests and the tier each should get.
    const TABLE: &[(&str, Tier)] = &[
        // Greetings and chat.
        ("hello there", Tier::Light),
        ("hi", Tier::Light),
        ("Thanks, that works!", Tier::Light),
        ("good morning", Tier::Light),
        ("thank you", Tier::Light),
        // Questions.
        ("What do the notes say?", Tier::Light),
        ("why does the build fail on CI?", Tier::Light),
        ("How is the session file written", Tier::Light),
        ("Where do we validate the config?", Tier::Light),
        ("Is there a test for the tokenizer?", Tier::Light),
        ("Does this crate use unsafe anywhere", Tier::Light),
        ("Should we refactor the provider module?", Tier::Light),
        ("which tests are slow?", Tier::Light),
        (
            "I'm confused about the auth flow, how does it work?",
            Tier::Light,
        ),
        // Requests to run, explain or review.
        ("run the tests", Tier::Light),
        ("Run cargo test and tell me what fails", Tier::Light),
        ("please run the security audit", Tier::Light),
        ("explain the parser", Tier::Light),
        (
            "Explain how the retry logic in src/provider/mod.rs works",
            Tier::Light,
        ),
        ("Can you explain the test suite layout?", Tier::Light),
        ("show me the git log for the last week", Tier::Light),
        ("summarize the changes on this branch", Tier::Light),
        ("list the modules that depend on config.rs", Tier::Light),
        ("review my changes for security problems", Tier::Light),
        ("Find where the password hashing happens", Tier::Light),
        ("Walk me through the migration code", Tier::Light),
        // Requests to use a tool, a package or an MCP server: answers, not changes.
        ("what is 2 plus 40? use the sum tool", Tier::Light),
        ("use the sum tool to add 2 and 40", Tier::Light),
        (
            "Use the weather package to get the forecast for Paris",
            Tier::Light,
        ),
        (
            "please use the github mcp server to list my open issues",
            Tier::Light,
        ),
        (
            "call mcp__fs__read_file on notes.txt and summarize it",
            Tier::Light,
        ),
        (
            "use acme.math.sum to add up the numbers in data.csv",
            Tier::Light,
        ),
        ("try the transcribe tool on meeting.mp3", Tier::Light),
        (
            "Query the postgres MCP server for the number of users",
            Tier::Light,
        ),
        // Mixed: a question and a change.
        ("why does add return the wrong sum? fix it", Tier::Light),
        (
            "What does parse_args do when the flag is missing? Make it print the usage instead",
            Tier::Light,
        ),
        (
            "is the cache ever cleared? if not, clear it on logout",
            Tier::Light,
        ),
        (
            "Why does the login accept empty passwords? Fix it and add a regression test",
            Tier::Full,
        ),
        // Small edits.
        ("fix the typo in README", Tier::Light),
        ("Add a --verbose flag to src/main.rs", Tier::Light),
        ("rename foo to bar", Tier::Light),
        ("bump the version to 1.2.0", Tier::Light),
        ("Please remove the unused import in lib.rs", Tier::Light),
        ("fix add in calc.py: swap minus for plus", Tier::Light),
        ("In calc.py, change the minus in add to a plus", Tier::Light),
        ("use argon2 for hashing", Tier::Light),
        // Changes: standard.
        (
            "Rename Config::load to Config::from_path everywhere in the code base please",
            Tier::Standard,
        ),
        (
            "Make the progress bar show the elapsed time next to the percentage",
            Tier::Standard,
        ),
        (
            "Can you add a --json flag that prints the report as JSON instead of a table?",
            Tier::Standard,
        ),
        (
            "Replace the hand-written argument parser in main.rs with clap derive",
            Tier::Standard,
        ),
        (
            "The CLI should print a friendly message when the config file is missing",
            Tier::Standard,
        ),
        (
            "Hello! Please update the README to describe the new --tier flag and its values",
            Tier::Standard,
        ),
        // Changes: full.
        (
            "Add input validation to parse_config and test it",
            Tier::Full,
        ),
        ("add tests for the tokenizer", Tier::Full),
        ("Run the tests and fix any failures", Tier::Full),
        ("Refactor the HTTP client into its own module", Tier::Full),
        (
            "Split the HTTP layer out of main.rs into its own module with tests",
            Tier::Full,
        ),
        ("Sanitize user input in the search handler", Tier::Full),
        (
            "Fix the SQL injection in the login query and add a regression test",
            Tier::Full,
        ),
        ("hash passwords with argon2 instead of sha1", Tier::Full),
        (
            "I'd like you to migrate the settings from YAML to TOML",
            Tier::Full,
        ),
        (
            "The login form accepts empty passwords which is a security hole",
            Tier::Full,
        ),
    ];

    #[test]
    fn the_table_of_real_requests() {
        assert!(TABLE.len() >= 40);
        let wrong: Vec<String> = TABLE
            .iter()
            .filter_map(|(request, want)| {
                let (got, why) = classify(request);
                (got != *want).then(|| format!("{request:?}: {got:?} ({why}), want {want:?}"))
            })
            .collect();
        assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
    }

    #[test]
    fn the_reason_names_what_the_request_is() {
        assert_eq!(classify("hello there").1, "the request is a greeting");
        assert_eq!(
            classify("What do the notes say?").1,
            "the request is a question"
        );
        assert!(classify("run the tests").1.contains("run, explain"));
        assert_eq!(classify("fix the typo").1, "the request is a small edit");
    }

    #[test]
    fn stage_sets_follow_decisions() {
        let names = |tier| stages(tier).iter().map(|s| s.name()).collect::<Vec<_>>();
        assert!(names(Tier::Light).is_empty());
        assert_eq!(
            names(Tier::Standard),
            ["code_writer", "test_runner", "acceptance_verifier"]
        );
        assert_eq!(names(Tier::Full), Stage::ALL.map(Stage::name));
    }

    #[test]
    fn a_marker_finds_its_tier_only_when_name_index_and_total_agree() {
        assert_eq!(
            stages_for_marker("test_runner", 2, 3),
            Some(stages(Tier::Standard))
        );
        assert_eq!(
            stages_for_marker("test_runner", 5, 6),
            Some(stages(Tier::Full))
        );
        assert_eq!(stages_for_marker("test_runner", 1, 3), None);
        assert_eq!(stages_for_marker("code_writer", 1, 4), None);
        assert_eq!(stages_for_marker("code_writer", 0, 3), None);
    }
}
