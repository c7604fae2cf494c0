//! Codex 0.163.0 from the Python package `openai-codex-cli-bin` 0.163.0.
//!
//! The whole `codex_cli_bin/` folder is kept with its layout: Codex runs its commands
//! through the `codex-resources/bwrap` beside `bin/codex` (with the binary alone every
//! command fails with "bubblewrap is unavailable") and finds `codex-path/rg` there.

use std::path::Path;
use std::process::Command;

use agent_codex::pinned::VERSION as CODEX_VERSION;
use runner_testkit::agents::cache_root;

fn codex_cache_path() -> std::path::PathBuf {
    agent_codex::pinned::path_in(&cache_root())
}

const PACKAGE: &str = "openai-codex-cli-bin==0.163.0";
const FOLDER: &str = "codex_cli_bin";

/// Fetches Codex into the cache unless the cached one already answers its version.
pub(super) fn ensure() -> Result<(), String> {
    let codex = codex_cache_path();
    if super::version_of(&codex).as_deref() == Some(CODEX_VERSION) {
        println!("Codex {CODEX_VERSION}: cached at {}", codex.display());
        return Ok(());
    }
    fetch(&codex)?;
    println!("Codex {CODEX_VERSION}: installed at {}", codex.display());
    Ok(())
}

fn fetch(target: &Path) -> Result<(), String> {
    // target = <cache>/agents/codex-<version>/codex_cli_bin/bin/codex
    let version_folder = target
        .ancestors()
        .nth(3)
        .expect("the cache path has a version folder");
    let agents = version_folder
        .parent()
        .expect("the cache path has an agents folder");
    let fetched = super::download_wheel(agents, "codex", PACKAGE, "about 140 MB")?;
    let (work, wheel, pip) = (&fetched.work, &fetched.wheel, &fetched.python);
    let staged = work.path().join("codex");
    std::fs::create_dir_all(&staged).map_err(|e| format!("{}: {e}", staged.display()))?;
    extract_folder(pip, wheel, &staged)?;
    let staged_bin = staged.join(FOLDER).join("bin/codex");
    for needed in ["bin/codex", "codex-resources/bwrap", "codex-path/rg"] {
        let path = staged.join(FOLDER).join(needed);
        if !path.is_file() {
            return Err(format!(
                "the wheel has no {FOLDER}/{needed}: the package layout changed"
            ));
        }
    }
    let version = super::version_of(&staged_bin);
    if version.as_deref() != Some(CODEX_VERSION) {
        return Err(format!(
            "the packaged codex says version {version:?}, not {CODEX_VERSION}: the package changed"
        ));
    }
    super::install_folder(&staged, version_folder)
}

/// Unzips every member under `codex_cli_bin/` with Python's zipfile, keeping the
/// layout and the executable bits the wheel records. Member names are checked so a
/// bad wheel cannot write outside `dest`.
fn extract_folder(python: &[String], wheel: &Path, dest: &Path) -> Result<(), String> {
    const SCRIPT: &str = "import os, sys, zipfile, shutil\n\
        wheel, folder, dest = sys.argv[1], sys.argv[2], sys.argv[3]\n\
        with zipfile.ZipFile(wheel) as z:\n\
        \x20   for info in z.infolist():\n\
        \x20       name = info.filename\n\
        \x20       if not name.startswith(folder + '/') or name.endswith('/'):\n\
        \x20           continue\n\
        \x20       parts = name.split('/')\n\
        \x20       if '..' in parts or '' in parts or name.startswith('/'):\n\
        \x20           sys.exit('unsafe member name: ' + name)\n\
        \x20       out = os.path.join(dest, *parts)\n\
        \x20       os.makedirs(os.path.dirname(out), exist_ok=True)\n\
        \x20       with z.open(info) as src, open(out, 'wb') as f:\n\
        \x20           shutil.copyfileobj(src, f, 1 << 20)\n\
        \x20       mode = (info.external_attr >> 16) & 0o777\n\
        \x20       os.chmod(out, 0o755 if mode & 0o111 else 0o644)\n";
    let status = Command::new(&python[0])
        .args(&python[1..])
        .args(["-c", SCRIPT])
        .arg(wheel)
        .arg(FOLDER)
        .arg(dest)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", python[0]))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "extracting {FOLDER}/ from {} failed ({status})",
            wheel.display()
        ))
    }
}
