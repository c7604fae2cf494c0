//! Building workspace packages from a test: the shared libraries (plugins) and programs a
//! test loads or runs, made by cargo into the target folder and profile the test binary
//! itself was built in, so nothing is built twice.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `cargo build -p …` for `packages` from `manifest_dir` (a folder of the workspace,
/// usually the caller's `env!("CARGO_MANIFEST_DIR")`) and returns the profile's folder
/// (`target/debug` under `cargo test`), where the libraries and binaries land.
pub fn build(manifest_dir: impl AsRef<Path>, packages: &[&str]) -> PathBuf {
    build_with_features(manifest_dir, packages, &[])
}

/// [`build`] with `features` turned on (`--features`, names of the packages' own features,
/// such as a test-only hook that no shipped build has).
pub fn build_with_features(
    manifest_dir: impl AsRef<Path>,
    packages: &[&str],
    features: &[&str],
) -> PathBuf {
    // A test binary is target/<profile folder>/deps/<name>-<hash>.
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test binary under target/<profile>/deps")
        .to_path_buf();
    let target_dir = profile_dir.parent().expect("the target folder");
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "--quiet", "--profile", profile, "--target-dir"])
        .arg(target_dir)
        .current_dir(manifest_dir);
    for package in packages {
        cmd.args(["-p", package]);
    }
    if !features.is_empty() {
        cmd.arg("--features").arg(features.join(","));
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cargo}: {e}"));
    assert!(status.success(), "cargo build of {packages:?} failed");
    profile_dir
}
