//! The one place an HTTP client is made. reqwest is built on rustls with no crypto provider of
//! its own (no aws-lc C build in the install), so ring's provider is installed here, before the
//! first client: a client built without one would panic at its first use of TLS.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
