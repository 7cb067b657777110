//! Issue 28: a confined command reads none of the person's credential stores in HOME (ssh
//! private keys, cloud and registry logins, GnuPG's private keys, browsers' profiles), with HOME
//! outside everything it may write (Landlock) or under `/tmp` (the mount namespace), unless
//! `sandbox.allowRead` allows one; and it cannot reach the kernel's keyrings.

use crate::support;

use std::path::Path;
use std::process::Command;

use serde_json::json;
use support::fake_provider::{FakeProvider, openai};
use support::one_call::{one_call, one_call_with, result_of};
use support::{Sandbox, outside_dir};

/// One file in each store, relative to HOME.
const STORES: [&str; 19] = [
    ".ssh/id_ed25519",
    ".ssh/id_work",
    ".aws/credentials",
    ".config/gcloud/credentials.db",
    ".azure/msal_token_cache.json",
    ".kube/config",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/gh/hosts.yml",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".gnupg/private-keys-v1.d/0123ABCD.key",
    ".gnupg/secring.gpg",
    ".mozilla/firefox/p.default/logins.json",
    ".config/google-chrome/Default/Login Data",
    ".config/chromium/Default/Cookies",
    ".local/share/keyrings/login.keyring",
];

/// Their neighbours, which stay readable.
const NEIGHBOURS: [&str; 7] = [
    ".ssh/id_ed25519.pub",
    ".ssh/known_hosts",
    ".ssh/config",
    ".config/other/settings.ini",
    ".cargo/config.toml",
    ".gnupg/pubring.kbx",
    "notes.txt",
];

/// The probe the command runs: each path it is given (relative to HOME) read or refused, with
/// the errno.
const PROBE: &str = r#"import os, sys
home = os.environ["HOME"]
for rel in sys.argv[1:]:
    try:
        with open(os.path.join(home, rel)) as f:
            print("READ", rel, "=", f.read().strip())
    except OSError as e:
        print("REFUSED", rel, "=", e.errno)
"#;

fn secret(index: usize) -> String {
    format!("SECRET-{index}-cred-marker")
}

/// HOME holding every store and neighbour, and the probe in the root.
fn plant(sandbox: &Sandbox) {
    let home = sandbox.dir.path();
    for (index, rel) in STORES.iter().enumerate() {
        write(&home.join(rel), &secret(index));
    }
    for (index, rel) in NEIGHBOURS.iter().enumerate() {
        write(&home.join(rel), &format!("PUBLIC-{index}-marker"));
    }
    sandbox.write("probe.py", PROBE);
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create parent");
    }
    std::fs::write(path, text).expect("write file");
}

/// The probe over every store and neighbour, then a search of all of HOME and a copy of it,
/// in `auto` mode (confined); the command's output.
fn probe(sandbox: &Sandbox) -> String {
    let mut names: Vec<String> = STORES
        .iter()
        .chain(&NEIGHBOURS)
        .map(|s| format!("'{s}'"))
        .collect();
    names.sort();
    let command = format!(
        "python3 probe.py {}; grep -ra cred-marker \"$HOME\" 2>/dev/null | head -c 2000; \
         cp -r \"$HOME/.aws\" \"$HOME/.ssh\" . 2>/dev/null; cat .aws/* .ssh/* 2>/dev/null; \
         echo probe-ended",
        names.join(" ")
    );
    let out = one_call(
        sandbox,
        "run_command",
        json!({ "command": command, "timeout_ms": 20000 }),
        &["--permission-mode", "auto"],
    );
    let (status, output) = result_of(&out);
    assert_eq!(status, "ok", "{output}");
    assert!(output.contains("probe-ended"), "{output}");
    output
}

/// What the probe read of `rel`: `READ rel = text` or `REFUSED rel = errno`.
fn line_of<'a>(output: &'a str, rel: &str) -> &'a str {
    let read = format!("READ {rel} =");
    let refused = format!("REFUSED {rel} =");
    output
        .lines()
        .find(|l| l.starts_with(&read) || l.starts_with(&refused))
        .unwrap_or_else(|| panic!("the probe said nothing of {rel}: {output}"))
}

fn assert_refused_but(output: &str, allowed: &[&str]) {
    for (index, rel) in STORES.iter().enumerate() {
        let line = line_of(output, rel);
        if allowed.contains(rel) {
            assert_eq!(line, format!("READ {rel} = {}", secret(index)), "{output}");
            continue;
        }
        // Refused as Landlock and the masks refuse: permission denied.
        assert_eq!(line, format!("REFUSED {rel} = 13"), "{output}");
        let found = output.matches(&secret(index)).count();
        assert_eq!(found, 0, "{rel} was read: {output}");
    }
    for (index, rel) in NEIGHBOURS.iter().enumerate() {
        let line = line_of(output, rel);
        assert_eq!(
            line,
            format!("READ {rel} = PUBLIC-{index}-marker"),
            "{output}"
        );
    }
}

/// HOME outside every place a confined command may write: Landlock keeps each store.
#[test]
fn a_confined_command_reads_no_credential_store_in_home() {
    let sandbox = Sandbox::new_in(&outside_dir());
    plant(&sandbox);
    let output = probe(&sandbox);
    assert_refused_but(&output, &[]);
}

/// HOME under `/tmp`, where a confined command may write (Landlock cannot refuse reading
/// there): each store is masked in the command's mount namespace.
#[test]
fn a_confined_command_reads_no_credential_store_in_a_home_under_tmp() {
    let sandbox = Sandbox::new();
    assert!(sandbox.dir.path().starts_with("/tmp"), "not under /tmp");
    plant(&sandbox);
    let output = probe(&sandbox);
    assert_refused_but(&output, &[]);
}

/// `sandbox.allowRead` lets the person give confined commands a store (a whole directory, or
/// one file in one), and nothing more.
#[test]
fn allow_read_lets_confined_commands_read_the_stores_it_names() {
    for sandbox in [Sandbox::new_in(&outside_dir()), Sandbox::new()] {
        plant(&sandbox);
        let config = json!({"sandbox": {"allowRead": ["~/.aws", "~/.ssh/id_work"]}});
        std::fs::write(sandbox.dir.path().join("config.json"), config.to_string())
            .expect("write config.json");
        let output = probe(&sandbox);
        assert_refused_but(&output, &[".aws/credentials", ".ssh/id_work"]);
    }
}

/// The probe asking the kernel's keyrings for the key the person's session holds, reading and
/// replacing it, and adding one to the user keyring: each call's result and errno.
const KEYRING_PROBE: &str = r#"import ctypes, os
nr = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}[os.uname().machine]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(*args):
    result = libc.syscall(*args)
    return result, (ctypes.get_errno() if result < 0 else 0)
SESSION, USER = ctypes.c_long(-3), ctypes.c_long(-4)
key, errno = call(nr[2], 10, SESSION, b"user", b"krb-like", 0)
print("SEARCH", key, errno)
if key > 0:
    buf = ctypes.create_string_buffer(256)
    size, _ = call(nr[2], 11, ctypes.c_long(key), buf, 256)
    print("READ", buf.raw[:max(size, 0)].decode())
    print("UPDATE", *call(nr[2], 2, ctypes.c_long(key), b"REPLACED", 8))
print("ADD", *call(nr[0], b"user", b"planted", b"x", 1, USER))
print("REQUEST", *call(nr[1], b"user", b"krb-like", None, ctypes.c_long(0)))
"#;

/// A session keyring of its own holding a key, then `splice` in it (as a login's Kerberos
/// cache would be): the wrapper adds the key, checks it is there, and becomes `splice`.
const KEYRING_WRAPPER: &str = r#"import ctypes, os, sys
nr = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}[os.uname().machine]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
assert libc.syscall(nr[2], 1, None) > 0, "cannot join a new session keyring"
secret = b"KEYRING-SECRET-marker"
key = libc.syscall(nr[0], b"user", b"krb-like", secret, len(secret), ctypes.c_long(-3))
assert key > 0, ctypes.get_errno()
os.execv(sys.argv[1], sys.argv[1:])
"#;

/// `keyctl` was neither filtered nor scoped: a confined command found the key in the session
/// keyring Splice inherited, read it and replaced it.
#[test]
fn a_confined_command_cannot_reach_the_kernels_keyrings() {
    let sandbox = Sandbox::new_in(&outside_dir());
    sandbox.write("keys.py", KEYRING_PROBE);
    let wrapper_file = sandbox.dir.path().join("wrapper.py");
    std::fs::write(&wrapper_file, KEYRING_WRAPPER).expect("write wrapper");
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({ "command": "python3 keys.py; echo probe-ended" }).to_string()],
        ),
        openai::answer(&["done"]),
    ]);
    let flags = ["--permission-mode", "auto"];
    let out = one_call_with(&sandbox, &provider, &flags, |splice| {
        let mut wrapper = Command::new("python3");
        wrapper.arg(&wrapper_file);
        *splice = support::attack::through(wrapper, splice);
    });
    let (status, output) = result_of(&out);
    assert_eq!(status, "ok", "{output}");
    assert!(output.contains("probe-ended"), "{output}");
    assert!(!output.contains("KEYRING-SECRET"), "{output}");
    for call in ["SEARCH", "ADD", "REQUEST"] {
        assert!(
            output.contains(&format!("{call} -1 13")),
            "{call}: {output}"
        );
    }
    assert!(!output.contains("UPDATE"), "{output}");
}

/// A tool that reads (opening without blocking, and without taking a terminal as its own)
/// every entry of `data`: `OPENED text` or `REFUSED code`, by name.
const READ_TOOL: &str = r#"import fs from 'node:fs';
export default async function () {
  const out: Record<string, string> = {};
  const { O_RDONLY, O_NONBLOCK, O_NOCTTY } = fs.constants;
  for (const name of fs.readdirSync('data')) {
    let fd: number;
    try {
      fd = fs.openSync(`data/${name}`, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    } catch (e: any) {
      out[name] = `REFUSED ${e.code}`;
      continue;
    }
    const buf = Buffer.alloc(100);
    try {
      out[name] = `OPENED ${buf.subarray(0, fs.readSync(fd, buf)).toString()}`;
    } catch (e: any) {
      out[name] = `OPENED read ${e.code}`;
    }
    fs.closeSync(fd);
  }
  return out;
}"#;

/// Node's permission model follows a link inside a granted directory wherever it points (the
/// repository can hold one): a package tool that may read `data/` read a credential store and
/// opened a terminal through links there. Landlock under it now refuses both; the control file
/// beside them still reads.
#[test]
fn a_package_tool_reads_no_credential_store_or_terminal_through_a_link() {
    let sandbox = Sandbox::new_in(&outside_dir());
    plant(&sandbox);
    // A terminal of the person's: a pseudo-terminal `script` holds while the tool runs.
    let mut terminal = Command::new("script")
        .args(["-q", "-c", "echo \"PTY $(tty)\"; sleep 30", "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start script");
    let mut first = String::new();
    let stdout = terminal.stdout.take().expect("script's stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut first)
        .expect("read script's line");
    let pty = first.trim().trim_start_matches("PTY ").to_string();
    assert!(pty.starts_with("/dev/pts/"), "{first}");
    let data = sandbox.root.join("data");
    std::fs::create_dir_all(&data).expect("create data");
    std::fs::write(data.join("control.txt"), "control-readable").expect("write control");
    let home = sandbox.dir.path();
    for (link, target) in [
        ("aws", home.join(".aws/credentials")),
        ("key", home.join(".ssh/id_ed25519")),
        ("pty", Path::new(&pty).to_path_buf()),
        ("tty", Path::new("/dev/tty").to_path_buf()),
    ] {
        std::os::unix::fs::symlink(target, data.join(link)).expect("link");
    }
    let package = home.join("pkg");
    support::package::write_package(
        &package,
        &support::package::manifest(json!({"fs": {"read": ["data"]}}), &[("peek", 10_000)]),
        &[("peek", READ_TOOL)],
    );
    let mut command = sandbox.command("http://127.0.0.1:9");
    command
        .env("SPLICE_NODE", support::node::node22())
        .args(["pkg", "run"])
        .arg(&package)
        .args(["peek", "{}", "--json"]);
    let outcome = support::run_raw(command, None);
    let _ = terminal.kill();
    let _ = terminal.wait();
    let result: serde_json::Value = serde_json::from_str(outcome.stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?} {}", outcome.stdout, outcome.stderr));
    assert_eq!(result["ok"], true, "{result}");
    let read = &result["output"];
    assert_eq!(read["control.txt"], "OPENED control-readable", "{result}");
    for link in ["aws", "key", "pty", "tty"] {
        assert_eq!(read[link], "REFUSED EACCES", "{link}: {result}");
    }
    assert!(!result.to_string().contains("cred-marker"), "{result}");
}
