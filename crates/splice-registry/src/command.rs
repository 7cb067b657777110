//! `splice registry serve|user add|approve|deny` (run by `splice-registry`): what each does.

use std::io::{BufRead, IsTerminal, Write};
use std::net::SocketAddr;
use std::sync::Arc;

use crate::accounts::{NO_PASSWORD, hash_password};
use crate::db::{self, Db};
use crate::device::{DeviceSettings, normalize_user_code};
use crate::s3::{S3BlobStore, parse_url};
use crate::server::{AppState, router};
use crate::storage::{BlobStore, FsBlobStore};
use crate::time::now_ms;
use splice_core::cli::registry::{RegistryAction, RegistryArgs, Store, UserAction};
use splice_core::exit::Exit;
use splice_core::packages::names::name_problem;

pub async fn run(args: &RegistryArgs) -> Exit {
    let result = match &args.action {
        RegistryAction::Serve {
            store,
            addr,
            blobs,
            device_interval,
            device_expiry,
        } => {
            let device = DeviceSettings {
                interval_secs: *device_interval,
                expiry_secs: *device_expiry,
            };
            serve(store, blobs.as_deref(), *addr, device).await
        }
        RegistryAction::User {
            action:
                UserAction::Add {
                    name,
                    namespace,
                    password_stdin,
                    no_password,
                    store,
                },
        } => {
            // No terminal to prompt on and no password piped: a user without a web password.
            let passwordless =
                !*password_stdin && (*no_password || !std::io::stdin().is_terminal());
            user_add(store, name, namespace, passwordless).await
        }
        RegistryAction::Approve {
            user_code,
            user,
            store,
        } => decide(store, user_code, Some(user)).await,
        RegistryAction::Deny { user_code, store } => decide(store, user_code, None).await,
    };
    match result {
        Ok(()) => Exit::Success,
        Err((code, message)) => {
            eprintln!("splice registry: {message}");
            code
        }
    }
}

type Failure = (Exit, String);

fn failed(e: impl std::fmt::Display) -> Failure {
    (Exit::Failed, e.to_string())
}

async fn open(store: &Store) -> Result<Db, Failure> {
    std::fs::create_dir_all(&store.data)
        .map_err(|e| failed(format!("{}: {e}", store.data.display())))?;
    let url = store
        .database
        .clone()
        .unwrap_or_else(|| db::default_url(&store.data));
    Db::open(&url).await.map_err(failed)
}

/// The archive store `--blobs` names (checked now: a bad URL is a usage error, a store that
/// cannot be listed a failure), else the directory under `--data`.
async fn blob_store(store: &Store, blobs: Option<&str>) -> Result<Arc<dyn BlobStore>, Failure> {
    let Some(url) = blobs else {
        return Ok(Arc::new(FsBlobStore::new(&store.data).map_err(failed)?));
    };
    let s3 = S3BlobStore::new(url).map_err(|e| (Exit::Usage, e.to_string()))?;
    s3.check().await.map_err(|e| {
        // One line: the store's reply (an XML error document) included.
        let e = e.to_string().replace(['\r', '\n'], " ");
        failed(format!(
            "cannot use the archive store ({e}): check that the bucket exists and that \
             AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are right"
        ))
    })?;
    Ok(Arc::new(s3))
}

async fn serve(
    store: &Store,
    blobs: Option<&str>,
    addr: SocketAddr,
    device: DeviceSettings,
) -> Result<(), Failure> {
    // A malformed --blobs is found before anything is opened.
    if let Some(url) = blobs {
        parse_url(url).map_err(|e| (Exit::Usage, e.to_string()))?;
    }
    let db = open(store).await?;
    let blobs = blob_store(store, blobs).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| failed(format!("cannot listen on {addr}: {e}")))?;
    let local = listener.local_addr().map_err(failed)?;
    let base = format!("http://{local}");
    eprintln!(
        "splice registry: index on {}, archives in {}",
        db.kind,
        blobs.describe()
    );
    let state = AppState {
        db,
        blobs,
        base: base.clone(),
        device,
        scratch: store.data.join("tmp"),
        password_checks: Arc::new(tokio::sync::Semaphore::new(crate::server::PASSWORD_CHECKS)),
        sign_ins: Arc::default(),
    };
    let stop = stop_signal();
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{base}")
            .and_then(|()| out.flush())
            .map_err(failed)?;
    }
    axum::serve(listener, router(state))
        .with_graceful_shutdown(stop)
        .await
        .map_err(failed)
}

/// SIGTERM or SIGINT: stop taking connections, finish the requests in flight, exit 0. The
/// handlers are installed when this is called, not when it is first polled, so a signal sent
/// as soon as the URL is printed stops the server cleanly too.
fn stop_signal() -> impl Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let handlers = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        match handlers {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            // Without handlers the default actions stay: the signals still end the process.
            _ => std::future::pending::<()>().await,
        }
    }
}

async fn user_add(
    store: &Store,
    name: &str,
    namespace: &str,
    passwordless: bool,
) -> Result<(), Failure> {
    for (what, value) in [("user name", name), ("namespace", namespace)] {
        if let Some(why) = name_problem(value) {
            return Err((Exit::Usage, format!("the {what} `{value}` {why}")));
        }
    }
    let db = open(store).await?;
    let exists = db.user_exists(name).await.map_err(failed)?;
    let hash = if exists {
        None
    } else if passwordless {
        Some(NO_PASSWORD.to_string())
    } else {
        let password = read_password()?;
        if password.is_empty() {
            return Err((
                Exit::Usage,
                "the password is empty (for a user without one, pass --no-password)".to_string(),
            ));
        }
        let hash = tokio::task::spawn_blocking(move || hash_password(&password))
            .await
            .map_err(failed)?
            .map_err(failed)?;
        Some(hash)
    };
    db.add_user(name, hash.as_deref(), namespace, now_ms())
        .await
        .map_err(failed)?;
    eprintln!("splice registry: {name} owns the namespace {namespace}");
    if !exists && passwordless {
        eprintln!(
            "splice registry: {name} has no web password (the sign-in page refuses it): approve \
             its logins with `splice registry approve CODE --user {name}`"
        );
    }
    Ok(())
}

/// The first line of stdin; on a terminal, prompted for with echo off.
fn read_password() -> Result<String, Failure> {
    let stdin = std::io::stdin();
    let terminal = stdin.is_terminal();
    let saved = if terminal {
        eprint!("Password: ");
        no_echo(&stdin)
    } else {
        None
    };
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    if let Some(saved) = saved {
        let _ = rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &saved);
        eprintln!();
    }
    read.map_err(failed)?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

fn no_echo(stdin: &std::io::Stdin) -> Option<rustix::termios::Termios> {
    let saved = rustix::termios::tcgetattr(stdin).ok()?;
    let mut quiet = saved.clone();
    quiet.local_modes.remove(rustix::termios::LocalModes::ECHO);
    rustix::termios::tcsetattr(stdin, rustix::termios::OptionalActions::Now, &quiet).ok()?;
    Some(saved)
}

async fn decide(store: &Store, user_code: &str, user: Option<&String>) -> Result<(), Failure> {
    let db = open(store).await?;
    if let Some(user) = user
        && !db.user_exists(user).await.map_err(failed)?
    {
        return Err((
            Exit::Usage,
            format!("no user {user}: add it with `splice registry user add {user} --namespace NS`"),
        ));
    }
    let code = normalize_user_code(user_code);
    if !db
        .decide_device(&code, user.map(String::as_str), now_ms())
        .await
        .map_err(failed)?
    {
        return Err((
            Exit::Failed,
            format!("no pending login has the code {code} (expired, already handled, or mistyped)"),
        ));
    }
    match user {
        Some(user) => eprintln!("splice registry: {code} approved as {user}"),
        None => eprintln!("splice registry: {code} denied"),
    }
    Ok(())
}
