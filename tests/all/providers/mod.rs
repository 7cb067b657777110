//! Providers: the OpenAI-compatible and Anthropic wire formats, prices, budgets, prompt caching and
//! compaction.

mod anthropic;
mod cost_and_context;
mod openai;
mod tls;
