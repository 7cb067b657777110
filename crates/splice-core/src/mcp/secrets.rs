//! The secrets a server's own config holds (values of its `env` with secret names, its header
//! values, its URL's user info and query values), kept out of what Splice passes on from it. They are not in Splice's environment,
//! so the output redaction would not know them, and a server may echo them (an error quoting
//! a token, a debug line on stderr).

use crate::sanitize::redact::{Redactor, is_secret_name};

use super::config::ServerConfig;

/// Headers whose values are not secrets (a result quoting `application/json` stays whole);
/// every other header's value is taken for one.
const PLAIN_HEADERS: [&str; 5] = [
    "Accept",
    "Accept-Language",
    "Content-Type",
    "User-Agent",
    "MCP-Protocol-Version",
];

/// A redactor for this server's configured secrets (and the usual token shapes).
pub fn redactor(config: &ServerConfig) -> Redactor {
    let mut secrets: Vec<(String, String)> = Vec::new();
    match config {
        ServerConfig::Stdio { env, .. } => secrets.extend(
            env.iter()
                .filter(|(name, _)| is_secret_name(name))
                .map(|(name, value)| (name.clone(), value.clone())),
        ),
        ServerConfig::Http { url, headers } => {
            // The URL's user info and query values may be credentials too.
            if let Ok(url) = reqwest::Url::parse(url) {
                let user = [url.username(), url.password().unwrap_or("")];
                for value in user.into_iter().filter(|v| !v.is_empty()) {
                    secrets.push(("TOKEN".into(), value.to_string()));
                }
                for (_, value) in url.query_pairs() {
                    secrets.push(("TOKEN".into(), value.into_owned()));
                }
            }
            let secret = headers
                .iter()
                .filter(|(name, _)| !PLAIN_HEADERS.iter().any(|p| p.eq_ignore_ascii_case(name)));
            for (_, value) in secret {
                // Every header value may be a credential; `Bearer <token>` also as its token.
                secrets.push(("TOKEN".into(), value.trim().to_string()));
                if let Some(last) = value.split_whitespace().last() {
                    secrets.push(("TOKEN".into(), last.to_string()));
                }
            }
        }
    }
    Redactor::from_vars(secrets)
}

/// `text` without the server's secrets.
pub fn scrub(redactor: &Redactor, text: String) -> String {
    redactor.redact_str(&text).unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn secret_env_values_and_header_values_are_scrubbed() {
        let stdio = ServerConfig::Stdio {
            command: "x".into(),
            args: vec![],
            env: BTreeMap::from([
                ("GH_TOKEN".to_string(), "tok-12345678".to_string()),
                ("LOG_LEVEL".to_string(), "verbose-debug".to_string()),
            ]),
            env_passthrough: Vec::new(),
        };
        let r = redactor(&stdio);
        assert_eq!(
            scrub(&r, "a tok-12345678 at verbose-debug".into()),
            "a [REDACTED] at verbose-debug"
        );
        let http = ServerConfig::Http {
            url: "https://x.invalid".into(),
            headers: BTreeMap::from([
                (
                    "Authorization".to_string(),
                    "Bearer abcdefgh1234".to_string(),
                ),
                ("accept".to_string(), "application/json".to_string()),
            ]),
        };
        let r = redactor(&http);
        assert_eq!(
            scrub(&r, "bad token abcdefgh1234 in application/json".into()),
            "bad token [REDACTED] in application/json"
        );
        let in_url = ServerConfig::Http {
            url: "https://me:pass-word-99@x.invalid/mcp?key=query-key-77&n=1".into(),
            headers: BTreeMap::new(),
        };
        let r = redactor(&in_url);
        assert_eq!(
            scrub(&r, "pass-word-99 query-key-77 n=1".into()),
            "[REDACTED] [REDACTED] n=1"
        );
    }
}
