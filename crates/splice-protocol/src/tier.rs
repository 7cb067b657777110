//! Request tiers (`--tier`, the result's `tier`): a wire value, so it lives with the protocol,
//! below both the run and the pipeline.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Auto,
    Light,
    Standard,
    Full,
}

impl Tier {
    pub const NAMES: [&'static str; 4] = ["auto", "light", "standard", "full"];

    pub fn parse(name: &str) -> Option<Tier> {
        match name {
            "auto" => Some(Tier::Auto),
            "light" => Some(Tier::Light),
            "standard" => Some(Tier::Standard),
            "full" => Some(Tier::Full),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Auto => "auto",
            Tier::Light => "light",
            Tier::Standard => "standard",
            Tier::Full => "full",
        }
    }
}
