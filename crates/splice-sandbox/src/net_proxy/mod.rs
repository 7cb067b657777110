//! The proxy that is confined commands' only way to the network (see
//! `netns.rs`): one per Splice process, started with the first confined command,
//! on a thread of its own, listening on a Unix socket in a directory of Splice's data
//! directory (which confined commands cannot write, and whose sockets they cannot open: the
//! seccomp filter refuses them Unix sockets; the relay in their namespace can).
//!
//! It takes `CONNECT host:port` (tunnelled as is: TLS is not looked into) and plain HTTP
//! requests with an absolute URL; the host must be one the [`Gate`] admits (the core's
//! network policy), and resolve to no address the gate refuses (one on this machine or a
//! private network, unless local addresses are allowed). It connects to the address it checked, not to a name
//! resolved again. Anything else gets `403` with the reason, and the run a `network_blocked`
//! warning.

mod request;

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

/// The longest request head read.
const MAX_HEAD: usize = 64 * 1024;
/// How long a client has to send its head, and a server to accept the connection.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// What decides which hosts a confined command may reach: the core's network policy and
/// the session's grants. Each refusal is the gate's to report.
pub trait Gate: Send + Sync + 'static {
    /// Whether a connection to `host` may go on (allowed, or granted when the person was
    /// asked; the proxy holds the connection meanwhile); `Err` is why not.
    fn admit<'a>(&'a self, host: &'a str) -> BoxFuture<'a, Result<(), String>>;
    /// Why `host` may not be reached at `address`, where it resolved, if it may not.
    fn refuse_address(&self, host: &str, address: IpAddr) -> Option<String>;
}

/// A future the gate answers with.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Start the proxy on a thread of its own, listening on a socket in a directory of this
/// process's own in `run_dir` (in Splice's data directory, which confined commands cannot
/// write); `gate` decides every connection. The answer is the socket's path, or why it could
/// not be started.
pub fn start(run_dir: &Path, gate: Arc<dyn Gate>) -> Result<PathBuf, String> {
    let dir = runtime_dir(run_dir)?;
    let path = dir.join("proxy.sock");
    let _ = std::fs::remove_file(&path);
    let listener = std::os::unix::net::UnixListener::bind(&path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("cannot set up the proxy's socket: {e}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the proxy: {e}"))?;
    std::thread::Builder::new()
        .name("splice-net-proxy".into())
        .spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = UnixListener::from_std(listener) else {
                    return;
                };
                loop {
                    if let Ok((client, _)) = listener.accept().await {
                        tokio::spawn(serve(client, gate.clone()));
                    }
                }
            });
        })
        .map_err(|e| format!("cannot start the proxy: {e}"))?;
    Ok(path)
}

/// A directory of this process's own in `run`, owner-only; the socket path must fit a Unix
/// socket address (108 bytes), else the temporary directory is used.
fn runtime_dir(run: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let name = format!("net-{}-{}", std::process::id(), random_suffix());
    let data = run.join(&name);
    let dir = if data.as_os_str().len() + "/proxy.sock".len() < 100 {
        data
    } else {
        std::env::temp_dir().join(format!("splice-{name}"))
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .and_then(|()| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)))
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    if let Some(run) = dir.parent() {
        remove_stale(run);
    }
    Ok(dir)
}

/// Six characters from the system's random source, so two processes with the same id (in
/// different PID namespaces) do not share a directory.
fn random_suffix() -> String {
    const ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; 6];
    let _ = rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty());
    bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

/// Directories earlier Splice processes left behind (killed, they cannot clean up): those
/// whose process is gone.
fn remove_stale(run: &Path) {
    let Ok(entries) = std::fs::read_dir(run) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix("net-"))
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

async fn serve(mut client: UnixStream, gate: Arc<dyn Gate>) {
    let Ok(Ok((head, rest))) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await
    else {
        return;
    };
    let target = match request::parse(&head) {
        Ok(target) => target,
        Err(why) => return answer(&mut client, "400 Bad Request", why).await,
    };
    let host = target.host.clone();
    if let Err(why) = gate.admit(&host).await {
        return answer(&mut client, "403 Forbidden", &why).await;
    }
    let addresses: Vec<SocketAddr> =
        match tokio::net::lookup_host((host.as_str(), target.port)).await {
            Ok(found) => found.collect(),
            Err(e) => {
                let why = format!("cannot resolve {host}: {e}");
                return answer(&mut client, "502 Bad Gateway", &why).await;
            }
        };
    if let Some(why) = addresses
        .iter()
        .find_map(|a| gate.refuse_address(&host, a.ip()))
    {
        return answer(&mut client, "403 Forbidden", &why).await;
    }
    let Some(mut server) = connect(&addresses).await else {
        let why = format!("cannot connect to {host}:{}", target.port);
        return answer(&mut client, "502 Bad Gateway", &why).await;
    };
    let first = match target.forward {
        Some(mut forward) => {
            forward.extend_from_slice(&rest);
            forward
        }
        None => {
            if client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
            rest
        }
    };
    if server.write_all(&first).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
}

/// The head and whatever came after it in the same reads.
async fn read_head(client: &mut UnixStream) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let read = client.read(&mut chunk).await?;
        if read == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(end) = request::head_end(&buffer) {
            let rest = buffer.split_off(end);
            return Ok((buffer, rest));
        }
        if buffer.len() > MAX_HEAD {
            return Err(io::ErrorKind::InvalidData.into());
        }
    }
}

async fn connect(addresses: &[SocketAddr]) -> Option<TcpStream> {
    for address in addresses {
        if let Ok(Ok(stream)) =
            tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await
        {
            return Some(stream);
        }
    }
    None
}

async fn answer(client: &mut UnixStream, status: &str, why: &str) {
    let body = format!("splice: {why}\n");
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(text.as_bytes()).await;
    let _ = client.shutdown().await;
}
