//! The proxy that is confined commands' only way to the network (see
//! `permissions/netns.rs`): one per Splice process, started with the first confined command,
//! on a thread of its own, listening on a Unix socket in a directory of Splice's data
//! directory (which confined commands cannot write, and whose sockets they cannot open: the
//! seccomp filter refuses them Unix sockets; the relay in their namespace can).
//!
//! It takes `CONNECT host:port` (tunnelled as is: TLS is not looked into) and plain HTTP
//! requests with an absolute URL; the host must be one the person allowed
//! (`permissions/network.rs`), and, unless local addresses are allowed, resolve to none on
//! this machine or a private network. It connects to the address it checked, not to a name
//! resolved again. Anything else gets `403` with the reason, and the run a `network_blocked`
//! warning.

mod request;

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

use crate::permissions::network;

/// The longest request head read.
const MAX_HEAD: usize = 64 * 1024;
/// How long a client has to send its head, and a server to accept the connection.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The proxy's socket, started on first use; `Err` says why it could not be.
pub fn socket() -> Result<&'static Path, &'static str> {
    static SOCKET: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    SOCKET
        .get_or_init(start)
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(String::as_str)
}

fn start() -> Result<PathBuf, String> {
    let dir = runtime_dir()?;
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
                        tokio::spawn(serve(client));
                    }
                }
            });
        })
        .map_err(|e| format!("cannot start the proxy: {e}"))?;
    Ok(path)
}

/// A directory of this process's own in the data directory, owner-only; the socket path must
/// fit a Unix socket address (108 bytes), else the temporary directory is used.
fn runtime_dir() -> Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let name = format!(
        "net-{}-{}",
        std::process::id(),
        crate::ids::random_suffix(6)
    );
    let data = crate::layout::Layout::process().runtime(&name);
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

async fn serve(mut client: UnixStream) {
    let Ok(Ok((head, rest))) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await
    else {
        return;
    };
    let target = match request::parse(&head) {
        Ok(target) => target,
        Err(why) => return answer(&mut client, "400 Bad Request", why).await,
    };
    let host = target.host.clone();
    if !network::allowed(&host) && !network::ask_or_refuse(&host).await {
        return answer(&mut client, "403 Forbidden", &network::not_allowed(&host)).await;
    }
    let addresses: Vec<SocketAddr> =
        match tokio::net::lookup_host((host.as_str(), target.port)).await {
            Ok(found) => found.collect(),
            Err(e) => {
                let why = format!("cannot resolve {host}: {e}");
                return answer(&mut client, "502 Bad Gateway", &why).await;
            }
        };
    if !network::local_allowed()
        && let Some(local) = addresses.iter().find(|a| network::is_local(a.ip()))
    {
        let why = network::local_refused(&host, local.ip());
        network::refused(&host, &why);
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
