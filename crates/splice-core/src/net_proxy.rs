//! Splice's network proxy (`splice_sandbox::net_proxy`), confined commands' only way to the
//! network: one per process, started with the first confined command, in the data directory,
//! each connection decided by the network policy (`permissions::network`).

use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use splice_sandbox::net_proxy::{BoxFuture, Gate};

use crate::permissions::network;

/// The proxy's socket, started on first use; `Err` says why it could not be.
pub fn socket() -> Result<&'static Path, &'static str> {
    static SOCKET: OnceLock<Result<std::path::PathBuf, String>> = OnceLock::new();
    SOCKET
        .get_or_init(|| {
            let run = crate::layout::Layout::process().runtime("");
            splice_sandbox::net_proxy::start(&run, Arc::new(Policy))
        })
        .as_ref()
        .map(|path| path.as_path())
        .map_err(String::as_str)
}

/// The network policy in force, as the proxy's gate.
struct Policy;

impl Gate for Policy {
    fn admit<'a>(&'a self, host: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            if network::allowed(host) || network::ask_or_refuse(host).await {
                Ok(())
            } else {
                Err(network::not_allowed(host))
            }
        })
    }

    fn refuse_address(&self, host: &str, address: IpAddr) -> Option<String> {
        if network::local_allowed() || !network::is_local(address) {
            return None;
        }
        let why = network::local_refused(host, address);
        network::refused(host, &why);
        Some(why)
    }
}
