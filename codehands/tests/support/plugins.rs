//! The sample plugin libraries (agent-plugin-abi/samples/), built by cargo for the
//! profile these tests run in, so every test loads real shared libraries.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The samples, by folder name.
const SAMPLES: &[&str] = &["tee", "panics", "garbage", "abi-v99", "no-entry"];

/// The library of the sample `name` (for example `tee`), built on first use.
pub fn sample(name: &str) -> PathBuf {
    assert!(SAMPLES.contains(&name), "no sample plugin {name}");
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(build)
        .join(format!("libplugin_sample_{}.so", name.replace('-', "_")))
}

/// Builds every sample with `cargo build` into this test's target folder; the folder of
/// the libraries.
fn build() -> PathBuf {
    // target/<profile>/deps/<this test>
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
    let target_dir = profile_dir.parent().unwrap();
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "--quiet", "--profile", profile, "--target-dir"])
        .arg(target_dir)
        .current_dir(workspace);
    for sample in SAMPLES {
        cmd.args(["-p", &format!("plugin-sample-{sample}")]);
    }
    let status = cmd.status().unwrap();
    assert!(status.success(), "building the sample plugins failed");
    profile_dir
}
