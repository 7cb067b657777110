//! The settings the core's tests run on: OpenAI with no key, `/repo`, asking for every write.

use std::path::PathBuf;

use crate::permissions::{PermissionMode, Policy};
use crate::provider::pricing::PriceTable;
use crate::provider::{ProviderConfig, ProviderKind};
use crate::settings::{RunSettings, Tier};
use crate::usage::Budget;

pub(crate) fn settings() -> RunSettings {
    let mut provider =
        ProviderConfig::from_env(ProviderKind::OpenAi, Some("gpt-4.1")).expect("from env");
    provider.api_key = None;
    RunSettings {
        session_id: "session_test".into(),
        cwd: PathBuf::from("/repo"),
        provider,
        policy: Policy::new(PermissionMode::Ask, vec![]),
        tier: Tier::Auto,
        max_turns: 40,
        layout: crate::layout::Layout::at(std::path::Path::new("/nonexistent/splice-data")),
        pricing: PriceTable::default(),
        budget: Budget::default(),
        pipeline: Default::default(),
        conversation: Default::default(),
        packages: Default::default(),
        mcp: Default::default(),
        hooks: Default::default(),
    }
}
