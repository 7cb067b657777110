//! The registry with its archives in S3-compatible object storage (`registry serve --blobs
//! s3://BUCKET/PREFIX`) against moto's server on loopback, both sides the real binary: the
//! archive lands in the bucket under its sha256 and nowhere under --data, installs verified,
//! is never replaced (a republish, a key already holding other bytes), an archive altered in
//! the bucket installs nothing, and a store that cannot be used stops the server at start.

use crate::support;

use std::path::Path;
use std::process::Command;

use serde_json::json;
use splice::packages::archive::{self, sha256_hex};
use support::moto::Moto;
use support::{Outcome, Sandbox, run_raw};

use crate::registry::client::{
    Backend, Server, find_file_containing, json_of, login, package, publish, splice,
};
use crate::registry::server::unique;

const PREFIX: &str = "registry/prod";

/// A moto server with a new bucket, and a registry whose archives go to `PREFIX` in it, with
/// `alice` logged in.
fn started(sandbox: &Sandbox) -> (Moto, String, Server) {
    let moto = Moto::start();
    let bucket = unique("archives");
    moto.create_bucket(&bucket);
    let backend = Backend {
        postgres: None,
        blobs: Some((format!("s3://{bucket}/{PREFIX}/"), moto.env())),
    };
    let server = Server::start_on(sandbox, 30, backend);
    let (_, _, done) = login(sandbox, &server, Some("approve"));
    assert_eq!(done.code, 0, "{}", done.stderr);
    (moto, bucket, server)
}

fn key(sha256: &str) -> String {
    format!("{PREFIX}/sha256/{sha256}")
}

/// `pkg info acme/json@VERSION --json`'s sha256.
fn published_sha256(sandbox: &Sandbox, server: &Server, version: &str) -> String {
    let id = format!("acme/json@{version}");
    let info = splice(
        sandbox,
        &["pkg", "info", &id, "--registry", &server.url, "--json"],
    );
    assert_eq!(info.code, 0, "{}", info.stderr);
    let sha256 = json_of(&info)["sha256"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(sha256.len(), 64, "{}", info.stdout);
    sha256
}

fn install(sandbox: &Sandbox, server: &Server, id: &str) -> Outcome {
    splice(
        sandbox,
        &["pkg", "install", id, "--registry", &server.url, "--json"],
    )
}

#[test]
fn a_published_archive_lives_in_the_bucket_under_its_sha256_and_installs_verified() {
    let sandbox = Sandbox::new();
    let (moto, bucket, server) = started(&sandbox);
    let dir = package(&sandbox, "0.1.0");
    let out = publish(&sandbox, &server, &dir);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sha256 = published_sha256(&sandbox, &server, "0.1.0");

    // In the bucket, read back over the S3 API: the bytes are the archive the key names.
    let stored = moto
        .read(&bucket, &key(&sha256))
        .unwrap_or_else(|| panic!("no object {} in {bucket}", key(&sha256)));
    assert_eq!(sha256_hex(&stored), sha256);
    assert_eq!(stored, archive::pack(&dir).expect("pack dir").bytes);
    // And not on disk: --data holds the index only.
    assert_eq!(find_file_containing(&server.data, &sha256), None);
    assert!(!server.data.join("blobs").exists());

    // A republish is refused, naming the version, and the object is unchanged.
    let again = publish(&sandbox, &server, &dir);
    assert_ne!(again.code, 0);
    assert!(again.stderr.contains("acme/json@0.1.0"), "{}", again.stderr);
    assert_eq!(moto.read(&bucket, &key(&sha256)), Some(stored));

    let installed = install(&sandbox, &server, "acme/json@0.1.0");
    assert_eq!(installed.code, 0, "{}", installed.stderr);
    let installed = json_of(&installed);
    assert_eq!(installed["status"], "installed");
    assert_eq!(installed["sha256"], json!(sha256));
    assert!(
        sandbox
            .data
            .join("packages/acme/json/0.1.0/manifest.json")
            .is_file()
    );
}

/// Someone with write access to the bucket swaps the archive for another valid package: the
/// install downloads it, finds the sha256 is not the one the index recorded, installs nothing.
#[test]
fn an_archive_altered_in_the_bucket_installs_nothing() {
    let sandbox = Sandbox::new();
    let (moto, bucket, server) = started(&sandbox);
    let out = publish(&sandbox, &server, &package(&sandbox, "0.1.0"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sha256 = published_sha256(&sandbox, &server, "0.1.0");
    let other = archive::pack(&package(&sandbox, "0.2.0"))
        .expect("pack version 0.2.0")
        .bytes;
    assert_ne!(sha256_hex(&other), sha256);
    moto.write(&bucket, &key(&sha256), other.clone());
    assert_eq!(moto.read(&bucket, &key(&sha256)), Some(other));

    let out = install(&sandbox, &server, "acme/json@0.1.0");
    assert_eq!(out.code, 1, "{} {}", out.stdout, out.stderr);
    assert!(out.stderr.contains(&sha256), "{}", out.stderr);
    assert!(
        out.stderr.contains("nothing was installed"),
        "{}",
        out.stderr
    );
    assert!(!sandbox.data.join("packages/acme").exists());
}

/// A key that already holds other bytes is never overwritten: the conditional put finds it
/// taken, the server reads it, sees it is not this archive, and refuses the publish. A key
/// that already holds this archive is taken as stored.
#[test]
fn a_taken_key_is_never_overwritten_and_counts_as_stored_only_when_it_holds_the_archive() {
    let sandbox = Sandbox::new();
    let (moto, bucket, server) = started(&sandbox);
    let dir = package(&sandbox, "0.1.0");
    let sha256 = sha256_hex(&archive::pack(&dir).expect("pack dir").bytes);
    let squatter = b"not the archive".to_vec();
    moto.write(&bucket, &key(&sha256), squatter.clone());

    let out = publish(&sandbox, &server, &dir);
    assert_ne!(out.code, 0, "{}", out.stderr);
    assert_eq!(moto.read(&bucket, &key(&sha256)), Some(squatter));
    // Nothing entered the index either: there is no such version.
    let info = splice(
        &sandbox,
        &[
            "pkg",
            "info",
            "acme/json@0.1.0",
            "--registry",
            &server.url,
            "--json",
        ],
    );
    assert_ne!(info.code, 0, "{}", info.stdout);

    // A key already holding the very archive (left by an earlier registry on this bucket):
    // the put finds it taken, reads it, and takes it as stored.
    let dir = package(&sandbox, "0.2.0");
    let bytes = archive::pack(&dir).expect("pack dir").bytes;
    moto.write(&bucket, &key(&sha256_hex(&bytes)), bytes.clone());
    let out = publish(&sandbox, &server, &dir);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        published_sha256(&sandbox, &server, "0.2.0"),
        sha256_hex(&bytes)
    );
    let installed = install(&sandbox, &server, "acme/json@0.2.0");
    assert_eq!(installed.code, 0, "{}", installed.stderr);
}

/// `registry serve --blobs URL` with `env`, expected to stop at start.
fn serve(data: &Path, url: &str, env: &[(&'static str, String)]) -> Outcome {
    crate::support::need_registry_server();
    let mut command = Command::new(env!("CARGO_BIN_EXE_splice"));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .args(["registry", "serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(data)
        .args(["--blobs", url])
        .envs(env.iter().cloned());
    run_raw(command, None)
}

#[test]
fn a_store_that_cannot_be_used_stops_the_server_at_start() {
    let sandbox = Sandbox::new();
    let data = sandbox.dir.path().join("registry");
    let moto = Moto::start();

    // Not an s3:// URL, or not a bucket name: usage errors, before anything is contacted.
    for bad in [
        "http://127.0.0.1:9/archives",
        "s3://Not_A_Bucket",
        "s3://ok-bucket/../up",
    ] {
        let out = serve(&data, bad, &moto.env());
        assert_eq!(out.code, 2, "{bad}: {}", out.stderr);
        assert!(out.stderr.contains("--blobs"), "{bad}: {}", out.stderr);
        assert_eq!(out.stdout, "", "{bad}");
    }

    // A bucket that does not exist.
    let missing = unique("missing");
    let out = serve(&data, &format!("s3://{missing}"), &moto.env());
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains(&missing), "{}", out.stderr);
    assert!(
        out.stderr.contains("check that the bucket exists"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout, "");

    // Nothing listening at the endpoint.
    let mut nowhere = moto.env();
    nowhere[0].1 = "http://127.0.0.1:9".to_string();
    let bucket = unique("archives");
    moto.create_bucket(&bucket);
    let out = serve(&data, &format!("s3://{bucket}"), &nowhere);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("AWS_ENDPOINT_URL"), "{}", out.stderr);
    assert_eq!(out.stdout, "");

    // The bucket exists, but moto checks keys after its first request and knows none of ours.
    let strict = Moto::start_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", "1")]);
    strict.create_bucket(&bucket);
    let out = serve(&data, &format!("s3://{bucket}"), &strict.env());
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("InvalidAccessKeyId"), "{}", out.stderr);
    assert!(!out.stderr.contains(support::moto::SECRET_KEY));
    assert_eq!(out.stdout, "");
    // The same bucket with the right environment serves (the failures above were the store's).
    let good = Moto::start();
    good.create_bucket(&bucket);
    let server = Server::start_on(
        &sandbox,
        30,
        Backend {
            postgres: None,
            blobs: Some((format!("s3://{bucket}"), good.env())),
        },
    );
    assert!(server.url.starts_with("http://127.0.0.1:"));
}
