//! Tiers and their stage sets, and the `auto` tier's classification of a request.

use crate::run::Tier;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    CodeWriter,
    TestGenerator,
    StaticAnalyzer,
    SecurityAuditor,
    TestRunner,
    AcceptanceVerifier,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::CodeWriter => "code_writer",
            Stage::TestGenerator => "test_generator",
            Stage::StaticAnalyzer => "static_analyzer",
            Stage::SecurityAuditor => "security_auditor",
            Stage::TestRunner => "test_runner",
            Stage::AcceptanceVerifier => "acceptance_verifier",
        }
    }
}

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

const QUESTION_STARTS: [&str; 16] = [
    "what",
    "why",
    "how",
    "where",
    "when",
    "which",
    "who",
    "is",
    "are",
    "does",
    "do",
    "can",
    "explain",
    "describe",
    "summarize",
    "show",
];
/// Words that make a request worth the full pipeline: tests, security, structure.
const FULL_WORDS: [&str; 14] = [
    "test",
    "tests",
    "validation",
    "validate",
    "security",
    "secure",
    "auth",
    "refactor",
    "split",
    "module",
    "migrate",
    "password",
    "sanitize",
    "injection",
];
/// A request this short with no sign of a larger change is a small edit.
const SMALL_EDIT_WORDS: usize = 8;

/// Pick a tier for `auto` and say why, in words a user reads in the reasoning line.
pub fn classify(request: &str) -> (Tier, &'static str) {
    let lower = request.trim().to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .collect();
    let first = words.first().copied().unwrap_or("");
    if lower.ends_with('?') || QUESTION_STARTS.contains(&first) {
        return (Tier::Light, "the request is a question");
    }
    let wants_full = words.iter().any(|w| FULL_WORDS.contains(w));
    if words.len() <= SMALL_EDIT_WORDS && !wants_full {
        return (Tier::Light, "the request is a small edit");
    }
    if wants_full {
        (
            Tier::Full,
            "the change touches tests, security or structure, so every stage runs",
        )
    } else {
        (
            Tier::Standard,
            "the request is a code change: write, test, verify",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_and_small_edits_are_light() {
        assert_eq!(classify("What do the notes say?").0, Tier::Light);
        assert_eq!(classify("explain the parser").0, Tier::Light);
        assert_eq!(classify("fix the typo in README").0, Tier::Light);
        assert_eq!(classify("hi").0, Tier::Light);
    }

    #[test]
    fn larger_changes_get_stages() {
        assert_eq!(
            classify("Add input validation to parse_config and test it").0,
            Tier::Full
        );
        assert_eq!(
            classify("Rename Config::load to Config::from_path everywhere in the code base please")
                .0,
            Tier::Standard
        );
    }

    #[test]
    fn stage_sets_follow_decisions() {
        let names = |tier| stages(tier).iter().map(|s| s.name()).collect::<Vec<_>>();
        assert!(names(Tier::Light).is_empty());
        assert_eq!(
            names(Tier::Standard),
            ["code_writer", "test_runner", "acceptance_verifier"]
        );
        assert_eq!(names(Tier::Full), crate::protocol::marker::STAGE_NAMES);
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
