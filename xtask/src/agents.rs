//! `cargo xtask agents`: fetches the pinned agent CLIs into the cache, checking the
//! cache first. Claude Code 2.1.332 comes from the Python package
//! `claude-agent-sdk` 0.2.189, which ships it as `claude_agent_sdk/_bundled/claude`;
//! Codex 0.163.0 from `openai-codex-cli-bin` 0.163.0 (see `agents/codex.rs`); Ruff, run
//! as an agent through a profile file in the tests (see `agents/ruff.rs`); mini-swe-agent
//! 2.4.6 from PyPI into a venv of pinned packages (`agents/mini_swe.rs`); Mistral Vibe 2.26.1
//! likewise, in a venv of Python 3.12 or newer (`agents/vibe.rs`); the ACP Python SDK 0.12.1,
//! the client of `codehands acp`'s tests, in a venv (`agents/acp_sdk.rs`).

mod acp_sdk;
mod codex;
mod mini_swe;
mod pytest;
mod ruff;
mod vibe;

use std::path::{Path, PathBuf};
use std::process::Command;

use agent_claude::pinned::VERSION as CLAUDE_VERSION;
use runner_testkit::agents::cache_root;

fn claude_cache_path() -> PathBuf {
    agent_claude::pinned::path_in(&cache_root())
}

const SDK_PACKAGE: &str = "claude-agent-sdk==0.2.189";
const BUNDLED_MEMBER: &str = "claude_agent_sdk/_bundled/claude";

/// Runs the task.
pub fn run(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask agents".into());
    }
    let claude = claude_cache_path();
    if version_of(&claude).as_deref() == Some(CLAUDE_VERSION) {
        println!(
            "Claude Code {CLAUDE_VERSION}: cached at {}",
            claude.display()
        );
    } else {
        fetch_claude(&claude)?;
        println!(
            "Claude Code {CLAUDE_VERSION}: installed at {}",
            claude.display()
        );
    }
    codex::ensure()?;
    ruff::ensure()?;
    pytest::ensure()?;
    mini_swe::ensure()?;
    acp_sdk::ensure()?;
    vibe::ensure()
}

/// The version `PROGRAM --version` prints: its first word that starts with a digit
/// (`2.1.332 (Claude Code)`, `codex-cli 0.163.0`, `ruff 0.17.6`).
pub(crate) fn version_of(program: &Path) -> Option<String> {
    let output = Command::new(program).arg("--version").output().ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .find(|word| word.starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_owned)
}

/// The version of the Python package `package` a venv holds, from its metadata (importing it
/// may print a banner or make a config folder in HOME, and starting its program takes
/// seconds).
pub(crate) fn package_version(venv: &Path, package: &str) -> Option<String> {
    let script = format!("import importlib.metadata as m; print(m.version('{package}'))");
    let output = Command::new(venv.join("bin/python"))
        .args(["-c", &script])
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn fetch_claude(target: &Path) -> Result<(), String> {
    let folder = target.parent().expect("the cache path has a folder");
    let agents = folder
        .parent()
        .expect("the cache path has an agents folder");
    let fetched = download_wheel(agents, "claude", SDK_PACKAGE, "about 180 MB")?;
    let (work, wheel, pip) = (&fetched.work, &fetched.wheel, &fetched.python);
    let staged = work.path().join("claude-code");
    std::fs::create_dir_all(&staged).map_err(|e| format!("{}: {e}", staged.display()))?;
    extract_member(pip, wheel, BUNDLED_MEMBER, &staged.join("claude"))?;
    let version = version_of(&staged.join("claude"));
    if version.as_deref() != Some(CLAUDE_VERSION) {
        return Err(format!(
            "the bundled claude says version {version:?}, not {CLAUDE_VERSION}: the package changed"
        ));
    }
    install_folder(&staged, folder)
}

/// A wheel downloaded by pip into a temp folder beside the cache's agents.
pub(super) struct Fetched {
    /// The temp folder (removed when dropped); stage the install in it.
    pub work: tempfile::TempDir,
    /// The downloaded wheel.
    pub wheel: PathBuf,
    /// The Python that ran pip (it also unzips).
    pub python: Vec<String>,
}

/// Downloads `package` (one manylinux wheel, no dependencies) with pip into a temp
/// folder made in `agents`. Everything is staged there and moved in whole, so an
/// interrupted fetch leaves nothing that looks installed.
pub(super) fn download_wheel(
    agents: &Path,
    name: &str,
    package: &str,
    size: &str,
) -> Result<Fetched, String> {
    std::fs::create_dir_all(agents).map_err(|e| format!("{}: {e}", agents.display()))?;
    let work = tempfile::Builder::new()
        .prefix(&format!(".{name}-fetch-"))
        .tempdir_in(agents)
        .map_err(|e| format!("temp folder in {}: {e}", agents.display()))?;
    println!("fetching {package} with pip ({size})…");
    let pip = python();
    let status = Command::new(&pip[0])
        .args(&pip[1..])
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
            "-q",
        ])
        .args([
            "--only-binary",
            ":all:",
            "--platform",
            "manylinux_2_17_x86_64",
        ])
        .arg("-d")
        .arg(work.path())
        .arg(package)
        .status()
        .map_err(|e| format!("cannot run {}: {e} (install Python 3 with pip)", pip[0]))?;
    if !status.success() {
        return Err(format!("pip download {package} failed ({status})"));
    }
    let wheel = find_wheel(work.path())?;
    Ok(Fetched {
        work,
        wheel,
        python: pip,
    })
}

/// Moves a staged install to `folder`, replacing an older one.
pub(super) fn install_folder(staged: &Path, folder: &Path) -> Result<(), String> {
    if folder.exists() {
        std::fs::remove_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    }
    std::fs::rename(staged, folder).map_err(|e| format!("{}: {e}", folder.display()))
}

/// The Python to run pip with: `python3`, else `python`.
pub(super) fn python() -> Vec<String> {
    for candidate in ["python3", "python"] {
        if Command::new(candidate)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return vec![candidate.to_owned()];
        }
    }
    vec!["python3".to_owned()]
}

fn find_wheel(folder: &Path) -> Result<PathBuf, String> {
    std::fs::read_dir(folder)
        .map_err(|e| format!("{}: {e}", folder.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("pip left no wheel in {}", folder.display()))
}

/// Unzips one member with Python's zipfile (a wheel is a zip; Python is already
/// needed for pip), then makes it executable.
pub(super) fn extract_member(
    python: &[String],
    wheel: &Path,
    member: &str,
    dest: &Path,
) -> Result<(), String> {
    const SCRIPT: &str = "import sys, zipfile, shutil\n\
        with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as out:\n\
        \x20   shutil.copyfileobj(src, out, 1 << 20)\n";
    let status = Command::new(&python[0])
        .args(&python[1..])
        .args(["-c", SCRIPT])
        .arg(wheel)
        .arg(member)
        .arg(dest)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", python[0]))?;
    if !status.success() {
        return Err(format!(
            "extracting {member} from {} failed ({status})",
            wheel.display()
        ));
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dest, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", dest.display()))
}
