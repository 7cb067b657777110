//! Which hosts confined commands may reach. They have a network namespace of their own
//! (`netns.rs`) whose only way out is Splice's proxy (`net_proxy`), and the proxy asks this
//! module about every host: one in `sandbox.network.allowedDomains` (exact, or `*.example.com`
//! for every name below it), in a `WebFetch(domain:…)` allow rule, in the package registries'
//! preset (`sandbox.network.allowPackageRegistries`), or granted in this session is let
//! through; any other is refused, and the run says so once per host in a `network_blocked`
//! warning (or, in the terminal UI, the person is asked). An allowed host that resolves to a
//! loopback, private or link-local address is refused too unless
//! `sandbox.network.allowLocalAddresses` is set, so no name can be pointed at your machine or
//! your network.

use std::collections::HashSet;
use std::net::IpAddr;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use crate::bus::{AlwaysScope, Answer, Bus, ConfigSave, PermissionQuestion, Preview};
use crate::config::ConfigFile;
use crate::protocol::events::SideEffect;
use crate::protocol::{Event, WarningCode};

/// The package registries' hosts the preset allows: what `cargo`, `npm`, `pip` and `apt`
/// download from by default.
pub const PACKAGE_REGISTRIES: [&str; 9] = [
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    "registry.npmjs.org",
    "pypi.org",
    "files.pythonhosted.org",
    "deb.debian.org",
    "security.debian.org",
    "static.rust-lang.org",
];

/// The config keys named in refusals.
pub const DOMAINS_KEY: &str = "sandbox.network.allowedDomains";
pub const LOCAL_KEY: &str = "sandbox.network.allowLocalAddresses";

/// What the person allowed (the config file, read once per process).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetworkPolicy {
    /// Lowercase, without a trailing dot; `*.x` for every name below `x`.
    pub domains: Vec<String>,
    pub registries: bool,
    pub local: bool,
}

impl NetworkPolicy {
    /// The config file's `sandbox.network` settings and its `WebFetch(domain:…)` allow rules,
    /// with those among `extra_allow` (the `--allow` flags).
    pub fn from_config(config: &ConfigFile, extra_allow: &[String]) -> NetworkPolicy {
        let network = &config.sandbox.network;
        let mut domains: Vec<String> = network
            .allowed_domains
            .iter()
            .map(|d| normalize(d))
            .collect();
        domains.extend(
            config
                .allow
                .iter()
                .chain(extra_allow)
                .filter_map(|rule| web_fetch_domain(rule))
                .map(|d| normalize(&d)),
        );
        domains.retain(|d| !d.is_empty());
        NetworkPolicy {
            domains,
            registries: network.allow_package_registries,
            local: network.allow_local_addresses,
        }
    }

    /// Whether `host` (a name or an IP literal) is one the person allowed.
    pub fn allows_host(&self, host: &str) -> bool {
        let host = normalize(host);
        self.domains.iter().any(|d| matches(d, &host))
            || (self.registries && PACKAGE_REGISTRIES.contains(&host.as_str()))
    }
}

/// The domain of Claude Code's `WebFetch(domain:example.com)` rule, if `rule` is one.
pub fn web_fetch_domain(rule: &str) -> Option<String> {
    let inner = rule.trim().strip_prefix("WebFetch(")?.strip_suffix(')')?;
    let domain = inner.trim().strip_prefix("domain:")?.trim();
    (!domain.is_empty()).then(|| domain.to_string())
}

fn normalize(host: &str) -> String {
    let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
    // An IPv6 literal may come bracketed (`[::1]`), as in a URL.
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .map(str::to_string)
        .unwrap_or(host)
}

fn matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(parent) => host
            .strip_suffix(parent)
            .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.')),
        None => pattern == host,
    }
}

/// An address on this machine or a private network: loopback, private, link-local,
/// carrier-grade NAT, unspecified, multicast and broadcast, unique-local IPv6, and IPv4
/// addresses mapped into IPv6.
pub fn is_local(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_local(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

#[derive(Default)]
struct State {
    policy: NetworkPolicy,
    /// Hosts granted, and refused, for the session in the terminal UI's prompt.
    granted: HashSet<String>,
    denied: HashSet<String>,
    /// The run whose warnings refusals become, and the hosts it has been told about.
    bus: Option<Bus>,
    /// Which `report_to` set `bus`, so only its own guard puts the one before back.
    generation: u64,
    next_generation: u64,
    reported: HashSet<String>,
    /// The front end asks about blocked hosts (the terminal UI).
    ask: bool,
}

fn state() -> &'static Mutex<State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE.get_or_init(Mutex::default)
}

/// Record what the person allowed (once per process, before commands run).
pub fn set_policy(policy: NetworkPolicy) {
    if let Ok(mut state) = state().lock() {
        state.policy = policy;
    }
}

/// The policy in force.
pub fn policy() -> NetworkPolicy {
    state().lock().map(|s| s.policy.clone()).unwrap_or_default()
}

/// The run that refusals are reported to from now on (each run anew: once per host per run),
/// until the guard returned is dropped, which gives them back to the run before it (a
/// design-plan task's run inside its plan's): the bus is not kept past its run, whose front
/// end waits for every handle on its events to go before it ends.
#[must_use = "the run is reported to only while the guard lives"]
pub fn report_to(bus: &Bus) -> Reporting {
    let mut guard = Reporting {
        generation: 0,
        previous: None,
    };
    if let Ok(mut state) = state().lock() {
        guard.previous = Some((state.generation, state.bus.take()));
        state.next_generation += 1;
        state.generation = state.next_generation;
        guard.generation = state.generation;
        state.bus = Some(bus.clone());
        state.reported.clear();
    }
    guard
}

/// Ends a run's reporting when dropped (see `report_to`).
pub struct Reporting {
    generation: u64,
    previous: Option<(u64, Option<Bus>)>,
}

impl Drop for Reporting {
    fn drop(&mut self) {
        if let Ok(mut state) = state().lock()
            && state.generation == self.generation
        {
            let (generation, bus) = self.previous.take().unwrap_or_default();
            state.generation = generation;
            state.bus = bus;
        }
    }
}

/// Ask the person about blocked hosts, through the run's prompt (the terminal UI does).
pub fn ask_about_blocked_hosts() {
    if let Ok(mut state) = state().lock() {
        state.ask = true;
    }
}

/// Whether the host passes: allowed by the policy or granted in this session.
pub fn allowed(host: &str) -> bool {
    let host = normalize(host);
    state()
        .lock()
        .is_ok_and(|s| s.policy.allows_host(&host) || s.granted.contains(&host))
}

/// Whether allowed hosts may resolve to local addresses.
pub fn local_allowed() -> bool {
    state().lock().is_ok_and(|s| s.policy.local)
}

/// A host not allowed: ask the person when someone can be asked (the proxy holds the
/// connection meanwhile), else refuse and report it. True when the connection may go on.
pub async fn ask_or_refuse(host: &str) -> bool {
    let host = normalize(host);
    let bus = state()
        .lock()
        .ok()
        .filter(|s| s.ask && !s.denied.contains(&host))
        .and_then(|s| s.bus.clone())
        .filter(Bus::has_responder);
    let Some(bus) = bus else {
        refused(&host, &not_allowed(&host));
        return false;
    };
    let config = crate::layout::Layout::process()
        .config_file()
        .map(std::path::Path::to_path_buf);
    match bus.ask(question(&host, config.as_deref())).await {
        Some(Answer::AllowOnce) => true,
        // The session has saved the host for the next sessions (`AllowAndSave`).
        Some(Answer::AllowAlways | Answer::AllowAndSave) => {
            if let Ok(mut state) = state().lock() {
                state.granted.insert(host);
            }
            true
        }
        Some(Answer::DenyAlways) => {
            if let Ok(mut state) = state().lock() {
                state.denied.insert(host);
            }
            false
        }
        Some(Answer::Deny) | None => false,
    }
}

/// The prompt about a blocked host: "always" holds for the session, as for a tool's rule, or
/// is saved to the user's config file for every session (when there is one to write).
/// (`pub` for the terminal UI's snapshot of this prompt.)
pub fn question(host: &str, config: Option<&Path>) -> PermissionQuestion {
    let note = match config {
        Some(path) if crate::config::is_domain_pattern(host) => format!(
            "this session: {host} is allowed until Splice exits\nalways: {host} is added to \
             {DOMAINS_KEY} in {}, for every session",
            path.display()
        ),
        _ => format!(
            "this session: {host} is allowed until Splice exits; to allow it in every session, \
             add it to {DOMAINS_KEY} in the config file"
        ),
    };
    PermissionQuestion {
        id: format!("network:{host}"),
        token: String::new(),
        tool: "network".into(),
        side_effect: SideEffect::Network,
        risk: None,
        reason: format!("a confined command wants to reach {host}, which is not in {DOMAINS_KEY}"),
        rule: format!("WebFetch(domain:{host})"),
        previews: vec![Preview::Note(note)],
        // Offered only where the file would take the host (so it still loads).
        always: match config {
            Some(_) if crate::config::is_domain_pattern(host) => {
                AlwaysScope::SessionOrSaved(ConfigSave::AllowedDomain(host.to_string()))
            }
            _ => AlwaysScope::Session,
        },
    }
}

/// Why `host` was refused: the settings that would allow it.
pub fn not_allowed(host: &str) -> String {
    format!(
        "a confined command's connection to {host} was refused: confined commands reach only \
         the hosts in {DOMAINS_KEY} (or a WebFetch(domain:{host}) allow rule); add {host} there \
         to allow it"
    )
}

/// Why an allowed host was refused for where it points.
pub fn local_refused(host: &str, address: IpAddr) -> String {
    format!(
        "a confined command's connection to {host} was refused: it resolves to {address}, a \
         loopback, private or link-local address, which confined commands reach only with \
         {LOCAL_KEY} set"
    )
}

/// Report a refusal as a `network_blocked` warning, once per host per run.
pub fn refused(host: &str, message: &str) {
    report(host, message);
}

fn report(host: &str, message: &str) {
    let bus = match state().lock() {
        Ok(mut state) => {
            if !state.reported.insert(host.to_string()) {
                return;
            }
            state.bus.clone()
        }
        Err(_) => return,
    };
    if let Some(bus) = bus {
        bus.emit(Event::warning(WarningCode::NetworkBlocked, message));
    } else {
        tracing::warn!("{message}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(domains: &[&str]) -> NetworkPolicy {
        NetworkPolicy {
            domains: domains.iter().map(|d| normalize(d)).collect(),
            ..NetworkPolicy::default()
        }
    }

    #[test]
    fn hosts_match_exactly_or_below_a_wildcard() {
        let p = policy(&["Example.com.", "*.github.com", "[::1]"]);
        assert!(p.allows_host("example.com"));
        assert!(p.allows_host("EXAMPLE.COM."));
        assert!(!p.allows_host("www.example.com"));
        assert!(!p.allows_host("example.com.evil.net"));
        assert!(p.allows_host("api.github.com"));
        assert!(p.allows_host("a.b.github.com"));
        assert!(!p.allows_host("github.com"));
        assert!(!p.allows_host("evilgithub.com"));
        assert!(p.allows_host("::1"));
        assert!(!p.allows_host("crates.io"));
        let registries = NetworkPolicy {
            registries: true,
            ..NetworkPolicy::default()
        };
        assert!(registries.allows_host("index.crates.io"));
        assert!(!registries.allows_host("evil.crates.io"));
    }

    #[test]
    fn web_fetch_rules_name_domains() {
        assert_eq!(
            web_fetch_domain("WebFetch(domain:docs.rs)").as_deref(),
            Some("docs.rs")
        );
        assert_eq!(web_fetch_domain("WebFetch"), None);
        assert_eq!(web_fetch_domain("run_command(curl x)"), None);
        let config = ConfigFile {
            allow: vec!["WebFetch(domain:*.docs.rs)".into()],
            ..ConfigFile::default()
        };
        let p = NetworkPolicy::from_config(&config, &["WebFetch(domain:x.org)".into()]);
        assert!(p.allows_host("a.docs.rs") && p.allows_host("x.org"));
    }

    /// The terminal UI's prompt: "always" grants the host for the session, "deny always"
    /// stops asking; with nobody to ask, the host is refused.
    #[tokio::test]
    async fn a_blocked_host_is_asked_about_where_someone_can_answer() {
        let (asks, mut questions) = tokio::sync::mpsc::unbounded_channel();
        let bus = Bus::with_responder("run_t", vec![], asks);
        let _reporting = report_to(&bus);
        assert!(!ask_or_refuse("asked.example").await, "nobody to ask yet");
        ask_about_blocked_hosts();
        let answers = tokio::spawn(async move {
            let mut seen = Vec::new();
            for answer in [Answer::AllowAlways, Answer::DenyAlways] {
                let Some(ask) = questions.recv().await else {
                    break;
                };
                seen.push((ask.question.tool.clone(), ask.question.rule.clone()));
                let _ = ask.reply.send(answer);
            }
            seen
        });
        assert!(ask_or_refuse("asked.example").await);
        assert!(allowed("asked.example"));
        assert!(!ask_or_refuse("refused.example").await);
        assert!(!ask_or_refuse("refused.example").await, "asked again");
        let seen = answers.await.expect("answers");
        assert_eq!(
            seen,
            [
                ("network".into(), "WebFetch(domain:asked.example)".into()),
                ("network".into(), "WebFetch(domain:refused.example)".into())
            ]
        );
    }

    /// "Always, saved" is offered where there is a config file and it would take the host.
    #[test]
    fn saving_is_offered_for_hosts_the_config_file_takes() {
        let file = Some(Path::new("/c/config.json"));
        assert_eq!(
            question("docs.rs", file).always,
            AlwaysScope::SessionOrSaved(ConfigSave::AllowedDomain("docs.rs".into()))
        );
        assert_eq!(question("docs.rs", None).always, AlwaysScope::Session);
        assert_eq!(question("a..b", file).always, AlwaysScope::Session);
    }

    #[test]
    fn local_addresses_are_recognized() {
        for local in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_local(local.parse().expect("parse")), "{local}");
        }
        for public in ["1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(!is_local(public.parse().expect("parse")), "{public}");
        }
    }
}
