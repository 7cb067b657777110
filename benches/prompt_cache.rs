//! Benchmark: what Anthropic prompt caching saves on a scripted 20-turn conversation over a
//! 30 KB repository (19 turns reading its files, then an answer), through the real `splice`
//! binary and the local fake provider.
//!
//! The fake provider records the 20 request bodies exactly as Splice sent them. Their input
//! cost is then estimated twice from the same price table (`assets/pricing.json`,
//! `anthropic/claude-sonnet-4-5`): without caching, every input token at the input rate; with
//! it, as the Messages API's prompt cache would bill those same bodies: the blocks in cache
//! order (tools, system, messages), an entry written at each `cache_control` breakpoint whose
//! prefix is at least 1,024 tokens, a read where a breakpoint's prefix (or one of the 20 blocks
//! before it) matches an entry byte for byte, the blocks after the read up to the last
//! breakpoint written at the cache-write rate, the rest at the input rate. Tokens are estimated
//! as bytes / 4, which cancels out of the ratio. The bar: at most 35% of the uncached cost.
//!
//! Run: `cargo bench --bench prompt_cache`.

// A benchmark is test code: a failed step fails it with a message saying what failed.
#![allow(clippy::expect_used)]

#[path = "../tests/all/support/fake_provider.rs"]
mod fake_provider;

use std::collections::HashSet;
use std::process::{Command, Stdio};

use fake_provider::{FakeProvider, anthropic};
use serde_json::Value;

const TURNS: usize = 20;
const FILES: usize = 10;
const FILE_BYTES: usize = 3 * 1024;
/// The shortest prefix the API caches for Sonnet models.
const MIN_CACHED_TOKENS: usize = 1024;
/// How many blocks before a breakpoint the API looks for an entry.
const LOOKBACK: usize = 20;

struct Rates {
    input: f64,
    cached_input: f64,
    cache_write: f64,
}

fn rates() -> Rates {
    let text = include_str!("../assets/pricing.json");
    let table: Value = serde_json::from_str(text).expect("parse text as JSON");
    let price = &table["models"]["anthropic/claude-sonnet-4-5"];
    let rate = |key: &str| price[key].as_f64().unwrap_or_else(|| panic!("no {key}"));
    Rates {
        input: rate("input"),
        cached_input: rate("cachedInput"),
        cache_write: rate("cacheWrite"),
    }
}

/// A repository of FILES source files, FILE_BYTES each.
fn repository(root: &std::path::Path) {
    for i in 0..FILES {
        let mut text = String::new();
        let mut line = 0;
        while text.len() < FILE_BYTES {
            text.push_str(&format!(
                "pub fn item_{i}_{line}(input: &str) -> usize {{ input.len() + {line} }}\n"
            ));
            line += 1;
        }
        std::fs::write(root.join(format!("module_{i}.rs")), text).expect("write module_<i>.rs");
    }
}

/// The request's blocks in cache order, each as its bytes without `cache_control`, and whether
/// it carries a breakpoint.
fn blocks(body: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut push = |block: &Value| {
        let mut plain = block.clone();
        let marked = plain
            .as_object_mut()
            .and_then(|m| m.remove("cache_control"))
            .is_some();
        out.push((plain.to_string(), marked));
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push(tool);
    }
    for block in body["system"].as_array().into_iter().flatten() {
        push(block);
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            // The role is part of what the block means: keep it in its bytes.
            let mut with_role = block.clone();
            if let Some(map) = with_role.as_object_mut() {
                map.insert("_role".into(), message["role"].clone());
            }
            push(&with_role);
        }
    }
    out
}

struct Bill {
    read: usize,
    written: usize,
    fresh: usize,
}

/// One request as the cache bills it; the cache learns its breakpoints.
fn bill(body: &Value, cache: &mut HashSet<String>) -> Bill {
    let blocks = blocks(body);
    let mut prefixes = Vec::with_capacity(blocks.len());
    let mut tokens = Vec::with_capacity(blocks.len());
    let (mut prefix, mut running) = (String::new(), 0);
    for (bytes, _) in &blocks {
        prefix.push_str(bytes);
        prefix.push('\u{1e}');
        running += bytes.len() / 4;
        prefixes.push(prefix.clone());
        tokens.push(running);
    }
    let marks: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].1).collect();
    let total = tokens.last().copied().unwrap_or(0);
    let hit = marks
        .iter()
        .flat_map(|&b| (b.saturating_sub(LOOKBACK)..=b).rev())
        .filter(|&j| cache.contains(&prefixes[j]))
        .max();
    let read = hit.map_or(0, |j| tokens[j]);
    let last_mark = marks.last().copied();
    let written = match last_mark {
        Some(last) if tokens[last] >= MIN_CACHED_TOKENS => tokens[last].saturating_sub(read),
        _ => 0,
    };
    for &b in &marks {
        if tokens[b] >= MIN_CACHED_TOKENS {
            cache.insert(prefixes[b].clone());
        }
    }
    Bill {
        read,
        written,
        fresh: total - read - written,
    }
}

fn main() {
    let work = tempfile::tempdir().expect("create a temporary directory");
    let data = tempfile::tempdir().expect("create a temporary directory");
    repository(work.path());
    let mut replies = Vec::new();
    for turn in 0..TURNS - 1 {
        let args = format!(r#"{{"path":"module_{}.rs"}}"#, turn % FILES);
        replies.push(anthropic::tool_call(
            &format!("toolu_{turn}"),
            "read_file",
            &[&args],
        ));
    }
    replies.push(anthropic::answer(&["Every module adds its line number."]));
    let provider = FakeProvider::start(replies);
    let output = Command::new(env!("CARGO_BIN_EXE_splice"))
        .args([
            "exec",
            "--output-format",
            "stream-json",
            "--provider",
            "anthropic",
            "--tier",
            "light",
            "--max-turns",
            "40",
        ])
        .arg("What do the modules of this repository compute?")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", data.path())
        .env("SPLICE_DATA_DIR", data.path())
        .env("ANTHROPIC_BASE_URL", &provider.url)
        .env("ANTHROPIC_API_KEY", "sk-ant-bench")
        .current_dir(work.path())
        .stdin(Stdio::null())
        .output()
        .expect("run splice");
    let events = String::from_utf8_lossy(&output.stdout);
    let tail: Vec<&str> = events.lines().rev().take(4).collect();
    assert!(output.status.success(), "the scripted run failed: {tail:?}");
    let requests = provider.requests();
    assert_eq!(requests.len(), TURNS, "every turn reached the provider");
    let rates = rates();
    let mut cache = HashSet::new();
    let (mut uncached, mut cached) = (0.0, 0.0);
    let (mut read, mut written, mut fresh) = (0, 0, 0);
    for request in &requests {
        let bill = bill(&request.body, &mut cache);
        let input = (bill.read + bill.written + bill.fresh) as f64;
        uncached += input * rates.input / 1e6;
        cached += (bill.read as f64 * rates.cached_input
            + bill.written as f64 * rates.cache_write
            + bill.fresh as f64 * rates.input)
            / 1e6;
        (read, written, fresh) = (read + bill.read, written + bill.written, fresh + bill.fresh);
    }
    let ratio = cached / uncached;
    eprintln!(
        "prompt caching, {TURNS}-turn Anthropic conversation over a {} KB repository:",
        FILES * FILE_BYTES / 1024
    );
    eprintln!("  input tokens (est.): {read} read from cache, {written} written, {fresh} uncached");
    eprintln!("  input cost without caching  ${uncached:.4}");
    eprintln!(
        "  input cost with caching     ${cached:.4}  ({:.1}% of uncached; bar: 35%)",
        ratio * 100.0
    );
    if ratio > 0.35 {
        eprintln!("  over the bar");
    }
}
