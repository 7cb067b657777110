//! Lays out the release `splice` binary so the code a headless run executes sits together.
//!
//! The kernel maps an executable's code from the page cache in large blocks around each page
//! that runs, so scattered hot functions keep most of a 10 MB `.text` resident. Linking with
//! `link/headless.order` (written by `scripts/link_order.py`) puts those functions first and
//! halves the three-turn run's peak RSS (docs/benchmarks.md). A name that no longer exists is
//! skipped by the linker, so a stale list only costs memory, never a build. Where glibc is
//! new enough, the relative relocations are packed too (DT_RELR).

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link/headless.order");
    for var in [
        "SPLICE_LINK_ORDER",
        "RUSTC_LINKER",
        "CARGO_ENCODED_RUSTFLAGS",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    if !linker_is_ours() {
        return;
    }
    if glibc_has_relr() {
        // 1.3 MB of relative relocations (`.rela.dyn`), which the loader reads whole at every
        // start, packed into 15 KB (DT_RELR; glibc 2.36+, where the build runs).
        println!("cargo:rustc-link-arg-bin=splice=-Wl,-z,pack-relative-relocs");
    }
    let manifest = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let order = Path::new(&manifest).join("link/headless.order");
    if order.is_file() {
        println!(
            "cargo:rustc-link-arg-bin=splice=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=splice=-Wl,--no-warn-symbol-ordering");
    }
}

/// Only where the linker is known to take `--symbol-ordering-file` and `-z
/// pack-relative-relocs`: release builds for x86_64 Linux (GNU), whose default linker since
/// Rust 1.90 is rust-lld, and no linker of the person's own choosing (a configured linker or
/// flags naming one); `SPLICE_LINK_ORDER=0` turns both off.
fn linker_is_ours() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    if var("SPLICE_LINK_ORDER") == "0" || var("PROFILE") != "release" {
        return false;
    }
    if var("TARGET") != "x86_64-unknown-linux-gnu" || env::var_os("RUSTC_LINKER").is_some() {
        return false;
    }
    let rustflags = var("CARGO_ENCODED_RUSTFLAGS");
    !(rustflags.contains("linker") || rustflags.contains("fuse-ld"))
}

/// Whether the C library of the machine building (and so, with `cargo install`, running)
/// Splice loads packed relocations: glibc 2.36 or later. A binary that uses them does not
/// start on an older glibc, so when in doubt, no.
fn glibc_has_relr() -> bool {
    if env::var("HOST").ok() != env::var("TARGET").ok() {
        return false;
    }
    let Ok(out) = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
    else {
        return false;
    };
    // "glibc 2.36"
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.trim().strip_prefix("glibc ").unwrap_or_default();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    out.status.success() && (major, minor) >= (2, 36)
}
