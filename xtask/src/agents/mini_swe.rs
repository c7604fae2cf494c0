//! mini-swe-agent 2.4.6 from PyPI, in a venv of its own with every package pinned
//! (`agent_mini_swe::install` has the pins and the layout).
//!
//! A venv cannot move (its scripts name its Python by absolute path), so it is
//! built where it stays, in a hidden folder `.mini-swe-agent-<version>-<random>`,
//! and only then is the link `mini-swe-agent-<version>` renamed into place: an
//! interrupted install leaves a hidden folder (removed by the next run) and nothing
//! that looks installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use agent_mini_swe::install::{self, VERSION};
use runner_testkit::agents::cache_root;

/// Installs mini-swe-agent into the cache unless the installed one is whole and pinned.
pub(super) fn ensure() -> Result<(), String> {
    let folder = install::folder(&cache_root());
    if is_installed(&folder) {
        println!("mini-swe-agent {VERSION}: cached at {}", folder.display());
        return Ok(());
    }
    build(&folder)?;
    println!(
        "mini-swe-agent {VERSION}: installed at {}",
        folder.display()
    );
    Ok(())
}

/// The link is there, the venv says the pinned version, and the config folder is whole.
fn is_installed(folder: &Path) -> bool {
    let config = install::config_dir(folder);
    install::program(folder).is_file()
        && config.join(install::DEFAULT_CONFIG).is_file()
        && std::fs::read_link(config.join(install::STDIN_CONFIG))
            .is_ok_and(|target| target == Path::new("/dev/stdin"))
        && super::package_version(&folder.join("venv"), "mini-swe-agent").as_deref()
            == Some(VERSION)
}

fn build(folder: &Path) -> Result<(), String> {
    let agents = folder.parent().expect("the install folder has a parent");
    std::fs::create_dir_all(agents).map_err(|e| format!("{}: {e}", agents.display()))?;
    let prefix = format!(".mini-swe-agent-{VERSION}-");
    remove_stale(agents, &prefix, folder)?;
    let work = tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(agents)
        .map_err(|e| format!("temp folder in {}: {e}", agents.display()))?;
    let venv = work.path().join("venv");
    let python = super::python();
    println!(
        "making a venv for mini-swe-agent {VERSION} with {}…",
        python[0]
    );
    run(Command::new(&python[0])
        .args(&python[1..])
        .args(["-m", "venv"])
        .arg(&venv))?;

    let requirements = work.path().join("requirements.txt");
    std::fs::write(&requirements, install::REQUIREMENTS)
        .map_err(|e| format!("{}: {e}", requirements.display()))?;
    let pip = |args: &[&str]| {
        let mut command = Command::new(venv.join("bin/python"));
        command.args(["-m", "pip", "--disable-pip-version-check", "--no-input"]);
        command.args(args);
        command
    };
    println!(
        "installing mini-swe-agent {VERSION} and its pinned packages with pip (about 750 MB)…"
    );
    run(pip(&["install", "-q", "--no-deps", "-r"]).arg(&requirements))?;
    // --no-deps installs exactly the pins; this says if they no longer fit together.
    run(&mut pip(&["check"]))?;
    if super::package_version(&venv, "mini-swe-agent").as_deref() != Some(VERSION) {
        return Err(format!(
            "the venv does not hold mini-swe-agent {VERSION}: the pins changed"
        ));
    }

    let config = work.path().join("config");
    std::fs::create_dir_all(&config).map_err(|e| format!("{}: {e}", config.display()))?;
    let builtin = package_dir(&venv)?
        .join("config")
        .join(install::DEFAULT_CONFIG);
    std::fs::copy(&builtin, config.join(install::DEFAULT_CONFIG))
        .map_err(|e| format!("copying {}: {e}", builtin.display()))?;
    std::os::unix::fs::symlink("/dev/stdin", config.join(install::STDIN_CONFIG))
        .map_err(|e| format!("{}: {e}", config.display()))?;
    check_runs(&venv, work.path())?;

    // Everything is in place: keep the folder and point the link at it.
    let built = work.keep();
    let name = built
        .file_name()
        .expect("a temp folder has a name")
        .to_owned();
    let link = agents.join(format!(
        ".mini-swe-agent-{VERSION}.link-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&name, &link).map_err(|e| format!("{}: {e}", link.display()))?;
    if folder.is_dir() && !folder.is_symlink() {
        std::fs::remove_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    }
    std::fs::rename(&link, folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    remove_stale(agents, &prefix, folder)
}

/// Removes the hidden folders of earlier or interrupted installs that the link
/// does not point at.
pub(super) fn remove_stale(agents: &Path, prefix: &str, folder: &Path) -> Result<(), String> {
    let current = std::fs::read_link(folder).ok();
    let entries = std::fs::read_dir(agents).map_err(|e| format!("{}: {e}", agents.display()))?;
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let stale = name.to_str().is_some_and(|n| n.starts_with(prefix))
            && current.as_deref() != Some(Path::new(&name));
        if stale {
            let path = entry.path();
            println!("removing an unfinished or old install: {}", path.display());
            std::fs::remove_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// Where the installed `minisweagent` package is (found without importing it).
fn package_dir(venv: &Path) -> Result<PathBuf, String> {
    let output = Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import importlib.util; print(importlib.util.find_spec('minisweagent').submodule_search_locations[0])",
        ])
        .output()
        .map_err(|e| format!("cannot run the venv's python: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "the venv has no minisweagent package: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(PathBuf::from(
        String::from_utf8_lossy(&output.stdout).trim(),
    ))
}

/// `mini --help` runs (with a throwaway config folder instead of the one in HOME).
fn check_runs(venv: &Path, work: &Path) -> Result<(), String> {
    let output = Command::new(venv.join("bin/mini"))
        .arg("--help")
        .env("MSWEA_GLOBAL_CONFIG_DIR", work.join("check-config"))
        .env("MSWEA_SILENT_STARTUP", "1")
        .output()
        .map_err(|e| format!("cannot run mini: {e}"))?;
    let _ = std::fs::remove_dir_all(work.join("check-config"));
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "the installed mini does not run: {}",
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

pub(super) fn run(command: &mut Command) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed ({status})"))
    }
}
