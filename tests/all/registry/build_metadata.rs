//! A publisher sneaks a second build of a published version into the registry: after
//! `NS/r1@1.0.0`, an upload of `1.0.0+evil` (the same precedence, so `@^1.0` could resolve to
//! either). The real server refuses it whatever the client sends, the real client refuses to
//! pack it, and an index that already holds such a version (from before the rule) never
//! resolves a range to it.

use crate::support;

use reqwest::StatusCode;
use splice::packages::archive;
use splice_registry::db::{self, Db, Inserted, VersionRow};
use support::{Sandbox, run_raw};

use crate::registry::client::json_of;
use crate::registry::server::{Registry, block, databases, error_code, package, unique};

/// `splice pkg install SPEC --registry URL --json` in the registry's sandbox.
fn install(registry: &Registry, spec: &str) -> support::Outcome {
    let mut command = registry.sandbox.command("http://127.0.0.1:9");
    command.args([
        "pkg",
        "install",
        spec,
        "--registry",
        &registry.url,
        "--json",
    ]);
    run_raw(command, None)
}

/// A registry where a user owning a namespace of its own has published `NS/r1@1.0.0`: the
/// registry, the namespace, the user, its token and the archive.
struct Published {
    registry: Registry,
    ns: String,
    user: String,
    token: String,
    archive: Vec<u8>,
}

fn published(database: Option<&str>) -> Published {
    let registry = Registry::start(database);
    let (user, ns) = (unique("mallory"), unique("acme"));
    registry.add_user(&user, &ns);
    let token = registry.login(&user);
    let archive = package(&registry.sandbox, &ns, "r1", "1.0.0", "The real one");
    let (status, body) = registry.publish(Some(&token), (&ns, "r1", "1.0.0"), archive.clone());
    assert_eq!(status, StatusCode::CREATED, "{body}");
    Published {
        registry,
        ns,
        user,
        token,
        archive,
    }
}

fn listed_versions(registry: &Registry, id: &str) -> Vec<String> {
    let (status, listing) = registry.get(&format!("/api/v1/packages/{id}"));
    assert_eq!(status, StatusCode::OK, "{listing}");
    listing["versions"]
        .as_array()
        .map(|v| {
            v.iter()
                .filter_map(|v| v["version"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_build_metadata_twin_of_a_published_version_is_refused_and_ranges_keep_the_original() {
    for database in databases() {
        let Published {
            registry,
            ns,
            token,
            ..
        } = published(database.as_deref());
        let id = format!("{ns}/r1");

        // A raw upload, as a hostile client sends it: a deterministic pack whose manifest and
        // URL both say 1.0.0+evil. Refused with a reason, and nothing is recorded.
        let evil = package(&registry.sandbox, &ns, "r1", "1.0.0+evil", "The evil one");
        let (status, body) = registry.publish(Some(&token), (&ns, "r1", "1.0.0+evil"), evil);
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(error_code(&body), "invalid_package", "{body}");
        let issues = body["error"]["issues"].to_string();
        assert!(issues.contains("build metadata"), "{body}");
        assert!(issues.contains("1.0.0+evil"), "{body}");
        // The same manifest under a clean URL version is refused too (the manifest's rule).
        let evil = package(&registry.sandbox, &ns, "r1", "1.0.0+evil", "The evil one");
        let (status, body) = registry.publish(Some(&token), (&ns, "r1", "1.0.1"), evil);
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(body.to_string().contains("build metadata"), "{body}");
        assert_eq!(listed_versions(&registry, &id), ["1.0.0"]);

        // The range resolves to the one real version.
        let installed = install(&registry, &format!("{id}@^1.0"));
        assert_eq!(installed.code, 0, "{}", installed.stderr);
        assert_eq!(
            json_of(&installed)["version"],
            "1.0.0",
            "{}",
            installed.stdout
        );
    }
}

/// The client refuses to pack or publish such a version before anything is sent.
#[test]
fn the_client_refuses_to_publish_a_version_with_build_metadata() {
    let sandbox = Sandbox::new();
    // The official json package, valid in every other respect.
    let dir = crate::registry::client::package(&sandbox, "1.0.0+evil");
    for args in [
        vec!["publish", "--dry-run", "--registry", "http://127.0.0.1:9"],
        vec!["pkg", "pack"],
    ] {
        let mut command = sandbox.command("http://127.0.0.1:9");
        command.args(&args).arg(&dir);
        let out = run_raw(command, None);
        assert_eq!(out.code, 2, "{args:?}: {} {}", out.stdout, out.stderr);
        assert!(out.stderr.contains("build metadata"), "{}", out.stderr);
    }
}

/// An index that already holds `1.0.1+evil` (written before the rule, here straight into the
/// database): no range, no latest and no search resolves to it.
#[test]
fn a_build_metadata_version_already_in_the_index_is_never_resolved() {
    for database in databases() {
        let Published {
            registry,
            ns,
            user,
            archive: good,
            ..
        } = published(database.as_deref());
        let id = format!("{ns}/r1");
        let sha256 = archive::sha256_hex(&good);
        let size = i64::try_from(good.len()).unwrap_or(i64::MAX);
        let url = registry
            .database
            .clone()
            .unwrap_or_else(|| db::default_url(&registry.data));
        block(async {
            let index = Db::open(&url).await.expect("open the registry database");
            let row = VersionRow {
                id: id.clone(),
                version: "1.0.1+evil".into(),
                sha256,
                size,
                publisher: user.clone(),
                published_ms: 0,
                client_version: String::new(),
                manifest: "{}".into(),
                yanked: false,
            };
            let done = index.insert_version(&row, &ns, "r1", "The real one").await;
            assert_eq!(done.expect("a request of the burst"), Inserted::Done);
        });
        assert_eq!(listed_versions(&registry, &id), ["1.0.1+evil", "1.0.0"]);

        for spec in [format!("{id}@^1.0"), id.clone()] {
            let installed = install(&registry, &spec);
            assert_eq!(installed.code, 0, "{spec}: {}", installed.stderr);
            assert_eq!(json_of(&installed)["version"], "1.0.0", "{spec}");
        }
        let (_, found) = registry.get(&format!("/api/v1/search?q={ns}"));
        assert_eq!(found["packages"][0]["latest"], "1.0.0", "{found}");
        // Asked for by name, it is a usage error rather than a download.
        let named = install(&registry, &format!("{id}@1.0.1+evil"));
        assert_ne!(named.code, 0, "{}", named.stdout);
        assert!(
            !registry
                .sandbox
                .data
                .join(format!("packages/{id}/1.0.1+evil"))
                .exists()
        );
    }
}
