//! Usage accounting of one run: a `usage` event per model request, running totals for the final
//! result, and the budget guards.

use std::sync::Mutex;

use thiserror::Error;

use crate::bus::Bus;
use crate::protocol::Event;
use crate::protocol::events::{CostStatus, UsageEvent};
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
    /// What each design-plan task spent, by task id (tasks that run at once share the meter).
    tasks: std::collections::HashMap<String, Tally>,
}

/// One task's spend.
#[derive(Debug, Default)]
struct Tally {
    totals: UsageTotals,
    priced: u32,
    cost: f64,
}

impl Tally {
    fn add(&mut self, prompt: u64, completion: u64, total: u64, cost: Option<f64>) {
        self.totals.requests += 1;
        self.totals.prompt_tokens += prompt;
        self.totals.completion_tokens += completion;
        self.totals.total_tokens += total;
        if let Some(cost) = cost {
            self.priced += 1;
            self.cost += cost;
        }
    }

    fn report(&self) -> UsageTotals {
        let mut totals = self.totals.clone();
        let (status, cost) = match (self.priced, totals.requests) {
            (_, 0) => (CostStatus::Priced, Some(0.0)),
            (0, _) => (CostStatus::Unpriced, None),
            (p, r) if p == r => (CostStatus::Priced, Some(self.cost)),
            _ => (CostStatus::Partial, None),
        };
        totals.cost_status = status;
        totals.cost_usd = cost.map(|c| (c * 1_000_000.0).round() / 1_000_000.0);
        totals
    }
}

impl State {
    fn add_to_task(
        &mut self,
        task: Option<&str>,
        (prompt, completion, total): (u64, u64, u64),
        cost: Option<f64>,
    ) {
        if let Some(task) = task {
            self.tasks
                .entry(task.to_string())
                .or_default()
                .add(prompt, completion, total, cost);
        }
    }
}

/// Which model a meter's requests go to.
#[derive(Debug, Clone, Default)]
struct Target {
    provider: String,
    model: String,
    api_model: String,
}

impl Target {
    fn new(provider: &str, model: &str, api_model: &str) -> Target {
        Target {
            provider: provider.to_string(),
            model: model.to_string(),
            api_model: api_model.to_string(),
        }
    }
}

/// One cost reported by another program, already priced by it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExternalUsage {
    pub provider: String,
    pub model: String,
    /// Where in the run it was spent (the tool's name).
    pub stage: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub reasoning_tokens: Option<u64>,
    /// `None`: the program reported no price; the event is then unpriced, never 0.
    pub cost_usd: Option<f64>,
}

/// The run's spend so far is not known (an unpriced model), so `--max-cost-usd` (`max`)
/// cannot be checked.
#[derive(Debug, Clone, Copy, PartialEq, Error)]
#[error(
    "the cost budget cannot be checked: the run's spend so far is not known (--max-cost-usd {max})"
)]
pub struct SpendUnknown {
    pub max: f64,
}

pub struct UsageMeter {
    /// The model the requests go to: a custom command may name another once the request is
    /// read (after `run_start`).
    target: Mutex<Target>,
    pricing: PriceTable,
    budget: Budget,
    /// Shared with the meters of the run's subagents on another model ([`UsageMeter::for_model`]).
    state: std::sync::Arc<Mutex<State>>,
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
            target: Mutex::new(Target::new(provider, model, api_model)),
            pricing,
            budget,
            state: Default::default(),
        }
    }

    /// The same run's meter for requests to another model (a subagent's): priced as that
    /// model's, counted in the same totals and budgets.
    pub fn for_model(&self, provider: &str, model: &str, api_model: &str) -> UsageMeter {
        UsageMeter {
            target: Mutex::new(Target::new(provider, model, api_model)),
            pricing: self.pricing.clone(),
            budget: self.budget,
            state: std::sync::Arc::clone(&self.state),
        }
    }

    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// The context window of the run's model.
    pub fn context_window(&self) -> u64 {
        let target = self.target();
        self.pricing
            .context_window(&target.provider, &target.api_model)
    }

    /// The requests from now on go to this model, and are priced as its.
    pub fn switch_model(&self, provider: &str, model: &str, api_model: &str) {
        if let Ok(mut target) = self.target.lock() {
            *target = Target::new(provider, model, api_model);
        }
    }

    fn target(&self) -> Target {
        self.target.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Account one model request and emit its `usage` event.
    pub fn record(&self, bus: &Bus, stage: &str, iteration: u32, usage: Option<&TokenUsage>) {
        let target = self.target();
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.sequence += 1;
        let mut event = UsageEvent {
            provider: target.provider,
            model: target.model,
            stage: stage.to_string(),
            iteration,
            usage_sequence: state.sequence,
            ..UsageEvent::default()
        };
        self.pricing.fill(&mut event, &target.api_model, usage);
        if !event.usage_reported {
            state.unreported += 1;
        }
        let (prompt, completion, total) = (
            event.prompt_tokens,
            event.completion_tokens,
            event.total_tokens,
        );
        state.add_to_task(bus.task_id(), (prompt, completion, total), event.cost_usd);
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

    /// Account a cost another program reported and priced itself (the Scribiz CLI's `usage`
    /// lines): its own `usage` event, counted in the totals and the budgets like a model
    /// request, so there is one accounting path.
    pub fn record_external(&self, bus: &Bus, usage: &ExternalUsage) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.sequence += 1;
        let total = usage.prompt_tokens + usage.completion_tokens;
        let event = UsageEvent {
            provider: usage.provider.clone(),
            model: usage.model.clone(),
            stage: usage.stage.clone(),
            iteration: 1,
            usage_sequence: state.sequence,
            usage_reported: true,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: total,
            reasoning_tokens: usage.reasoning_tokens,
            cost_usd: usage.cost_usd,
            cost_status: Some(if usage.cost_usd.is_some() {
                CostStatus::Priced
            } else {
                CostStatus::Unpriced
            }),
            unpriced_reason: usage
                .cost_usd
                .is_none()
                .then(|| format!("{} reported no cost", usage.provider)),
            ..UsageEvent::default()
        };
        state.add_to_task(
            bus.task_id(),
            (usage.prompt_tokens, usage.completion_tokens, total),
            usage.cost_usd,
        );
        state.totals.requests += 1;
        state.totals.prompt_tokens += usage.prompt_tokens;
        state.totals.completion_tokens += usage.completion_tokens;
        state.totals.total_tokens += total;
        if let Some(cost) = usage.cost_usd {
            state.priced += 1;
            state.cost += cost;
        }
        drop(state);
        bus.emit(Event::Usage(event));
    }

    /// What is left of `--max-cost-usd`: `None` without one, an error when the spend so far is
    /// not known (an unpriced model), so a caller fails closed.
    pub fn remaining_usd(&self) -> Option<Result<f64, SpendUnknown>> {
        let max = self.budget.max_cost_usd?;
        let totals = self.totals();
        Some(match totals.cost_usd {
            Some(spent) => Ok(max - spent),
            None => Err(SpendUnknown { max }),
        })
    }

    /// What design-plan task `id` spent (zero when it made no request).
    pub fn task_totals(&self, id: &str) -> UsageTotals {
        self.state
            .lock()
            .ok()
            .and_then(|s| s.tasks.get(id).map(Tally::report))
            .unwrap_or_else(|| Tally::default().report())
    }

    pub fn totals(&self) -> UsageTotals {
        let Ok(state) = self.state.lock() else {
            return UsageTotals::default();
        };
        let mut totals = state.totals.clone();
        let (status, cost) = match (state.priced, totals.requests) {
            (_, 0) => (CostStatus::Priced, Some(0.0)),
            (0, _) => (CostStatus::Unpriced, None),
            (p, r) if p == r => (CostStatus::Priced, Some(state.cost)),
            _ => (CostStatus::Partial, None),
        };
        totals.cost_status = status;
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
                        "cost budget exceeded: ${} spent, limit ${max} (--max-cost-usd)",
                        usd_above(cost, max)
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

/// Dollars for people: four significant digits, at least cents (`$0.00012`, `$1.50`).
pub fn format_usd(amount: f64) -> String {
    let mut decimals = 2;
    while decimals < 12 && amount != 0.0 && amount.abs() < 10f64.powi(3 - decimals as i32) {
        decimals += 1;
    }
    trim_zeros(format!("{amount:.decimals$}"))
}

/// `spent` with as many digits as it takes to read as more than `limit` (`$0.00012`, never the
/// `$0.0001` that looks like the limit itself).
fn usd_above(spent: f64, limit: f64) -> String {
    let shown = format_usd(spent);
    if shown.parse::<f64>().is_ok_and(|s| s > limit) {
        return shown;
    }
    (2..=15)
        .map(|decimals| trim_zeros(format!("{spent:.decimals$}")))
        .find(|s| s.parse::<f64>().is_ok_and(|s| s > limit))
        .unwrap_or_else(|| format!("{spent:e}"))
}

/// Trailing zeros dropped, cents kept.
fn trim_zeros(text: String) -> String {
    let Some(dot) = text.find('.') else {
        return text;
    };
    let keep = text.trim_end_matches('0').len().max(dot + 3);
    text[..keep.min(text.len())].to_string()
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
    fn an_external_cost_is_counted_once_in_totals_and_budget() {
        let bus = Bus::new("run_t", Vec::new());
        let budget = Budget {
            max_cost_usd: Some(0.01),
            ..Budget::default()
        };
        assert_eq!(meter(Budget::default()).remaining_usd(), None);
        let meter = meter(budget);
        assert!(matches!(meter.remaining_usd(), Some(Ok(left)) if (left - 0.01).abs() < 1e-12));
        let usage = ExternalUsage {
            provider: "scribiz".into(),
            model: "gemini-3.5-transcribe".into(),
            stage: "transcribe".into(),
            prompt_tokens: 305,
            completion_tokens: 40,
            reasoning_tokens: None,
            cost_usd: Some(0.004),
        };
        meter.record_external(&bus, &usage);
        let totals = meter.totals();
        assert_eq!(totals.cost_status, CostStatus::Priced);
        assert_eq!(totals.cost_usd, Some(0.004));
        assert_eq!(totals.total_tokens, 345);
        assert!(matches!(meter.remaining_usd(), Some(Ok(left)) if (left - 0.006).abs() < 1e-12));
        assert_eq!(meter.over_budget(), None);
        meter.record_external(&bus, &usage);
        meter.record_external(&bus, &usage);
        assert!(
            meter
                .over_budget()
                .is_some_and(|r| r.contains("cost budget exceeded"))
        );
        // No price reported: unpriced, never 0, and the budget cannot be checked.
        let blind = UsageMeter::new(
            "openai",
            "gpt-4.1",
            "gpt-4.1",
            PriceTable::builtin(),
            budget,
        );
        blind.record_external(
            &bus,
            &ExternalUsage {
                cost_usd: None,
                ..usage
            },
        );
        assert_eq!(blind.totals().cost_usd, None);
        let unknown = blind.remaining_usd().and_then(Result::err);
        assert_eq!(
            unknown.map(|e| e.to_string()),
            Some(format!(
                "the cost budget cannot be checked: the run's spend so far is not known \
                 (--max-cost-usd {})",
                budget.max_cost_usd.unwrap_or_default()
            ))
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
        assert_eq!(totals.cost_status, CostStatus::Unpriced);
        assert_eq!(totals.cost_usd, None);
    }

    #[test]
    fn money_shows_enough_digits_to_read_the_budget_was_passed() {
        assert_eq!(format_usd(0.00012), "0.00012");
        assert_eq!(format_usd(1.5), "1.50");
        assert_eq!(format_usd(12.34567), "12.35");
        assert_eq!(format_usd(0.0), "0.00");
        assert_eq!(usd_above(0.00012, 0.0001), "0.00012");
        assert_eq!(usd_above(0.000100004, 0.0001), "0.000100004");
        let bus = Bus::new("run_t", Vec::new());
        let budget = Budget {
            max_cost_usd: Some(0.0001),
            ..Budget::default()
        };
        let over = meter(budget);
        let usage = TokenUsage {
            prompt_tokens: 40,
            completion_tokens: 5,
            ..TokenUsage::default()
        };
        over.record(&bus, "agent", 1, Some(&usage));
        let spent = over.totals().cost_usd.unwrap_or_default();
        assert!(
            spent > 0.0001,
            "the test needs a spend over the limit: {spent}"
        );
        let reason = over.over_budget().unwrap_or_default();
        assert!(
            reason.contains(&format!(
                "${} spent, limit $0.0001",
                usd_above(spent, 0.0001)
            )),
            "{reason}"
        );
        assert!(!reason.contains("$0.0001 spent"), "{reason}");
    }
}
