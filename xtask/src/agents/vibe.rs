//! Mistral Vibe 2.26.1 from PyPI, in a venv of its own with every package pinned
//! (`agent_vibe::install` has the pins and the layout). It needs Python 3.12 or newer, which
//! is found on PATH (`python3.13`, `python3.12`, `python3`), in pyenv's versions, or named by
//! `CODEHANDS_VIBE_PYTHON`; without one the install stops saying so.
//!
//! As for mini-swe-agent, the venv is built where it stays, in a hidden folder
//! `.mistral-vibe-<version>-<random>`, and only then is the link `mistral-vibe-<version>`
//! renamed into place: an interrupted install leaves nothing that looks installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use agent_vibe::install::{self, MIN_PYTHON, VERSION};
use runner_testkit::agents::cache_root;

/// The variable naming a Python 3.12+ to build the venv with.
const PYTHON_VAR: &str = "CODEHANDS_VIBE_PYTHON";

/// Installs Mistral Vibe into the cache unless the installed one is whole and pinned.
pub(super) fn ensure() -> Result<(), String> {
    let folder = install::folder(&cache_root());
    if is_installed(&folder) {
        println!("Mistral Vibe {VERSION}: cached at {}", folder.display());
        return Ok(());
    }
    build(&folder)?;
    println!("Mistral Vibe {VERSION}: installed at {}", folder.display());
    Ok(())
}

/// The link is there, and the venv says the pinned version.
fn is_installed(folder: &Path) -> bool {
    install::program(folder).is_file()
        && super::package_version(&folder.join("venv"), "mistral-vibe").as_deref() == Some(VERSION)
}

/// The `major.minor` of a Python, if it runs.
fn python_version(python: &Path) -> Option<(u32, u32)> {
    let output = Command::new(python)
        .args(["-c", "import sys; print('%d %d' % sys.version_info[:2])"])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut words = text.split_whitespace().map(str::parse::<u32>);
    Some((words.next()?.ok()?, words.next()?.ok()?))
}

/// Every Python worth asking, the tested 3.12 first: on PATH, then pyenv's versions from
/// the oldest.
fn candidates() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = ["python3.12", "python3.13", "python3"]
        .into_iter()
        .map(PathBuf::from)
        .collect();
    let roots = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .into_iter()
        .chain(std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")));
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root.join("versions")) else {
            continue;
        };
        let mut versions: Vec<(Vec<u32>, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let number = e
                    .file_name()
                    .to_str()?
                    .split('.')
                    .map(str::parse::<u32>)
                    .collect::<Result<Vec<u32>, _>>()
                    .ok()?;
                Some((number, e.path().join("bin/python3")))
            })
            .filter(|(_, p)| p.is_file())
            .collect();
        versions.sort();
        found.extend(versions.into_iter().map(|(_, p)| p));
    }
    found
}

/// A Python new enough for Vibe, or why there is none.
fn find_python() -> Result<PathBuf, String> {
    let wanted = format!("{}.{}", MIN_PYTHON.0, MIN_PYTHON.1);
    if let Some(named) = std::env::var_os(PYTHON_VAR).filter(|v| !v.is_empty()) {
        let named = PathBuf::from(named);
        return match python_version(&named) {
            Some(v) if v >= MIN_PYTHON => Ok(named),
            Some((major, minor)) => Err(format!(
                "{PYTHON_VAR} names Python {major}.{minor} ({}); Mistral Vibe {VERSION} needs {wanted} or newer",
                named.display()
            )),
            None => Err(format!(
                "{PYTHON_VAR} names {}, which does not run",
                named.display()
            )),
        };
    }
    let mut seen = Vec::new();
    for candidate in candidates() {
        match python_version(&candidate) {
            Some(v) if v >= MIN_PYTHON => return Ok(candidate),
            Some((major, minor)) => seen.push(format!("{} ({major}.{minor})", candidate.display())),
            None => {}
        }
    }
    Err(format!(
        "Mistral Vibe {VERSION} needs Python {wanted} or newer, and none was found (seen: {}): \
         install one (for example `pyenv install 3.12`) or name it with {PYTHON_VAR}=/path/to/python3",
        if seen.is_empty() {
            "no Python at all".to_owned()
        } else {
            seen.join(", ")
        }
    ))
}

fn build(folder: &Path) -> Result<(), String> {
    let python = find_python()?;
    let agents = folder.parent().expect("the install folder has a parent");
    std::fs::create_dir_all(agents).map_err(|e| format!("{}: {e}", agents.display()))?;
    let prefix = format!(".mistral-vibe-{VERSION}-");
    super::mini_swe::remove_stale(agents, &prefix, folder)?;
    let work = tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(agents)
        .map_err(|e| format!("temp folder in {}: {e}", agents.display()))?;
    let venv = work.path().join("venv");
    println!(
        "making a venv for Mistral Vibe {VERSION} with {}…",
        python.display()
    );
    super::mini_swe::run(Command::new(&python).args(["-m", "venv"]).arg(&venv))?;
    let requirements = work.path().join("requirements.txt");
    std::fs::write(&requirements, install::REQUIREMENTS)
        .map_err(|e| format!("{}: {e}", requirements.display()))?;
    let pip = |args: &[&str]| {
        let mut command = Command::new(venv.join("bin/python"));
        command.args(["-m", "pip", "--disable-pip-version-check", "--no-input"]);
        command.args(args);
        command
    };
    println!("installing Mistral Vibe {VERSION} and its pinned packages with pip (about 400 MB)…");
    super::mini_swe::run(pip(&["install", "-q", "--no-deps", "-r"]).arg(&requirements))?;
    // --no-deps installs exactly the pins; this says if they no longer fit together.
    super::mini_swe::run(&mut pip(&["check"]))?;
    if super::package_version(&venv, "mistral-vibe").as_deref() != Some(VERSION) {
        return Err(format!(
            "the venv does not hold mistral-vibe {VERSION}: the pins changed"
        ));
    }
    check_runs(&venv)?;

    // Everything is in place: keep the folder and point the link at it.
    let built = work.keep();
    let name = built
        .file_name()
        .expect("a temp folder has a name")
        .to_owned();
    let link = agents.join(format!(
        ".mistral-vibe-{VERSION}.link-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&name, &link).map_err(|e| format!("{}: {e}", link.display()))?;
    if folder.is_dir() && !folder.is_symlink() {
        std::fs::remove_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    }
    std::fs::rename(&link, folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    super::mini_swe::remove_stale(agents, &prefix, folder)
}

/// `vibe-acp --version` runs and names the pinned version (with a throwaway VIBE_HOME, so
/// nothing is made in HOME).
fn check_runs(venv: &Path) -> Result<(), String> {
    let home = tempfile::tempdir().map_err(|e| format!("temp folder: {e}"))?;
    let output = Command::new(venv.join("bin/vibe-acp"))
        .arg("--version")
        .env("VIBE_HOME", home.path().join("vibe"))
        .env("VIBE_ENABLE_TELEMETRY", "false")
        .output()
        .map_err(|e| format!("cannot run vibe-acp: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if output.status.success() && text.contains(VERSION) {
        Ok(())
    } else {
        Err(format!(
            "the installed vibe-acp does not run: {}{}",
            text,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}
