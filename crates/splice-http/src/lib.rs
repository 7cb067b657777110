//! The one place an HTTP client is made. reqwest is built on rustls with no crypto provider of
//! its own (no aws-lc C build in the install), so ring's provider is installed here, before the
//! first client: a client built without one would panic at its first use of TLS.
//!
//! A crate of its own, below every crate that speaks HTTP (the provider, MCP, the registry
//! client and server), none of which may depend on another for it.

pub mod device_login;

use std::sync::Once;

/// Installs ring as rustls's process-wide crypto provider, once. Where aws-lc-rs is compiled in
/// as well (the registry server's object_store), rustls would pick neither on its own; the
/// installed default decides, and it is ring.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err only when a default is already installed; nothing else in Splice installs one.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A reqwest client builder with the crypto provider in place. Certificates are verified as
/// reqwest does by default: against the platform's roots (rustls-platform-verifier).
#[allow(clippy::disallowed_methods)]
pub fn client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
}

/// What went wrong with a request, with every cause (a refused certificate, a reset
/// connection), and without its URL, which may carry a query a server made secret.
pub fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// A URL as the log shows it: scheme, host, port and path, without user info, query or
/// fragment (where keys may ride).
pub fn log_url(url: &str) -> String {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return "(unparsable url)".to_string();
    };
    let mut shown = format!("{}://{}", parsed.scheme(), parsed.host_str().unwrap_or(""));
    if let Some(port) = parsed.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(parsed.path());
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_user_info_query_and_fragment() {
        assert_eq!(
            log_url("https://user:pw@example.com:8443/v1/chat?key=AIzaSECRET#frag"),
            "https://example.com:8443/v1/chat"
        );
        assert_eq!(log_url("not a url"), "(unparsable url)");
    }

    fn kx_names(provider: &rustls::crypto::CryptoProvider) -> Vec<String> {
        provider
            .kx_groups
            .iter()
            .map(|group| format!("{:?}", group.name()))
            .collect()
    }

    #[test]
    fn the_installed_provider_is_ring() {
        let built = client_builder().build();
        assert!(built.is_ok(), "{built:?}");
        let installed = rustls::crypto::CryptoProvider::get_default();
        let installed = installed.unwrap_or_else(|| panic!("no provider installed"));
        let ring = rustls::crypto::ring::default_provider();
        assert_eq!(kx_names(installed), kx_names(&ring));
        let suites = |p: &rustls::crypto::CryptoProvider| -> Vec<String> {
            p.cipher_suites
                .iter()
                .map(|s| format!("{:?}", s.suite()))
                .collect()
        };
        assert_eq!(suites(installed), suites(&ring));
    }

    /// The registry client said only "error sending request" when a connection failed; the
    /// cause (here the refused connection) must reach the person, the URL must not.
    #[test]
    fn a_failed_request_is_described_with_its_cause_and_without_its_url() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let error = runtime
            .block_on(async {
                client_builder()
                    .build()
                    .expect("a client")
                    .get(format!("http://127.0.0.1:{port}/secret?token=abc"))
                    .send()
                    .await
            })
            .expect_err("nothing listens there");
        let message = describe(error);
        assert!(message.contains("onnection refused"), "{message}");
        assert!(!message.contains("token=abc"), "{message}");
    }
}
