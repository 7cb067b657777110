//! TypeScript stripped ahead of time (filled in below).

use serde_json::{Map, Value};

use super::NodeBinary;
use crate::packages::package::Package;

/// `file://` URL → JavaScript for the package's TypeScript files whose stripped form is known.
pub async fn prepared(_package: &Package, _node: &NodeBinary) -> Map<String, Value> {
    Map::new()
}
