//! pytest's pure-Python wheels, pinned, for the tests of a repo with its own venv: a test
//! unpacks them into the checkout's venv, whose `python -m pytest` the agent runs in its box.

use std::path::PathBuf;
use std::process::Command;

use runner_testkit::agents::cache_root;

/// The pinned packages (pytest and what it imports), each a `py3-none-any` wheel.
pub const PACKAGES: &[&str] = &[
    "pytest==8.3.5",
    "pluggy==1.5.0",
    "iniconfig==2.0.0",
    "packaging==24.2",
];

/// Where the wheels go: `<cache>/wheels/pytest-8.3.5/` (the tests look there).
pub fn cache_path() -> PathBuf {
    cache_root().join("wheels").join("pytest-8.3.5")
}

/// Fetches the wheels into the cache unless every one is there.
pub(super) fn ensure() -> Result<(), String> {
    let folder = cache_path();
    let present = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".whl"))
                    .count()
            })
            .unwrap_or(0)
            == PACKAGES.len()
    };
    if present(&folder) {
        println!("pytest wheels: cached at {}", folder.display());
        return Ok(());
    }
    let parent = folder.parent().expect("the cache path has a folder");
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let work = tempfile::Builder::new()
        .prefix(".pytest-fetch-")
        .tempdir_in(parent)
        .map_err(|e| format!("temp folder in {}: {e}", parent.display()))?;
    println!("fetching pytest's wheels with pip (about 1 MB)…");
    let pip = super::python();
    let status = Command::new(&pip[0])
        .args(&pip[1..])
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
            "-q",
            "--only-binary",
            ":all:",
        ])
        .arg("-d")
        .arg(work.path())
        .args(PACKAGES)
        .status()
        .map_err(|e| format!("cannot run {}: {e} (install Python 3 with pip)", pip[0]))?;
    if !status.success() || !present(work.path()) {
        return Err(format!("pip download of {PACKAGES:?} failed ({status})"));
    }
    super::install_folder(&work.keep(), &folder)?;
    println!("pytest wheels: cached at {}", folder.display());
    Ok(())
}
