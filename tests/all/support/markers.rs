//! Stage markers pulled out of a stream's `reasoning.delta` values, and the well-formedness
//! check every tier must pass.

use serde_json::Value;

use super::Outcome;

const PREFIX: &str = "\u{0}STAGE";

/// Every marker in order, decoded.
pub fn markers(out: &Outcome) -> Vec<Value> {
    let reasoning: String = out
        .of_type("reasoning")
        .iter()
        .filter_map(|l| l["delta"].as_str())
        .collect();
    let mut found = Vec::new();
    let mut rest = reasoning.as_str();
    while let Some(start) = rest.find(PREFIX) {
        let after = &rest[start + PREFIX.len()..];
        let end = after
            .find('\u{0}')
            .unwrap_or_else(|| panic!("unterminated marker in {after:?}"));
        found.push(
            serde_json::from_str(&after[..end])
                .unwrap_or_else(|e| panic!("marker is not JSON ({e}): {}", &after[..end])),
        );
        rest = &after[end + 1..];
    }
    found
}

/// `stage:status:iteration` for each marker, for readable sequence assertions.
pub fn compact(markers: &[Value]) -> Vec<String> {
    markers
        .iter()
        .map(|m| {
            format!(
                "{}:{}:{}",
                m["stage"].as_str().unwrap_or("?"),
                m["status"].as_str().unwrap_or("?"),
                m["iteration"]
            )
        })
        .collect()
}

/// Every start is followed at once by exactly one done/failed of the same stage (with ms);
/// within an iteration the indexes run 1..=total in order, each once.
pub fn assert_well_formed(markers: &[Value]) {
    let mut expected_index = 1;
    let mut iteration = 0;
    let mut i = 0;
    while i < markers.len() {
        let m = &markers[i];
        let index = m["index"].as_u64().unwrap_or(0);
        let total = m["total"].as_u64().unwrap_or(0);
        let it = m["iteration"].as_u64().unwrap_or(0);
        if index == 1 {
            assert!(it >= iteration, "iterations go back at {m}");
            iteration = it;
            expected_index = 1;
        }
        assert_eq!(it, iteration, "marker of another iteration: {m}");
        assert_eq!(index, expected_index, "index out of order: {m}");
        assert!(index <= total, "index beyond total: {m}");
        match m["status"].as_str() {
            Some("skipped") => i += 1,
            Some("start") => {
                let end = markers
                    .get(i + 1)
                    .unwrap_or_else(|| panic!("stage never ended: {m}"));
                assert_eq!(end["stage"], m["stage"], "{m} closed by {end}");
                assert_eq!(end["index"], m["index"]);
                assert!(
                    end["status"] == "done" || end["status"] == "failed",
                    "{m} closed by {end}"
                );
                assert!(end["ms"].is_u64(), "no ms in {end}");
                i += 2;
            }
            _ => panic!("unexpected marker {m}"),
        }
        expected_index += 1;
    }
}
