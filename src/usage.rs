//! Usage accounting of one run: a `usage` event per model request, running totals for the final
//! result, and the budget guards.

use std::sync::Mutex;

use crate::bus::Bus;
use crate::protocol::Event;
use crate::protocol::events::UsageEvent;
use crate::protocol::result::UsageTotals;
use crate::provider::TokenUsage;
use crate::provider::pricing::PriceTable;

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
}

#[derive(Debug, Default)]
struct State {
    sequence: u32,
    totals: UsageTotals,
    priced: u32,
    cost: f64,
    /// Requests whose provider reported no usage: their tokens are unknown.
    unreported: u32,
}

pub struct UsageMeter {
    provider: String,
    model: String,
    api_model: String,
    pricing: PriceTable,
    budget: Budget,
    state: Mutex<State>,
}

impl UsageMeter {
    pub fn new(
        provider: &str,
        model: &str,
        api_model: &str,
        pricing: PriceTable,
        budget: Budget,
    ) -> UsageMeter {
        UsageMeter {
            provider: provider.to_string(),
            model: model.to_string(),
            api_model: api_model.to_string(),
            pricing,
            budget,
            state: Mutex::new(State::default()),
        }
    }

    /// Account one model request and emit its `usage` event.
    pub fn record(&self, bus: &Bus, stage: &str, iteration: u32, usage: Option<&TokenUsage>) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.sequence += 1;
        let mut event = UsageEvent {
            provider: self.provider.clone(),
            model: self.model.clone(),
            stage: stage.to_string(),
            iteration,
            usage_sequence: state.sequence,
            ..UsageEvent::default()
        };
        self.pricing.fill(&mut event, &self.api_model, usage);
        if !event.usage_reported {
            state.unreported += 1;
        }
        state.totals.requests += 1;
        state.totals.prompt_tokens += event.prompt_tokens;
        state.totals.completion_tokens += event.completion_tokens;
        state.totals.total_tokens += event.total_tokens;
        if let Some(cost) = event.cost_usd {
            state.priced += 1;
            state.cost += cost;
        }
        drop(state);
        bus.emit(Event::Usage(event));
    }

    pub fn totals(&self) -> UsageTotals {
        let Ok(state) = self.state.lock() else {
            return UsageTotals::default();
        };
        let mut totals = state.totals.clone();
        let (status, cost) = match (state.priced, totals.requests) {
            (_, 0) => ("priced", Some(0.0)),
            (0, _) => ("unpriced", None),
            (p, r) if p == r => ("priced", Some(state.cost)),
            _ => ("partial", None),
        };
        totals.cost_status = status.to_string();
        totals.cost_usd = cost.map(|c| (c * 1_000_000.0).round() / 1_000_000.0);
        totals
    }

    /// The reason to abort, when a budget is spent.
    pub fn over_budget(&self) -> Option<String> {
        let totals = self.totals();
        let unreported = self.state.lock().map(|s| s.unreported).unwrap_or(0);
        if let Some(max) = self.budget.max_tokens
            && unreported > 0
        {
            return Some(format!(
                "token budget cannot be enforced: the provider reported no token usage (--max-tokens {max})"
            ));
        }
        if let Some(max) = self.budget.max_tokens
            && totals.total_tokens > max
        {
            return Some(format!(
                "token budget exceeded: {} tokens used, --max-tokens {max}",
                totals.total_tokens
            ));
        }
        if let Some(max) = self.budget.max_cost_usd {
            match totals.cost_usd {
                Some(cost) if cost > max => {
                    return Some(format!(
                        "cost budget exceeded: ${cost:.4} spent, --max-cost-usd {max}"
                    ));
                }
                None if totals.requests > 0 => {
                    return Some(format!(
                        "cost budget cannot be enforced: the model is unpriced (--max-cost-usd {max})"
                    ));
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meter(budget: Budget) -> UsageMeter {
        UsageMeter::new(
            "openai",
            "gpt-4.1",
            "gpt-4.1",
            PriceTable::builtin(),
            budget,
        )
    }

    #[test]
    fn token_budget_counts_reported_tokens_and_refuses_unknown_ones() {
        let bus = Bus::new("run_t", Vec::new());
        let budget = Budget {
            max_tokens: Some(100),
            ..Budget::default()
        };
        let usage = TokenUsage {
            prompt_tokens: 60,
            completion_tokens: 30,
            ..TokenUsage::default()
        };
        let within = meter(budget);
        within.record(&bus, "agent", 1, Some(&usage));
        assert_eq!(within.over_budget(), None);
        within.record(&bus, "agent", 1, Some(&usage));
        assert!(
            within
                .over_budget()
                .is_some_and(|r| r.contains("180 tokens used"))
        );

        let blind = meter(budget);
        blind.record(&bus, "agent", 1, None);
        assert!(
            blind
                .over_budget()
                .is_some_and(|r| r.contains("cannot be enforced"))
        );
    }

    #[test]
    fn totals_never_turn_an_unknown_cost_into_zero() {
        let bus = Bus::new("run_t", Vec::new());
        let unpriced = UsageMeter::new(
            "openai",
            "llama",
            "llama",
            PriceTable::builtin(),
            Budget::default(),
        );
        unpriced.record(&bus, "agent", 1, Some(&TokenUsage::default()));
        let totals = unpriced.totals();
        assert_eq!(totals.cost_status, "unpriced");
        assert_eq!(totals.cost_usd, None);
    }
}
