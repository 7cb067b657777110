//! The permission policy: modes, allow and deny rules, and how the deny rules read shell syntax.

mod deny_rules;
mod tools_under_policy;
