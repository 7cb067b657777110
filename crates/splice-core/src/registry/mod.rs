//! What the client shares with the package registry: the HTTP API's types (`api`), spoken by
//! the client (`registry_client`) and the server (the `splice-registry` crate) alike, and how
//! `splice registry …` becomes the server binary (`launch`). The server itself is the
//! `splice-registry` crate: `splice` links none of its crates (docs/registry.md).

pub mod api;
pub(crate) mod launch;
