//! Model data from a data file: prices (and the cost of one request) and context windows.
//!
//! The built-in table is `assets/pricing.json`; a user file (`SPLICE_PRICING_FILE`, else
//! `<config dir>/splice/pricing.json`) of the same shape adds or replaces entries.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use thiserror::Error;

use super::TokenUsage;
use splice_protocol::events::{CostStatus, UsageEvent};

const BUILTIN: &str = include_str!("../../../assets/pricing.json");

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Price {
    pub input: f64,
    #[serde(default)]
    pub cached_input: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
    pub output: f64,
    /// The most tokens a request may hold, input and output together.
    #[serde(default)]
    pub context_window: Option<u64>,
}

/// The context window assumed for a model the data does not name: small enough for most
/// models served today, so a long run compacts early rather than overflowing.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 32_000;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PriceFile {
    source: String,
    as_of: String,
    models: BTreeMap<String, Price>,
}

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    price: Price,
    source: String,
    as_of: String,
    provenance: &'static str,
}

#[derive(Debug, Error)]
pub enum PricingError {
    #[error("cannot read pricing file {path}: {message}")]
    Read { path: String, message: String },
    #[error("invalid pricing file {path}: {message}")]
    Parse { path: String, message: String },
}

#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    entries: BTreeMap<String, Entry>,
}

impl PriceTable {
    pub fn builtin() -> PriceTable {
        let mut table = PriceTable::default();
        if let Ok(file) = serde_json::from_str::<PriceFile>(BUILTIN) {
            table.absorb(file, "builtin");
        }
        table
    }

    /// The built-in table with the user's file laid over it, if one exists.
    pub fn load(user_file: Option<&Path>) -> Result<PriceTable, PricingError> {
        let mut table = PriceTable::builtin();
        if let Some(path) = user_file.filter(|p| p.exists()) {
            let shown = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|e| PricingError::Read {
                path: shown.clone(),
                message: e.to_string(),
            })?;
            let file: PriceFile = serde_json::from_str(&text).map_err(|e| PricingError::Parse {
                path: shown,
                message: e.to_string(),
            })?;
            table.absorb(file, "user");
        }
        Ok(table)
    }

    fn absorb(&mut self, file: PriceFile, provenance: &'static str) {
        for (model, price) in file.models {
            self.entries.insert(
                model,
                Entry {
                    price,
                    source: file.source.clone(),
                    as_of: file.as_of.clone(),
                    provenance,
                },
            );
        }
    }

    /// The context window of `provider`'s `api_model`, from the data or the default.
    pub fn context_window(&self, provider: &str, api_model: &str) -> u64 {
        self.entries
            .get(&format!("{provider}/{api_model}"))
            .and_then(|entry| entry.price.context_window)
            .filter(|&window| window > 0)
            .unwrap_or(DEFAULT_CONTEXT_WINDOW)
    }

    /// Fill the token and cost fields of a usage event.
    pub fn fill(&self, event: &mut UsageEvent, api_model: &str, usage: Option<&TokenUsage>) {
        let Some(usage) = usage else {
            event.usage_reported = false;
            event.cost_status = Some(CostStatus::Unpriced);
            event.unpriced_reason = Some("the provider reported no usage".into());
            return;
        };
        event.usage_reported = true;
        event.prompt_tokens = usage.prompt_tokens;
        event.completion_tokens = usage.completion_tokens;
        event.total_tokens = usage.prompt_tokens + usage.completion_tokens;
        event.cached_input_tokens = usage.cached_input_tokens;
        event.cache_write_tokens = usage.cache_write_tokens;
        event.reasoning_tokens = usage.reasoning_tokens;
        let key = format!("{}/{}", event.provider, api_model);
        match self.entries.get(&key) {
            None => {
                event.cost_status = Some(CostStatus::Unpriced);
                event.unpriced_reason = Some(format!("no price for {key} in the pricing data"));
            }
            Some(entry) => {
                event.cost_usd = Some(cost(&entry.price, usage));
                event.cost_status = Some(CostStatus::Priced);
                event.cost_estimated = Some(true);
                event.cost_provenance = Some(entry.provenance.into());
                event.pricing_source = Some(entry.source.clone());
                event.pricing_as_of = Some(entry.as_of.clone());
            }
        }
    }
}

fn cost(price: &Price, usage: &TokenUsage) -> f64 {
    let cached = usage.cached_input_tokens.unwrap_or(0);
    let written = usage.cache_write_tokens.unwrap_or(0);
    let fresh = usage.prompt_tokens.saturating_sub(cached + written);
    let per_token = |tokens: u64, per_million: f64| tokens as f64 * per_million / 1_000_000.0;
    let usd = per_token(fresh, price.input)
        + per_token(cached, price.cached_input.unwrap_or(price.input))
        + per_token(written, price.cache_write.unwrap_or(price.input))
        + per_token(usage.completion_tokens, price.output);
    // Round to a millionth of a dollar so sums print cleanly.
    (usd * 1_000_000.0).round() / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage_event(provider: &str) -> UsageEvent {
        UsageEvent {
            provider: provider.into(),
            ..UsageEvent::default()
        }
    }

    #[test]
    fn priced_model_gets_cost_and_provenance() {
        let mut event = usage_event("openai");
        let usage = TokenUsage {
            prompt_tokens: 1_000_000,
            completion_tokens: 1_000_000,
            cached_input_tokens: Some(500_000),
            ..TokenUsage::default()
        };
        PriceTable::builtin().fill(&mut event, "gpt-4.1", Some(&usage));
        // 0.5M fresh at 2.0 + 0.5M cached at 0.5 + 1M out at 8.0
        assert_eq!(event.cost_usd, Some(9.25));
        assert_eq!(event.cost_status, Some(CostStatus::Priced));
        assert_eq!(event.pricing_as_of.as_deref(), Some("2025-10-15"));
    }

    #[test]
    fn context_windows_come_from_the_data_with_a_small_default() {
        let table = PriceTable::builtin();
        assert_eq!(
            table.context_window("anthropic", "claude-sonnet-4-5"),
            200_000
        );
        assert_eq!(table.context_window("openai", "gpt-4o"), 128_000);
        assert_eq!(
            table.context_window("openai", "llama3"),
            DEFAULT_CONTEXT_WINDOW
        );
        // Every built-in model has its window.
        for key in table.entries.keys() {
            let (provider, model) = key.split_once('/').unwrap_or_default();
            assert!(
                table.entries[key].price.context_window.is_some(),
                "{provider}/{model}"
            );
        }
    }

    #[test]
    fn unknown_model_is_unpriced_without_cost() {
        let mut event = usage_event("openai");
        PriceTable::builtin().fill(&mut event, "llama3", Some(&TokenUsage::default()));
        assert_eq!(event.cost_usd, None);
        assert_eq!(event.cost_status, Some(CostStatus::Unpriced));
        assert!(event.unpriced_reason.is_some());
    }

    #[test]
    fn user_file_overrides_builtin() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let path = dir.path().join("pricing.json");
        std::fs::write(
            &path,
            r#"{"source":"mine","asOf":"2026-01-01","models":{"openai/llama3":{"input":1.0,"output":1.0}}}"#,
        )
        .expect("write path");
        let table = PriceTable::load(Some(&path)).expect("load");
        let mut event = usage_event("openai");
        let usage = TokenUsage {
            prompt_tokens: 1_000_000,
            ..TokenUsage::default()
        };
        table.fill(&mut event, "llama3", Some(&usage));
        assert_eq!(event.cost_usd, Some(1.0));
        assert_eq!(event.cost_provenance.as_deref(), Some("user"));
    }
}
