//! Ruff from PyPI: a real program run as an agent through a profile file (the tests'
//! `ruff-fix` profile: `ruff check --fix` on a Python repo, then diff and approve).

use std::path::PathBuf;

use runner_testkit::agents::cache_root;

/// The pinned Ruff.
pub const VERSION: &str = "0.17.6";
const PACKAGE: &str = "ruff==0.17.6";

/// Where the pinned Ruff goes: `<cache>/agents/ruff-<version>/ruff` (the tests look there).
fn cache_path() -> PathBuf {
    cache_root()
        .join("agents")
        .join(format!("ruff-{VERSION}"))
        .join("ruff")
}

/// Fetches Ruff into the cache unless the cached one already answers its version.
pub(super) fn ensure() -> Result<(), String> {
    let ruff = cache_path();
    if super::version_of(&ruff).as_deref() == Some(VERSION) {
        println!("Ruff {VERSION}: cached at {}", ruff.display());
        return Ok(());
    }
    let folder = ruff.parent().expect("the cache path has a folder");
    let agents = folder
        .parent()
        .expect("the cache path has an agents folder");
    let fetched = super::download_wheel(agents, "ruff", PACKAGE, "about 12 MB")?;
    let staged = fetched.work.path().join("ruff");
    std::fs::create_dir_all(&staged).map_err(|e| format!("{}: {e}", staged.display()))?;
    let member = format!("ruff-{VERSION}.data/scripts/ruff");
    super::extract_member(
        &fetched.python,
        &fetched.wheel,
        &member,
        &staged.join("ruff"),
    )?;
    let version = super::version_of(&staged.join("ruff"));
    if version.as_deref() != Some(VERSION) {
        return Err(format!(
            "the packaged ruff says version {version:?}, not {VERSION}: the package changed"
        ));
    }
    super::install_folder(&staged, folder)?;
    println!("Ruff {VERSION}: installed at {}", ruff.display());
    Ok(())
}
