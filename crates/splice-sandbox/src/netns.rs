//! A confined command's network: a namespace of its own, with only a loopback device, whose
//! one way out is a relay to Splice's proxy (`net_proxy`, which allows the hosts the person
//! allowed, `network.rs`).
//!
//! The command's first process (the supervisor's `--inner` stage, single-threaded, before it
//! confines itself) makes the namespace (inside a user namespace when not root), brings `lo`
//! up, binds `127.0.0.1:PORT` there and starts the relay with that socket: `__sandbox-exec
//! --relay`, which starts the relay proper and exits, so the relay is the supervisor's child
//! (it is the subreaper), not the command's, and the supervisor ends it with the command. The
//! relay is neither under the command's Landlock rules nor its seccomp filter (it must connect
//! to the proxy's Unix socket): it gives up its capabilities and file access instead, and
//! cannot be traced (not dumpable; Landlock refuses tracing a process outside the domain).
//! The command gets `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` (both cases) naming the relay.
//!
//! Anything else has nowhere to go: a connection to another address fails at once (no route;
//! on 127.0.0.0/8, nothing listens in this namespace), and so does DNS (no resolver answers).
//! Where the namespace cannot be made, the command is not run (fail closed).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use rustix::net::netlink::SocketAddrNetlink;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketType};
use rustix::thread::UnshareFlags;

use super::sandbox::SANDBOX_ARG;

/// Test hook: set (non-empty) to make Splice behave as where no network namespace can be made
/// (the package launcher reads the same one). It can only make Splice stricter.
pub const NO_NETNS_ENV: &str = "SPLICE_TEST_NO_NETNS";

/// The supervisor's flag naming the proxy's socket.
pub const PROXY_ARG: &str = "--net-proxy";
/// The relay's stages.
pub const RELAY_ARG: &str = "--relay";
pub const RELAY_SERVE_ARG: &str = "--relay-serve";

/// The variables that point HTTP clients at the relay, and those that would bypass it.
const PROXY_VARS: [&str; 6] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];
const BYPASS_VARS: [&str; 2] = ["NO_PROXY", "no_proxy"];

/// Give this process a network namespace with only `lo`, and, with the proxy's socket,
/// start the relay on it. Returns the variables the command is to get (set) and lose (unset).
pub fn isolate(proxy: Option<&Path>) -> Result<Vec<(&'static str, Option<String>)>, String> {
    if std::env::var_os(NO_NETNS_ENV).is_some_and(|v| !v.is_empty()) {
        return Err(format!(
            "no network namespace can be made ({NO_NETNS_ENV} is set)"
        ));
    }
    enter().map_err(|why| {
        format!("{why}; confined commands get no network but through Splice's proxy")
    })?;
    loopback_up().map_err(|e| format!("cannot bring up the loopback device: {e}"))?;
    let mut env: Vec<(&'static str, Option<String>)> =
        BYPASS_VARS.iter().map(|name| (*name, None)).collect();
    let Some(proxy) = proxy else {
        // No proxy: no way out at all, and no variable pointing at one.
        env.extend(PROXY_VARS.iter().map(|name| (*name, None)));
        return Ok(env);
    };
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .map_err(|e| format!("cannot listen on the namespace's loopback: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("cannot read the relay's port: {e}"))?
        .port();
    start_relay(listener, proxy)?;
    let url = format!("http://127.0.0.1:{port}");
    env.extend(PROXY_VARS.iter().map(|name| (*name, Some(url.clone()))));
    Ok(env)
}

/// A network namespace: alone as root, else inside a user namespace mapping our own ids.
#[allow(deprecated)] // `unshare` is deprecated for CLONE_FILES, which is not used here.
fn enter() -> Result<(), String> {
    let (uid, gid) = (
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw(),
    );
    if uid == 0 && rustix::thread::unshare(UnshareFlags::NEWNET).is_ok() {
        return Ok(());
    }
    rustix::thread::unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNET)
        .map_err(|e| format!("cannot make a network namespace: {e}"))?;
    std::fs::write("/proc/self/setgroups", "deny")
        .and_then(|()| std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")))
        .and_then(|()| std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")))
        .map_err(|e| format!("cannot map ids in the user namespace: {e}"))
}

/// `ip link set lo up`, as one rtnetlink request (`RTM_NEWLINK` setting `IFF_UP`).
fn loopback_up() -> std::io::Result<()> {
    const RTM_NEWLINK: u16 = 16;
    const NLM_F_REQUEST: u16 = 1;
    const NLM_F_ACK: u16 = 4;
    const NLMSG_ERROR: u16 = 2;
    const IFF_UP: u32 = 1;
    let socket = rustix::net::socket(AddressFamily::NETLINK, SocketType::RAW, None)?;
    let index = rustix::net::netdevice::name_to_index(&socket, "lo")?;
    let index = i32::try_from(index).map_err(|_| std::io::ErrorKind::InvalidData)?;
    // nlmsghdr (16 bytes) then ifinfomsg (16 bytes), in the machine's byte order.
    let mut message = Vec::with_capacity(32);
    message.extend_from_slice(&32u32.to_ne_bytes());
    message.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
    message.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    message.extend_from_slice(&0u32.to_ne_bytes()); // port: the kernel's
    message.extend_from_slice(&[0, 0]); // family AF_UNSPEC, padding
    message.extend_from_slice(&0u16.to_ne_bytes()); // device type
    message.extend_from_slice(&index.to_ne_bytes());
    message.extend_from_slice(&IFF_UP.to_ne_bytes()); // flags
    message.extend_from_slice(&IFF_UP.to_ne_bytes()); // change mask
    let kernel = SocketAddrNetlink::new(0, 0);
    rustix::net::sendto(&socket, &message, SendFlags::empty(), &kernel)?;
    let mut reply = [0u8; 256];
    let (read, _) = rustix::net::recv(&socket, &mut reply, RecvFlags::empty())?;
    // The acknowledgement: an NLMSG_ERROR whose error number is 0.
    let kind = reply.get(4..6).map(|b| u16::from_ne_bytes([b[0], b[1]]));
    let error = reply
        .get(16..20)
        .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    match (read >= 20, kind, error) {
        (true, Some(NLMSG_ERROR), Some(0)) => Ok(()),
        (true, Some(NLMSG_ERROR), Some(errno)) => {
            Err(std::io::Error::from_raw_os_error(errno.saturating_neg()))
        }
        _ => Err(std::io::ErrorKind::InvalidData.into()),
    }
}

/// Start the relay (see the module) and wait for its first stage to hand it to the supervisor.
fn start_relay(listener: TcpListener, proxy: &Path) -> Result<(), String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find the splice binary: {e}"))?;
    let supervisor = rustix::process::getppid()
        .map(|p| p.as_raw_nonzero().get())
        .unwrap_or(0);
    let status = std::process::Command::new(me)
        .args([SANDBOX_ARG, RELAY_ARG, "--parent"])
        .arg(supervisor.to_string())
        .arg(PROXY_ARG)
        .arg(proxy)
        .stdin(OwnedFd::from(listener))
        // Not the command's pipes: Splice reads them until every holder has closed them.
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot start the network relay: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the network relay did not start ({status})"))
    }
}

/// The relay's entry points (`--relay`, `--relay-serve`); the exit code.
pub fn relay_main(args: &[OsString]) -> i32 {
    let serve = args.iter().any(|a| a == RELAY_SERVE_ARG);
    let (mut proxy, mut parent, mut via) = (None, None, None);
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == PROXY_ARG {
            proxy = rest.next().map(PathBuf::from);
        } else if arg == "--parent" {
            parent = rest.next().and_then(|p| p.to_str()?.parse::<i32>().ok());
        } else if arg == "--via" {
            via = rest.next().and_then(|p| p.to_str()?.parse::<i32>().ok());
        }
    }
    let (Some(proxy), Some(parent)) = (proxy, parent) else {
        eprintln!("splice relay: no proxy or parent given");
        return 2;
    };
    if !serve {
        // The first stage: start the relay proper and leave it to the subreaper above.
        let started = std::env::current_exe().and_then(|me| {
            std::process::Command::new(me)
                .args([SANDBOX_ARG, RELAY_ARG, RELAY_SERVE_ARG, "--parent"])
                .arg(parent.to_string())
                .arg("--via")
                .arg(rustix::process::getpid().as_raw_nonzero().get().to_string())
                .arg(PROXY_ARG)
                .arg(&proxy)
                .spawn()
        });
        return match started {
            Ok(_) => 0,
            Err(e) => {
                eprintln!("splice relay: cannot start: {e}");
                1
            }
        };
    }
    let listener = match std::io::stdin().as_fd().try_clone_to_owned() {
        Ok(fd) => TcpListener::from(fd),
        Err(e) => {
            eprintln!("splice relay: no listening socket: {e}");
            return 1;
        }
    };
    if let Err(why) = harden() {
        eprintln!("splice relay: {why}");
        return 1;
    }
    watch_parent(parent, via.unwrap_or(0));
    for client in listener.incoming() {
        let Ok(client) = client else { continue };
        let proxy = proxy.clone();
        std::thread::spawn(move || relay(client, &proxy));
    }
    0
}

/// No capabilities, no file access (connecting to a Unix socket is not a file access to
/// Landlock), not dumpable.
fn harden() -> Result<(), String> {
    use landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    super::sandbox::drop_capabilities().map_err(|e| e.to_string())?;
    Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI::V5))
        .and_then(|r| r.create())
        .and_then(|r| r.restrict_self())
        .map(drop)
        .map_err(|e| format!("cannot give up file access: {e}"))
}

/// End with the supervisor: once it is the parent (after the first stage, `via`, exits), ask
/// for SIGKILL when it dies; any other parent means it is gone already.
fn watch_parent(supervisor: i32, via: i32) {
    let parent = || rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
    std::thread::spawn(move || {
        loop {
            let now = parent();
            if now == supervisor {
                let _ = rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ));
                if parent() == supervisor {
                    return;
                }
            } else if now != via {
                std::process::exit(0);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    });
}

/// Carry one connection to the proxy and back.
fn relay(client: TcpStream, proxy: &Path) {
    let Ok(upstream) = UnixStream::connect(proxy) else {
        let _ = (&client).write_all(
            b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        );
        return;
    };
    let (Ok(client_back), Ok(upstream_back)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || {
        copy(&client, &upstream);
        let _ = upstream.shutdown(Shutdown::Write);
    });
    copy(&upstream_back, &client_back);
    let _ = client_back.shutdown(Shutdown::Write);
    let _ = up.join();
}

fn copy(mut from: impl Read, mut to: impl Write) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    return;
                }
            }
        }
    }
}
