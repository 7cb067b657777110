//! HTTPS through the client's TLS (rustls on ring): a provider on 127.0.0.1 behind a
//! self-signed certificate is refused, and the same server is reached once its certificate is
//! a trusted root (`SSL_CERT_FILE`, read by the platform verifier), so the refusal is the
//! certificate check and nothing else.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::support;
use support::fake_provider::{FakeProvider, openai};
use support::{Sandbox, run, stream_json};

/// Self-signed for 127.0.0.1 and localhost (EC P-256, not a CA, valid 2000–2200).
const CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBmDCCAT+gAwIBAgIUf5HSCuH+jWpAdkZP5xXpcZ8DCWcwCgYIKoZIzj0EAwIw
IjEgMB4GA1UEAwwXc3BsaWNlLXRlc3Qtc2VsZi1zaWduZWQwIBcNMDAwMTAxMDAw
MDAwWhgPMjIwMDAxMDEwMDAwMDBaMCIxIDAeBgNVBAMMF3NwbGljZS10ZXN0LXNl
bGYtc2lnbmVkMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEoLl/sxSYaPuymQ4W
B1eL50Xum9LksNbpV+xPW85NdnmQRkYMhhg8m9WocGQH9W/0OxvzUulqbwMt8P7A
Dd37v6NRME8wGgYDVR0RBBMwEYcEfwAAAYIJbG9jYWxob3N0MAwGA1UdEwEB/wQC
MAAwDgYDVR0PAQH/BAQDAgeAMBMGA1UdJQQMMAoGCCsGAQUFBwMBMAoGCCqGSM49
BAMCA0cAMEQCIEAgmDPV6sgX/xus4mo5+oE7r3xw18o54Ld267lFO4W0AiApP60V
3M4m4/4w/Z78olWw0vFWX2P1Io4wxhUDGK1RlQ==
-----END CERTIFICATE-----
";

const KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgmCvYI2OqGamqPi+7
Y2Tlh4Uh+o456Y74/LDki1Z4++yhRANCAASguX+zFJho+7KZDhYHV4vnRe6b0uSw
1ulX7E9bzk12eZBGRgyGGDyb1ahwZAf1b/Q7G/NS6WpvAy3w/sAN3fu/
-----END PRIVATE KEY-----
";

/// A TLS front on 127.0.0.1 for a plain-HTTP upstream (the fake provider): one request per
/// connection, the answer relayed whole. Handshakes the client broke off are recorded.
struct TlsFront {
    url: String,
    refused: Arc<Mutex<Vec<String>>>,
}

impl TlsFront {
    fn start(upstream: SocketAddr) -> TlsFront {
        let cert =
            CertificateDer::from_pem_slice(CERT.as_bytes()).unwrap_or_else(|e| panic!("cert: {e}"));
        let key =
            PrivateKeyDer::from_pem_slice(KEY.as_bytes()).unwrap_or_else(|e| panic!("key: {e}"));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap_or_else(|e| panic!("versions: {e}"))
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap_or_else(|e| panic!("server config: {e}"));
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener.local_addr().expect("local addr listener");
        let refused = Arc::new(Mutex::new(Vec::new()));
        let log = refused.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let (config, log) = (config.clone(), log.clone());
                thread::spawn(move || relay(stream, config, upstream, &log));
            }
        });
        TlsFront {
            url: format!("https://{addr}"),
            refused,
        }
    }

    fn refused(&self) -> Vec<String> {
        self.refused.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

fn relay(
    mut tcp: TcpStream,
    config: Arc<rustls::ServerConfig>,
    upstream: SocketAddr,
    refused: &Mutex<Vec<String>>,
) {
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(mut conn) = rustls::ServerConnection::new(config) else {
        return;
    };
    while conn.is_handshaking() {
        if let Err(error) = conn.complete_io(&mut tcp) {
            if let Ok(mut refused) = refused.lock() {
                refused.push(error.to_string());
            }
            return;
        }
    }
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let Some(request) = read_request(&mut tls) else {
        return;
    };
    let Ok(mut plain) = TcpStream::connect(upstream) else {
        return;
    };
    let mut answer = Vec::new();
    if plain.write_all(&request).is_err() || plain.read_to_end(&mut answer).is_err() {
        return;
    }
    let _ = tls.write_all(&answer);
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

/// The request's head and its `content-length` body.
fn read_request(stream: &mut impl Read) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut piece = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut piece).ok().filter(|&n| n > 0)?;
        bytes.extend_from_slice(&piece[..n]);
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    while bytes.len() < head_end + length {
        let n = stream.read(&mut piece).ok().filter(|&n| n > 0)?;
        bytes.extend_from_slice(&piece[..n]);
    }
    Some(bytes)
}

fn upstream_addr(provider: &FakeProvider) -> SocketAddr {
    let host = provider.url.trim_start_matches("http://");
    host.parse().unwrap_or_else(|e| panic!("{host}: {e}"))
}

fn write_cert(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("self-signed.pem");
    std::fs::write(&path, CERT).expect("write path");
    path
}

#[test]
fn a_self_signed_https_provider_is_refused() {
    let provider = FakeProvider::start(vec![openai::answer(&["never"])]);
    let front = TlsFront::start(upstream_addr(&provider));
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&front.url);
    command.env("SPLICE_MAX_RETRIES", "1");
    stream_json(&mut command).arg("hi");
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 3, "{}", out.stderr);
    let error = out.first("error");
    assert_eq!(error["code"], "provider_error");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("could not reach openai"), "{message}");
    assert!(
        message.contains("invalid peer certificate: UnknownIssuer"),
        "{message}"
    );
    // The client broke the handshake off with an alert, each attempt, and no request got
    // through to the provider.
    let refused = front.refused();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(
        refused.iter().all(|r| r.contains("fatal alert")),
        "{refused:?}"
    );
    assert!(provider.requests().is_empty());
}

#[test]
fn the_same_provider_is_reached_once_its_certificate_is_a_trusted_root() {
    let provider = FakeProvider::start(vec![openai::answer(&["over ", "TLS"])]);
    let front = TlsFront::start(upstream_addr(&provider));
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&front.url);
    command.env("SSL_CERT_FILE", write_cert(sandbox.dir.path()));
    stream_json(&mut command).arg("hi");
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.text(), "over TLS");
    assert!(front.refused().is_empty(), "{:?}", front.refused());
    assert_eq!(provider.requests().len(), 1);
}
