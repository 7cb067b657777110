//! The head of a request to the proxy: `CONNECT host:port` (a tunnel, for HTTPS; nothing is
//! decrypted) or a plain HTTP request with an absolute URI (`GET http://host/path`).

/// Where a request goes, and what to send there first.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// `None` for a tunnel; else the request as the server is to get it (origin-form).
    pub forward: Option<Vec<u8>>,
}

/// Why a request head is refused (answered 400).
pub type BadRequest = &'static str;

/// The end of a head, where it is complete.
pub fn head_end(buffer: &[u8]) -> Option<usize> {
    buffer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| at + 4)
}

/// Read a complete head (up to and including its blank line).
pub fn parse(head: &[u8]) -> Result<Target, BadRequest> {
    let text = std::str::from_utf8(head).map_err(|_| "the request head is not text")?;
    let mut lines = text.split("\r\n");
    let first = lines.next().ok_or("empty request")?;
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("malformed request line");
    };
    if !version.starts_with("HTTP/1.") {
        return Err("only HTTP/1 requests are proxied");
    }
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = host_port(target, None)?;
        return Ok(Target {
            host,
            port,
            forward: None,
        });
    }
    let rest = target
        .strip_prefix("http://")
        .ok_or("a plain request must name an http:// URL (use CONNECT for https)")?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    if authority.contains('@') {
        return Err("credentials in the URL are not proxied");
    }
    let (host, port) = host_port(authority, Some(80))?;
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    let mut forward = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim();
        // The proxy's own headers stay here; the server closes after one response, so a
        // second request on this connection cannot go to it under another host's name.
        if name.len() >= 6 && name[..6].eq_ignore_ascii_case("proxy-")
            || name.eq_ignore_ascii_case("connection")
            || name.eq_ignore_ascii_case("keep-alive")
        {
            continue;
        }
        forward.push_str(line);
        forward.push_str("\r\n");
    }
    forward.push_str("Connection: close\r\n\r\n");
    Ok(Target {
        host,
        port,
        forward: Some(forward.into_bytes()),
    })
}

/// `host:port`, `[v6]:port`, or a host alone with a default port.
fn host_port(authority: &str, default: Option<u16>) -> Result<(String, u16), BadRequest> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("malformed IPv6 address")?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(port) => port.parse().map_err(|_| "malformed port")?,
        None => default.ok_or("no port")?,
    };
    let valid = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._:".contains(c));
    if !valid || port == 0 {
        return Err("malformed host");
    }
    Ok((host.to_ascii_lowercase(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tunnels_and_plain_requests() {
        let tunnel = parse(b"CONNECT Example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n");
        assert_eq!(
            tunnel,
            Ok(Target {
                host: "example.com".into(),
                port: 443,
                forward: None
            })
        );
        let v6 = parse(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").map(|t| (t.host, t.port));
        assert_eq!(v6, Ok(("::1".into(), 8443)));
        let plain = parse(
            b"GET http://localhost:8080/a?b HTTP/1.1\r\nHost: localhost:8080\r\n\
              Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n",
        )
        .expect("parse");
        assert_eq!((plain.host.as_str(), plain.port), ("localhost", 8080));
        assert_eq!(
            String::from_utf8(plain.forward.unwrap_or_default()).unwrap_or_default(),
            "GET /a?b HTTP/1.1\r\nHost: localhost:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let bare = parse(b"GET http://h HTTP/1.0\r\n\r\n").expect("parse");
        assert_eq!(bare.port, 80);
    }

    #[test]
    fn refuses_what_it_cannot_judge() {
        for head in [
            &b"GET /relative HTTP/1.1\r\n\r\n"[..],
            b"GET https://x/ HTTP/1.1\r\n\r\n",
            b"GET http://u:p@x/ HTTP/1.1\r\n\r\n",
            b"CONNECT x HTTP/1.1\r\n\r\n",
            b"CONNECT x:0 HTTP/1.1\r\n\r\n",
            b"CONNECT x y:1 HTTP/1.1\r\n\r\n",
            b"CONNECT a/b:1 HTTP/1.1\r\n\r\n",
            b"CONNECT x:1 HTTP/2\r\n\r\n",
        ] {
            assert!(parse(head).is_err(), "{}", String::from_utf8_lossy(head));
        }
    }
}
