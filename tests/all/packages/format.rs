//! Skill packages, the format layer: `pkg validate|pack|new` through the real binary, the
//! archive's bytes and headers, and hostile archives refused by the safe unpack.

use crate::support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use splice::packages::archive::{self, Limits};
use support::{Outcome, Sandbox, run_raw};
use tar::{EntryType, Header};

const OFFICIAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/packages/json");

fn splice(sandbox: &Sandbox, args: &[&str]) -> Outcome {
    let mut command: Command = sandbox.command("http://127.0.0.1:9");
    command.args(args);
    run_raw(command, None)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create to");
    for entry in std::fs::read_dir(from).expect("list from") {
        let entry = entry.expect("read a tar entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy entry to target");
        }
    }
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn pack(sandbox: &Sandbox, dir: &Path, out: &Path) -> Vec<u8> {
    let outcome = splice(
        sandbox,
        &[
            "pkg",
            "pack",
            &dir.display().to_string(),
            "--out",
            &out.display().to_string(),
        ],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    read(out)
}

/// A package of its own per test, copied from the official one.
fn official_copy(sandbox: &Sandbox, name: &str) -> PathBuf {
    let dir = sandbox.root.join(name);
    copy_dir(Path::new(OFFICIAL), &dir);
    dir
}

#[test]
fn validate_reports_every_violation_with_its_path_and_exits_2() {
    let sandbox = Sandbox::new();
    let dir = official_copy(&sandbox, "broken");
    let manifest_path = dir.join("manifest.json");
    let mut manifest: Value =
        serde_json::from_slice(&read(&manifest_path)).expect("parse manifest_path as JSON");
    manifest["name"] = json!("Json");
    manifest["version"] = json!("1");
    manifest["permissions"]["fs"]["read"] = json!(["../secrets"]);
    manifest["permissions"]["env"] = json!(["NOT-A-NAME"]);
    manifest["tools"][0]["input"]["properties"]["text"]["pattern"] = json!("^\\{");
    manifest["tools"][1]["entry"] = json!("tools/missing.ts");
    manifest["tools"][1]["timeoutMs"] = json!(0);
    manifest["publisher"] = json!("me");
    std::fs::write(&manifest_path, manifest.to_string()).expect("write manifest_path");
    let skill = std::fs::read_to_string(dir.join("SKILL.md")).expect("read SKILL.md");
    std::fs::write(
        dir.join("SKILL.md"),
        skill.replace("## Limits", "## Boundaries"),
    )
    .expect("write SKILL.md");
    std::os::unix::fs::symlink("/etc/passwd", dir.join("tools/passwd.ts"))
        .expect("link tools/passwd.ts to /etc/passwd");
    std::fs::write(
        dir.join("examples/bad.json"),
        r#"{"tool": "parse", "input": {"text": 5, "extra": 1}}"#,
    )
    .expect("write examples/bad.json");

    let out = splice(&sandbox, &["pkg", "validate", "broken"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let lines: Vec<&str> = out.stderr.lines().collect();
    for expected in [
        "tools/passwd.ts: is a symlink",
        "publisher: unknown key",
        "name: `Json` must be lowercase",
        "version: `1` is not a semantic version",
        "permissions.fs.read[0]: `../secrets` must not contain `..`",
        "permissions.env[0]: `NOT-A-NAME` is not a variable name",
        "tools[0].input.properties.text.pattern: unknown schema keyword `pattern`",
        "tools[1].timeoutMs: must be an integer from 1 to 300000",
        "tools[1].entry: `tools/missing.ts` is not a plain file of the package",
        "SKILL.md: missing the section `## Limits`",
        "examples/bad.json#input.text: expected string, got integer",
        "examples/bad.json#input.extra: is not an allowed property",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(expected)),
            "{expected:?} not among:\n{}",
            out.stderr
        );
    }
    assert_eq!(lines.len(), 12, "{}", out.stderr);

    let json_out = splice(&sandbox, &["pkg", "validate", "broken", "--json"]);
    assert_eq!(json_out.code, 2);
    let doc: Value = serde_json::from_str(&json_out.stdout).expect("parse json_out.stdout as JSON");
    assert_eq!(doc["valid"], false);
    let errors = doc["errors"].as_array().cloned().unwrap_or_default();
    assert_eq!(errors.len(), 12);
    assert!(errors.contains(&json!({
        "path": "tools[0].input.properties.text.pattern",
        "message": errors.iter().find(|e| e["path"] == "tools[0].input.properties.text.pattern").map(|e| e["message"].clone()).unwrap_or_default()
    })));
    assert!(
        errors
            .iter()
            .all(|e| e.as_object().is_some_and(|o| o.len() == 2))
    );

    // Packing refuses the same package, with the same report, and writes nothing.
    let packed = splice(&sandbox, &["pkg", "pack", "broken", "--out", "broken.tgz"]);
    assert_eq!(packed.code, 2);
    assert_eq!(packed.stderr.lines().count(), 12, "{}", packed.stderr);
    assert!(!sandbox.root.join("broken.tgz").exists());
}

#[test]
fn the_official_json_package_is_valid_and_packs_to_the_same_bytes_after_copy_touch_chmod() {
    let sandbox = Sandbox::new();
    let out = splice(&sandbox, &["pkg", "validate", OFFICIAL, "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        serde_json::from_str::<Value>(&out.stdout).expect("parse out.stdout as JSON"),
        json!({"valid": true, "errors": []})
    );
    let first = pack(&sandbox, Path::new(OFFICIAL), &sandbox.root.join("a.tgz"));
    let second = pack(&sandbox, Path::new(OFFICIAL), &sandbox.root.join("b.tgz"));
    assert_eq!(first, second, "two packs of one directory differ");

    // A copy (new inodes, times and order of creation), touched and chmodded, with hidden
    // files and node_modules beside it, packs to the same bytes.
    let copy = official_copy(&sandbox, "copy");
    let stamp = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    for file in ["manifest.json", "tools/parse.ts", "SKILL.md"] {
        let handle = std::fs::File::options()
            .write(true)
            .open(copy.join(file))
            .expect("open file for writing");
        handle.set_modified(stamp).expect("set the mtime of handle");
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        copy.join("tools/query.ts"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("set the mode of tools/query.ts");
    std::fs::set_permissions(
        copy.join("examples"),
        std::fs::Permissions::from_mode(0o700),
    )
    .expect("set the mode of examples");
    std::fs::write(copy.join(".env"), "SECRET=1").expect("write .env");
    std::fs::create_dir_all(copy.join("node_modules/x")).expect("create node_modules/x");
    std::fs::write(copy.join("node_modules/x/index.js"), "")
        .expect("write node_modules/x/index.js");
    std::fs::create_dir_all(copy.join("tools/.cache")).expect("create tools/.cache");
    let third = pack(&sandbox, &copy, &sandbox.root.join("c.tgz"));
    assert_eq!(
        first, third,
        "a touched, chmodded copy packs to other bytes"
    );

    // The printed line: path, size and the sha256 of the bytes.
    let out = splice(
        &sandbox,
        &["pkg", "pack", "copy", "--out", "d.tgz", "--json"],
    );
    let line: Value = serde_json::from_str(&out.stdout).expect("parse out.stdout as JSON");
    assert_eq!(line["path"], "d.tgz");
    assert_eq!(line["size"], first.len());
    assert_eq!(line["sha256"], archive::sha256_hex(&first));
    let text = splice(&sandbox, &["pkg", "pack", "copy", "--out", "e.tgz"]);
    assert_eq!(
        text.stdout,
        format!(
            "e.tgz  {} bytes  sha256:{}\n",
            first.len(),
            archive::sha256_hex(&first)
        )
    );
}

#[test]
fn archive_headers_are_normalised_sorted_and_the_gzip_header_carries_no_time_or_name() {
    let sandbox = Sandbox::new();
    let dir = official_copy(&sandbox, "pkg");
    std::fs::write(dir.join(".hidden"), "x").expect("write .hidden");
    std::fs::create_dir_all(dir.join("tools/node_modules")).expect("create tools/node_modules");
    // A long path: ustar splits it into prefix and name, deterministically.
    let long_dir = format!("tests/{}", "d".repeat(90));
    std::fs::create_dir_all(dir.join(&long_dir)).expect("create long_dir");
    std::fs::write(dir.join(&long_dir).join("f".repeat(60)), "long")
        .expect("write a file in the long directory");
    let bytes = pack(&sandbox, &dir, &sandbox.root.join("p.tgz"));
    // ID1 ID2 CM=deflate FLG=0 (no name, comment or extra) MTIME=0 XFL=0 OS=255.
    assert_eq!(bytes[..10], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    let mut tar_bytes = Vec::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .read_to_end(&mut tar_bytes)
        .expect("gunzip the archive");
    let mut archive = tar::Archive::new(tar_bytes.as_slice());
    let mut names = Vec::new();
    for entry in archive.entries().expect("list the tar entries").raw(true) {
        let entry = entry.expect("read a tar entry");
        let header = entry.header();
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        assert!(header.as_ustar().is_some(), "{name}: not a ustar header");
        assert_eq!(header.mtime().unwrap_or(1), 0, "{name}");
        assert_eq!(header.uid().unwrap_or(1), 0, "{name}");
        assert_eq!(header.gid().unwrap_or(1), 0, "{name}");
        assert_eq!(header.username_bytes(), Some(&b""[..]), "{name}");
        assert_eq!(header.groupname_bytes(), Some(&b""[..]), "{name}");
        let (kind, mode) = (header.entry_type(), header.mode().unwrap_or(0));
        match kind {
            EntryType::Directory => assert_eq!(mode, 0o755, "{name}"),
            EntryType::Regular => assert_eq!(mode, 0o644, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
        names.push(name);
    }
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert!(
        names
            .iter()
            .all(|n| !n.contains("/.") && !n.starts_with('.'))
    );
    assert!(names.iter().all(|n| !n.contains("node_modules")));
    for expected in [
        "SKILL.md",
        "examples",
        "manifest.json",
        "tools",
        "tools/parse.ts",
        "tools/query.ts",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    assert!(
        names.contains(&format!("{long_dir}/{}", "f".repeat(60))),
        "{names:?}"
    );

    // What unpacks is what was packed, and packs again to the same bytes.
    let unpacked = sandbox.root.join("unpacked");
    archive::unpack(bytes.as_slice(), &unpacked, archive::LIMITS).expect("unpack into unpacked");
    assert_eq!(
        read(&unpacked.join("tools/parse.ts")),
        read(&dir.join("tools/parse.ts"))
    );
    assert!(!unpacked.join(".hidden").exists());
    assert_eq!(
        pack(&sandbox, &unpacked, &sandbox.root.join("q.tgz")),
        bytes
    );

    // A path beyond ustar's 100 + 155 bytes is refused with its path, not spilled into an
    // extension header.
    let too_long = format!("tests/{}", "e".repeat(160));
    std::fs::create_dir_all(dir.join(&too_long)).expect("create too_long");
    let out = splice(&sandbox, &["pkg", "pack", "pkg", "--out", "r.tgz"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with(&format!("{too_long}: the path does not fit a ustar header")),
        "{}",
        out.stderr
    );
}

#[test]
fn pack_and_validate_refuse_links_and_special_files_with_their_path() {
    let sandbox = Sandbox::new();
    let dir = official_copy(&sandbox, "pkg");
    std::os::unix::fs::symlink("../../outside", dir.join("examples/link"))
        .expect("link examples/link to ../../outside");
    std::fs::write(sandbox.root.join("outside"), "secret").expect("write outside");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        dir.join("tools/fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .expect("make the FIFO tools/fifo");
    let out = splice(&sandbox, &["pkg", "pack", "pkg", "--out", "p.tgz"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("examples/link: is a symlink"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("tools/fifo: is a FIFO"),
        "{}",
        out.stderr
    );
    assert!(!sandbox.root.join("p.tgz").exists());
    // The library refuses too, whoever calls it.
    let refused = archive::pack(&dir).map(|_| ()).map_err(|e| e.to_string());
    assert!(refused.is_err_and(|e| e.contains("examples/link")));
}

#[test]
fn new_writes_a_skeleton_that_validates_and_refuses_a_non_empty_directory() {
    let sandbox = Sandbox::new();
    let out = splice(
        &sandbox,
        &["pkg", "new", "skills/hello", "--namespace", "acme"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    for file in [
        "manifest.json",
        "SKILL.md",
        "tools/greet.ts",
        "examples/greet.json",
        "tests/greet.test.ts",
    ] {
        assert!(
            sandbox.root.join("skills/hello").join(file).is_file(),
            "{file}"
        );
    }
    let manifest: Value =
        serde_json::from_slice(&read(&sandbox.root.join("skills/hello/manifest.json")))
            .expect("parse skills/hello/manifest.json as JSON");
    assert_eq!(
        (manifest["namespace"].as_str(), manifest["name"].as_str()),
        (Some("acme"), Some("hello"))
    );
    // stdout lists the files; stderr says what to do next, with commands for this directory.
    assert_eq!(out.stdout.lines().count(), 5, "{}", out.stdout);
    for step in [
        "splice pkg validate skills/hello",
        "splice pkg test skills/hello",
        "splice pkg run skills/hello greet",
        "splice pkg pack skills/hello",
        "splice publish skills/hello",
    ] {
        assert!(out.stderr.contains(step), "{step}: {}", out.stderr);
    }
    let test_file = std::fs::read_to_string(sandbox.root.join("skills/hello/tests/greet.test.ts"))
        .expect("read skills/hello/tests/greet.test.ts");
    assert!(test_file.contains("from \"node:test\"") && test_file.contains("node:assert"));
    let valid = splice(&sandbox, &["pkg", "validate", "skills/hello"]);
    assert_eq!(valid.code, 0, "{}", valid.stderr);

    let again = splice(
        &sandbox,
        &["pkg", "new", "skills/hello", "--namespace", "acme"],
    );
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("is not empty"), "{}", again.stderr);
    let bad = splice(&sandbox, &["pkg", "new", "skills/x", "--namespace", "Acme"]);
    assert_eq!(bad.code, 2);
    assert!(!sandbox.root.join("skills/x").exists());
    let named = splice(
        &sandbox,
        &[
            "pkg",
            "new",
            "skills/Weird Dir",
            "--namespace",
            "acme",
            "--name",
            "ok",
        ],
    );
    assert_eq!(named.code, 0, "{}", named.stderr);
}

// ---- hostile archives ----

/// A `.tar.gz` of raw headers: each name written into the header bytes as is (the tar crate's
/// path setters would refuse `..` and absolute paths).
fn hostile(entries: &[(&[u8], EntryType, &[u8])]) -> Vec<u8> {
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gzip);
    for (name, kind, data) in entries {
        let mut header = Header::new_ustar();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_entry_type(*kind);
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        if matches!(kind, EntryType::Symlink | EntryType::Link) {
            header.as_old_mut().linkname[..7].copy_from_slice(b"../../x");
            header.set_size(0);
        }
        header.set_cksum();
        let body: &[u8] = if matches!(kind, EntryType::Symlink | EntryType::Link) {
            b""
        } else {
            data
        };
        builder
            .append(&header, body)
            .expect("append an entry to the tar");
    }
    builder
        .into_inner()
        .and_then(|g| g.finish())
        .expect("finish the gzip stream")
}

/// Unpack into `sandbox/out/pkg` and check that it is refused, mentions `why`, and leaves
/// nothing: no target, no staging directory, nothing beside or above.
fn assert_refused(bytes: &[u8], why: &str, limits: Limits) {
    let sandbox = Sandbox::new();
    let parent = sandbox.root.join("out");
    std::fs::create_dir_all(&parent).expect("create parent");
    let target = parent.join("pkg");
    let result = archive::unpack(bytes, &target, limits);
    let message = match result {
        Ok(()) => panic!("unpacked a hostile archive ({why})"),
        Err(e) => e.to_string(),
    };
    assert!(message.contains(why), "{message:?} does not say {why:?}");
    assert!(!target.exists());
    let left: Vec<_> = std::fs::read_dir(&parent).expect("list parent").collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let around: Vec<_> = std::fs::read_dir(&sandbox.root)
        .expect("list the root")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(around, ["out"], "written outside the target");
    assert!(!sandbox.dir.path().join("evil").exists());
}

#[test]
fn unpack_refuses_escaping_paths() {
    let limits = archive::LIMITS;
    assert_refused(
        &hostile(&[(b"../evil", EntryType::Regular, b"x")]),
        "../evil",
        limits,
    );
    assert_refused(
        &hostile(&[(b"a/../../evil", EntryType::Regular, b"x")]),
        "`..` component",
        limits,
    );
    assert_refused(
        &hostile(&[(b"/tmp/evil", EntryType::Regular, b"x")]),
        "not a relative path",
        limits,
    );
    assert_refused(
        &hostile(&[(b"./a", EntryType::Regular, b"x")]),
        "`.`",
        limits,
    );
    assert_refused(
        &hostile(&[(b".git/config", EntryType::Regular, b"x")]),
        "hidden",
        limits,
    );
}

#[test]
fn unpack_refuses_links_devices_fifos_and_extension_headers() {
    let limits = archive::LIMITS;
    assert_refused(
        &hostile(&[(b"link", EntryType::Symlink, b"")]),
        "link: is a symlink",
        limits,
    );
    assert_refused(
        &hostile(&[(b"hard", EntryType::Link, b"")]),
        "hard: is a hard link",
        limits,
    );
    assert_refused(
        &hostile(&[(b"dev", EntryType::Char, b"")]),
        "dev: is a device",
        limits,
    );
    assert_refused(
        &hostile(&[(b"blk", EntryType::Block, b"")]),
        "blk: is a device",
        limits,
    );
    assert_refused(
        &hostile(&[(b"fifo", EntryType::Fifo, b"")]),
        "fifo: is a FIFO",
        limits,
    );
    assert_refused(
        &hostile(&[(b"././@LongLink", EntryType::GNULongName, b"../../evil\0")]),
        "extension header",
        limits,
    );
    assert_refused(
        &hostile(&[(b"pax", EntryType::XHeader, b"20 path=../../evil\n")]),
        "extension header",
        limits,
    );
    // A link after good files: the good files are not left behind either.
    assert_refused(
        &hostile(&[
            (b"tools/", EntryType::Directory, b""),
            (b"tools/a.ts", EntryType::Regular, b"ok"),
            (b"tools/b.ts", EntryType::Symlink, b""),
        ]),
        "tools/b.ts: is a symlink",
        limits,
    );
}

#[test]
fn unpack_refuses_duplicates_and_paths_through_files() {
    let limits = archive::LIMITS;
    assert_refused(
        &hostile(&[
            (b"a.ts", EntryType::Regular, b"1"),
            (b"a.ts", EntryType::Regular, b"2"),
        ]),
        "appears twice",
        limits,
    );
    assert_refused(
        &hostile(&[
            (b"tools/", EntryType::Directory, b""),
            (b"tools", EntryType::Directory, b""),
        ]),
        "appears twice",
        limits,
    );
    assert_refused(
        &hostile(&[
            (b"tools", EntryType::Regular, b"x"),
            (b"tools/a.ts", EntryType::Regular, b"y"),
        ]),
        "beneath `tools`, which is a file",
        limits,
    );
    assert_refused(
        &hostile(&[
            (b"a/b/c", EntryType::Regular, b"x"),
            (b"a/b", EntryType::Regular, b"y"),
        ]),
        "already unpacked",
        limits,
    );
}

#[test]
fn unpack_refuses_gzip_bombs_and_too_many_entries() {
    let small = Limits {
        max_entries: 5,
        max_bytes: 1024 * 1024,
    };
    // 4 MiB of zeros compress to a few KiB.
    let zeros = vec![0u8; 4 * 1024 * 1024];
    let bomb = hostile(&[(b"zeros", EntryType::Regular, &zeros)]);
    assert!(bomb.len() < 64 * 1024, "{}", bomb.len());
    assert_refused(&bomb, "expands beyond", small);
    let many: Vec<(Vec<u8>, EntryType, &[u8])> = (0..6)
        .map(|i| (format!("f{i}").into_bytes(), EntryType::Regular, &b"x"[..]))
        .collect();
    let many: Vec<(&[u8], EntryType, &[u8])> = many
        .iter()
        .map(|(n, k, d)| (n.as_slice(), *k, *d))
        .collect();
    assert_refused(&hostile(&many), "more than 5 entries", small);
    assert_refused(b"not gzip at all", "not a package archive", small);
}

#[test]
fn unpack_never_replaces_an_existing_target() {
    let sandbox = Sandbox::new();
    let target = sandbox.root.join("pkg");
    std::fs::create_dir_all(&target).expect("create target");
    std::fs::write(target.join("keep"), "mine").expect("write keep");
    let bytes = hostile(&[(b"a.ts", EntryType::Regular, b"x")]);
    let result = archive::unpack(bytes.as_slice(), &target, archive::LIMITS);
    assert!(result.is_err_and(|e| e.to_string().contains("already exists")));
    assert_eq!(
        std::fs::read_to_string(target.join("keep")).ok().as_deref(),
        Some("mine")
    );
    let mut file = std::fs::File::create(sandbox.root.join("ok.tgz")).expect("create ok.tgz");
    file.write_all(&bytes).expect("write to file");
    archive::unpack(
        bytes.as_slice(),
        &sandbox.root.join("fresh"),
        archive::LIMITS,
    )
    .expect("unpack into fresh");
    assert_eq!(read(&sandbox.root.join("fresh/a.ts")), b"x");
}
