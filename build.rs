//! Lays out the release `splice` binary so the code a headless run executes sits together.
//!
//! The kernel maps an executable's code from the page cache in large blocks around each page
//! that runs, so scattered hot functions keep most of a 10 MB `.text` resident. Linking with
//! `link/headless.order` (written by `scripts/link_order.py`) puts those functions first and
//! halves the three-turn run's peak RSS (docs/benchmarks.md). A name that no longer exists is
//! skipped by the linker, so a stale list only costs memory, never a build.

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
    if ordering_applies() {
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
}

/// Only where the linker is known to take `--symbol-ordering-file`: release builds for
/// x86_64 Linux (GNU), whose default linker since Rust 1.90 is rust-lld, and no linker of the
/// person's own choosing (a configured linker or flags naming one); `SPLICE_LINK_ORDER=0`
/// turns it off.
fn ordering_applies() -> bool {
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
