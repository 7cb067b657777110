//! `Op::Rules`: the session's allow rules, those "allow always" answers added, listed or
//! removed (`/permissions`). The rules given by the config and flags are only counted: they
//! are changed where they were given.

use crate::permissions::Policy;

/// A look at the session's allow rules, or a change to them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RulesOp {
    /// List them, and count the rules the config and flags gave.
    List,
    /// Remove one: its number in the list (from 1), or its text as listed.
    Remove(String),
    /// Remove them all.
    Clear,
}

/// What [`RulesOp`] found or did ([`super::SessionEvent::Rules`]); rules as rendered, which
/// the front end makes safe to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RulesReport {
    /// The session rules, oldest first, and how many more the config and flags gave.
    Listed { session: Vec<String>, given: usize },
    /// This rule was removed.
    Removed(String),
    /// `Clear` removed this many.
    Cleared(usize),
    /// No session rule is the one asked to be removed.
    NotFound(String),
}

/// Carry out `op` on `policy`'s session rules.
pub(super) fn apply(policy: &Policy, op: RulesOp) -> RulesReport {
    let session = policy.session_rules();
    match op {
        RulesOp::List => RulesReport::Listed {
            given: policy.rules().len().saturating_sub(session.len()),
            session: session.iter().map(|r| r.render()).collect(),
        },
        RulesOp::Clear => {
            let mut removed = 0;
            while policy.remove_session_rule(0).is_some() {
                removed += 1;
            }
            RulesReport::Cleared(removed)
        }
        RulesOp::Remove(which) => {
            let index = match which.parse::<usize>() {
                Ok(n) => n.checked_sub(1),
                Err(_) => session.iter().position(|r| r.render() == which),
            };
            match index.and_then(|i| policy.remove_session_rule(i)) {
                Some(rule) => RulesReport::Removed(rule.render()),
                None => RulesReport::NotFound(which),
            }
        }
    }
}
