//! Helpers of the Unix-socket attack suites: a listener outside the sandbox that reports what
//! reached it, and the outcome of each `run_command` call.

use std::io::Read;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::Path;
use std::time::Duration;

use super::Outcome;

/// A listener that never blocks the test: what reached it, if anything.
pub struct Listener(UnixListener);

impl Listener {
    pub fn at_path(path: &Path) -> Listener {
        Listener::ready(UnixListener::bind(path))
    }

    pub fn abstract_named(name: &str) -> Listener {
        let addr = SocketAddr::from_abstract_name(name.as_bytes())
            .expect("make the abstract socket address");
        Listener::ready(UnixListener::bind_addr(&addr))
    }

    fn ready(bound: std::io::Result<UnixListener>) -> Listener {
        let listener = bound.expect("bind");
        listener
            .set_nonblocking(true)
            .expect("make listener non-blocking");
        Listener(listener)
    }

    /// The bytes of the first connection made once every holder of it has closed it, or
    /// `None` if none was made.
    pub fn received(&self) -> Option<String> {
        let (mut stream, _) = self.0.accept().ok()?;
        stream
            .set_nonblocking(false)
            .expect("make stream non-blocking");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("set a read timeout on stream");
        let mut text = String::new();
        let _ = stream.read_to_string(&mut text);
        Some(text)
    }
}

/// Each tool result's status and output, in order.
pub fn results(out: &Outcome) -> Vec<(String, String)> {
    out.of_type("tool_result")
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap_or_default().to_string(),
                r["output"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}
