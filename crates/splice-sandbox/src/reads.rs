//! What confined commands and package tools may not read, besides Splice's saved logins
//! (`hidden.rs`): every device but the few they may write (`sandbox::DEVICES`), so no terminal
//! (`/dev/pts/*`, `/dev/tty*`, `/dev/console`, `/dev/vcs*`: your keystrokes) and no disk (which
//! root reads whole without capabilities); and the well-known credential stores in HOME (ssh
//! private keys, cloud and registry logins, GnuPG's private keys, browsers' profiles), unless the
//! person allows a path (`sandbox.allowRead`). Landlock only grants, so each is carved out of
//! the read rules as `hidden.rs` does (a store that lies where the command may write is masked
//! in its mount namespace, `mask.rs`): what is created later beside a store, or in `/dev`, is
//! unreadable too (fail closed).

use std::path::{Path, PathBuf};

use crate::hidden::{self, HiddenError};

/// The supervisor's and the package launcher's flag naming a path the person lets them read.
pub const READ_ARG: &str = "--read";

/// Refused as a whole: the devices a command may use are granted by the rules for writing.
const DEVICES_DIR: &str = "/dev";

/// Credential stores, relative to HOME.
const HOME_STORES: [&str; 28] = [
    ".aws",
    ".azure",
    ".kube/config",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gnupg/private-keys-v1.d",
    ".gnupg/secring.gpg",
    ".password-store",
    ".local/share/keyrings",
    ".pgpass",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".mozilla",
    ".thunderbird",
    "snap/firefox",
    "snap/chromium",
    ".var/app/org.mozilla.firefox",
    ".var/app/com.google.Chrome",
    ".var/app/org.chromium.Chromium",
    ".var/app/com.brave.Browser",
    ".config/git/credentials",
    ".local/share/python_keyring",
];

/// Credential stores in the config directory (`~/.config`, and `XDG_CONFIG_HOME` when it is
/// elsewhere).
const CONFIG_STORES: [&str; 11] = [
    "gcloud",
    "gh",
    "hub",
    "git/credentials",
    "google-chrome",
    "chromium",
    "BraveSoftware",
    "microsoft-edge",
    "vivaldi",
    "opera",
    "keybase",
];

/// Variables that name a store (a file or a directory) themselves.
const NAMED_STORES: [&str; 8] = [
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "DOCKER_CONFIG",
    "CLOUDSDK_CONFIG",
    "AZURE_CONFIG_DIR",
    "GH_CONFIG_DIR",
    "NPM_CONFIG_USERCONFIG",
    "PASSWORD_STORE_DIR",
];

/// The private keys ssh looks for by default: hidden even before they exist.
const SSH_KEYS: [&str; 7] = [
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ecdsa_sk",
    "id_ed25519",
    "id_ed25519_sk",
    "id_xmss",
];

/// What in `~/.ssh` holds nothing secret: public keys, host keys, the client's config.
fn ssh_readable(name: &str) -> bool {
    name.ends_with(".pub")
        || matches!(
            name,
            "known_hosts" | "known_hosts.old" | "config" | "authorized_keys"
        )
}

/// A `sandbox.allowRead` entry as a path: absolute, or `~` / `~/…` in HOME. Anything else
/// (relative to what?) is `None`, which the config file reports.
pub fn expand(entry: &str) -> Option<PathBuf> {
    if entry == "~" {
        return dirs::home_dir();
    }
    if let Some(rest) = entry.strip_prefix("~/") {
        return dirs::home_dir().map(|home| home.join(rest));
    }
    let path = Path::new(entry);
    path.is_absolute().then(|| path.to_path_buf())
}

/// Every file a confined command may not read: `never_read` (Splice's saved logins, never
/// re-granted) and the credential stores but what `allowed` (`sandbox.allowRead`) allows.
pub fn hidden_paths(never_read: &[PathBuf], allowed: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths = never_read.to_vec();
    paths.extend(except_allowed(credential_stores(), allowed));
    paths
}

/// The credential stores of this process's environment, existing or not, unresolved.
pub fn credential_stores() -> Vec<PathBuf> {
    let mut stores = Vec::new();
    for home in homes() {
        stores.extend(HOME_STORES.iter().map(|store| home.join(store)));
        stores.extend(
            CONFIG_STORES
                .iter()
                .map(|store| home.join(".config").join(store)),
        );
        stores.extend(ssh_secrets(&home.join(".ssh")));
    }
    if let Some(config) = dirs::config_dir() {
        stores.extend(CONFIG_STORES.iter().map(|store| config.join(store)));
    }
    if let Some(data) = dirs::data_dir() {
        stores.push(data.join("keyrings"));
    }
    let named = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    stores.extend(NAMED_STORES.iter().filter_map(|name| named(name)));
    if let Some(list) = std::env::var_os("KUBECONFIG") {
        stores.extend(std::env::split_paths(&list).filter(|p| !p.as_os_str().is_empty()));
    }
    if let Some(gnupg) = named("GNUPGHOME") {
        stores.push(gnupg.join("private-keys-v1.d"));
        stores.push(gnupg.join("secring.gpg"));
    }
    if let Some(cargo) = named("CARGO_HOME") {
        stores.push(cargo.join("credentials"));
        stores.push(cargo.join("credentials.toml"));
    }
    // Only absolute paths: a relative one would be read against whatever directory asks.
    stores.retain(|p| p.is_absolute());
    stores.sort();
    stores.dedup();
    stores
}

/// HOME, and the home the password file gives this user when HOME names another: a store
/// there is as much the person's.
fn homes() -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = dirs::home_dir().into_iter().collect();
    if let Some(own) = passwd_home()
        && !homes.contains(&own)
    {
        homes.push(own);
    }
    homes.retain(|h| h.is_absolute() && h != Path::new("/"));
    homes
}

fn passwd_home() -> Option<PathBuf> {
    let uid = rustix::process::geteuid().as_raw().to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 7 && fields[2] == uid).then(|| PathBuf::from(fields[5]))
    })
}

/// What in `ssh` is secret: the default private keys (by name, so one made later is hidden
/// too) and every entry but those [`ssh_readable`] lets through; the whole directory when it
/// cannot be listed.
fn ssh_secrets(ssh: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(ssh) else {
        return vec![ssh.to_path_buf()];
    };
    let mut secrets: Vec<PathBuf> = SSH_KEYS.iter().map(|key| ssh.join(key)).collect();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_str().is_some_and(ssh_readable) {
            secrets.push(entry.path());
        }
    }
    secrets
}

/// `stores` but for what `allowed` re-grants: a store inside an allowed path is dropped, and
/// one holding an allowed path is replaced by its parts beside the way down to it.
fn except_allowed(stores: Vec<PathBuf>, allowed: &[PathBuf]) -> Vec<PathBuf> {
    let allowed: Vec<PathBuf> = allowed.iter().map(|a| crate::places::resolved(a)).collect();
    let mut kept = Vec::new();
    for store in stores {
        let real = crate::places::resolved(&store);
        if allowed.iter().any(|a| real.starts_with(a)) {
            continue;
        }
        let inside: Vec<&PathBuf> = allowed.iter().filter(|a| a.starts_with(&real)).collect();
        if inside.is_empty() {
            kept.push(store);
            continue;
        }
        let mut parts = vec![real.clone()];
        let carved = inside.iter().try_for_each(|a| hidden::carve(&mut parts, a));
        // What cannot be listed stays hidden whole.
        match carved {
            Ok(()) => kept.extend(parts),
            Err(_) => kept.push(store),
        }
    }
    kept
}

/// The subtrees a confined command or package tool may read files in: `/` without `hidden`
/// and without `/dev`, and each of `allowed` without what of `hidden` lies inside it. Refused
/// when a place it may write holds the terminals (`/` or `/dev` as the working root).
pub fn readable_roots(
    hidden: &[PathBuf],
    writable: &[PathBuf],
    allowed: &[PathBuf],
) -> Result<Vec<PathBuf>, HiddenError> {
    for place in writable {
        let real = crate::places::resolved(place);
        if holds_terminals(&real) {
            return Err(HiddenError::TerminalsWritable(place.clone()));
        }
    }
    let mut targets = hidden.to_vec();
    targets.push(PathBuf::from(DEVICES_DIR));
    let mut roots = hidden::readable_roots(&targets, writable)?;
    let targets: Vec<PathBuf> = targets
        .iter()
        .map(|t| hidden::resolved(t))
        .collect::<Result<_, _>>()?;
    for path in allowed {
        let mut parts = vec![crate::places::resolved(path)];
        for target in &targets {
            // Each call takes one part holding it away (an allowed device inside `/dev` holds
            // no part of it: the person's choice).
            while parts.iter().any(|p| target.starts_with(p)) {
                hidden::carve(&mut parts, target)?;
            }
        }
        roots.extend(parts);
    }
    roots.sort();
    roots.dedup();
    Ok(roots)
}

/// Whether a place a command may write holds a terminal: `/` or `/dev` itself, `/dev/pts`
/// or a terminal device.
fn holds_terminals(real: &Path) -> bool {
    if Path::new(DEVICES_DIR).starts_with(real) || real.starts_with("/dev/pts") {
        return true;
    }
    let in_dev = real.parent() == Some(Path::new(DEVICES_DIR));
    let name = real
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    in_dev
        && ["tty", "console", "vcs", "ptmx", "hvc"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covered(roots: &[PathBuf], path: &Path) -> bool {
        roots.iter().any(|r| path.starts_with(r))
    }

    #[test]
    fn devices_are_not_readable_but_the_rest_of_the_root_is() {
        let roots = readable_roots(&[], &[], &[]).expect("readable roots");
        for refused in [
            "/dev/pts/0",
            "/dev/tty",
            "/dev/console",
            "/dev/sda",
            "/dev/ptmx",
        ] {
            assert!(!covered(&roots, Path::new(refused)), "{refused}: {roots:?}");
        }
        assert!(covered(&roots, Path::new("/etc/hostname")));
        assert!(covered(&roots, Path::new("/proc/self/status")));
        let allowed = readable_roots(&[], &[], &[PathBuf::from("/dev/pts")]).expect("allowed");
        assert!(covered(&allowed, Path::new("/dev/pts/0")));
        assert!(!covered(&allowed, Path::new("/dev/tty")));
    }

    #[test]
    fn a_writable_place_holding_the_terminals_refuses_confinement() {
        for place in ["/", "/dev", "/dev/pts", "/dev/tty1"] {
            let refused = readable_roots(&[], &[PathBuf::from(place)], &[]);
            assert!(
                refused.is_err_and(|e| e.to_string().contains("terminal")),
                "{place}"
            );
        }
        assert!(readable_roots(&[], &[PathBuf::from("/dev/shm")], &[]).is_ok());
    }

    #[test]
    fn ssh_keeps_public_files_readable_and_hides_the_rest_even_before_it_exists() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let ssh = dir.path().join(".ssh");
        assert_eq!(ssh_secrets(&ssh), std::slice::from_ref(&ssh));
        std::fs::create_dir(&ssh).expect("create .ssh");
        for name in ["id_work", "id_work.pub", "config", "known_hosts"] {
            std::fs::write(ssh.join(name), "x").expect("write");
        }
        let secrets = ssh_secrets(&ssh);
        assert!(secrets.contains(&ssh.join("id_work")));
        assert!(secrets.contains(&ssh.join("id_ed25519")));
        for public in ["id_work.pub", "config", "known_hosts"] {
            assert!(!secrets.contains(&ssh.join(public)), "{public}");
        }
    }

    #[test]
    fn an_allowed_path_drops_the_stores_inside_it_and_splits_one_around_it() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let base = dir.path().canonicalize().expect("canonicalize");
        let aws = base.join(".aws");
        std::fs::create_dir(&aws).expect("create .aws");
        for name in ["config", "credentials"] {
            std::fs::write(aws.join(name), "x").expect("write");
        }
        let netrc = base.join(".netrc");
        let stores = vec![aws.clone(), netrc.clone()];
        assert_eq!(except_allowed(stores.clone(), &[]), stores);
        assert_eq!(
            except_allowed(stores.clone(), std::slice::from_ref(&aws)),
            std::slice::from_ref(&netrc)
        );
        let split = except_allowed(stores, &[aws.join("config")]);
        assert!(split.contains(&aws.join("credentials")), "{split:?}");
        assert!(!split.contains(&aws) && !split.contains(&aws.join("config")));
        assert!(split.contains(&netrc));
    }

    #[test]
    fn an_allowed_path_does_not_grant_back_what_is_hidden_inside_it() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let base = dir.path().canonicalize().expect("canonicalize");
        std::fs::create_dir_all(base.join("splice")).expect("create");
        let logins = base.join("splice/credentials.json");
        std::fs::write(&logins, "{}").expect("write");
        std::fs::write(base.join("notes"), "x").expect("write");
        let roots = readable_roots(
            std::slice::from_ref(&logins),
            &[],
            &[base.clone(), PathBuf::from("/")],
        )
        .expect("readable roots");
        assert!(!covered(&roots, &logins), "{roots:?}");
        assert!(!covered(&roots, Path::new("/dev/tty")), "{roots:?}");
        assert!(covered(&roots, &base.join("notes")));
    }

    #[test]
    fn allow_read_entries_are_absolute_or_in_home() {
        assert_eq!(expand("/etc/x"), Some(PathBuf::from("/etc/x")));
        assert!(expand("~/.aws").is_some_and(|p| p.ends_with(".aws") && p.is_absolute()));
        assert_eq!(expand("relative/x"), None);
        assert_eq!(expand("~user/x"), None);
    }
}
