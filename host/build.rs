//! Builds the guest plugins in `plugins/` (their own workspace, target wasm32-wasip2) and copies
//! the built-in ones next to the host's build output, where `plugins::builtin` embeds them.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Built-in plugins: crate directory and the artifact it produces.
const BUILTINS: &[(&str, &str)] = &[
    ("broker-paper", "broker_paper.wasm"),
    ("broker-binance", "broker_binance.wasm"),
    ("broker-kraken", "broker_kraken.wasm"),
    ("broker-coinbase", "broker_coinbase.wasm"),
    ("broker-okx", "broker_okx.wasm"),
    ("broker-alpaca", "broker_alpaca.wasm"),
    ("strategy-ema-cross", "strategy_ema_cross.wasm"),
    ("strategy-apex", "strategy_apex.wasm"),
    ("risk-guards", "risk_guards.wasm"),
];

fn main() {
    let host =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = host
        .parent()
        .expect("host/ sits in the repository")
        .to_path_buf();
    let plugins = root.join("plugins");
    watch(&root.join("wit"));
    // The embedded migrations, and the schema `schema_checked!` checks queries against: a
    // migration added (not only one changed) rebuilds the crate.
    println!(
        "cargo:rerun-if-changed={}",
        root.join("migrations").display()
    );
    for entry in [
        ".cargo",
        "Cargo.toml",
        "Cargo.lock",
        "sdk",
        "testing",
        "paper-venue",
        "exchange-kit",
    ] {
        watch(&plugins.join(entry));
    }
    for (dir, _) in BUILTINS {
        watch(&plugins.join(dir));
    }

    let target_dir = plugins.join("target");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(&plugins)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--workspace",
            "--target-dir",
        ])
        .arg(&target_dir);
    // The outer build's wrappers and flags (clippy, coverage, host RUSTFLAGS) are not for guests.
    for variable in [
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
    ] {
        build.env_remove(variable);
    }
    let status = build.status().expect("cargo runs");
    if !status.success() {
        panic!(
            "building the plugins failed (is the wasm32-wasip2 target installed? `rustup target add wasm32-wasip2`)"
        );
    }

    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let built = target_dir.join("wasm32-wasip2").join("release");
    for (_, artifact) in BUILTINS {
        std::fs::copy(built.join(artifact), out.join(artifact))
            .unwrap_or_else(|err| panic!("{artifact}: {err}"));
    }
}

/// Re-run when anything under `path` changes, except build output.
fn watch(path: &Path) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
            let child = entry.path();
            if child.file_name().is_some_and(|name| name == "target") {
                continue;
            }
            watch(&child);
        }
    } else {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
