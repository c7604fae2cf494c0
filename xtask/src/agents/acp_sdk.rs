//! The Agent Client Protocol's official Python SDK (PyPI `agent-client-protocol`, the `acp`
//! module), pinned with what it imports, in a venv of its own: the client the tests of
//! `codehands acp` drive it with, whose models check every message codehands sends.
//!
//! As for mini-swe-agent, the venv is built where it stays, in a hidden folder
//! `.acp-python-sdk-<version>-<random>`, and only then is the link `acp-python-sdk-<version>`
//! renamed into place: an interrupted install leaves nothing that looks installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use runner_testkit::agents::cache_root;

/// The pinned SDK.
pub const VERSION: &str = "0.12.1";

/// The SDK and every package it imports, pinned (pure Python but pydantic-core, which has
/// wheels for every Python from 3.10, the SDK's oldest).
const REQUIREMENTS: &[&str] = &[
    "agent-client-protocol==0.12.1",
    "pydantic==2.13.4",
    "pydantic_core==2.46.4",
    "annotated-types==0.7.0",
    "typing-inspection==0.4.2",
    "typing_extensions==4.16.0",
];

/// Where it goes: `<cache>/tools/acp-python-sdk-0.12.1/venv` (the tests look there).
fn folder() -> PathBuf {
    cache_root()
        .join("tools")
        .join(format!("acp-python-sdk-{VERSION}"))
}

/// Installs the SDK into the cache unless the installed one is whole and pinned.
pub(super) fn ensure() -> Result<(), String> {
    let folder = folder();
    if super::package_version(&folder.join("venv"), "agent-client-protocol").as_deref()
        == Some(VERSION)
    {
        println!("ACP Python SDK {VERSION}: cached at {}", folder.display());
        return Ok(());
    }
    build(&folder)?;
    println!(
        "ACP Python SDK {VERSION}: installed at {}",
        folder.display()
    );
    Ok(())
}

fn build(folder: &Path) -> Result<(), String> {
    let tools = folder.parent().expect("the install folder has a parent");
    std::fs::create_dir_all(tools).map_err(|e| format!("{}: {e}", tools.display()))?;
    let prefix = format!(".acp-python-sdk-{VERSION}-");
    super::mini_swe::remove_stale(tools, &prefix, folder)?;
    let work = tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(tools)
        .map_err(|e| format!("temp folder in {}: {e}", tools.display()))?;
    let venv = work.path().join("venv");
    let python = super::python();
    println!(
        "making a venv for the ACP Python SDK {VERSION} with {}…",
        python[0]
    );
    super::mini_swe::run(
        Command::new(&python[0])
            .args(&python[1..])
            .args(["-m", "venv"])
            .arg(&venv),
    )?;
    let pip = |args: &[&str]| {
        let mut command = Command::new(venv.join("bin/python"));
        command.args(["-m", "pip", "--disable-pip-version-check", "--no-input"]);
        command.args(args);
        command
    };
    println!(
        "installing the ACP Python SDK {VERSION} and its pinned packages with pip (about 10 MB)…"
    );
    super::mini_swe::run(pip(&["install", "-q", "--no-deps"]).args(REQUIREMENTS))?;
    // --no-deps installs exactly the pins; this says if they no longer fit together.
    super::mini_swe::run(&mut pip(&["check"]))?;
    super::mini_swe::run(
        Command::new(venv.join("bin/python")).args(["-c", "import acp, acp.schema"]),
    )?;
    if super::package_version(&venv, "agent-client-protocol").as_deref() != Some(VERSION) {
        return Err(format!(
            "the venv does not hold agent-client-protocol {VERSION}: the pins changed"
        ));
    }

    // Everything is in place: keep the folder and point the link at it.
    let built = work.keep();
    let name = built
        .file_name()
        .expect("a temp folder has a name")
        .to_owned();
    let link = tools.join(format!(
        ".acp-python-sdk-{VERSION}.link-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&name, &link).map_err(|e| format!("{}: {e}", link.display()))?;
    if folder.is_dir() && !folder.is_symlink() {
        std::fs::remove_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    }
    std::fs::rename(&link, folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    super::mini_swe::remove_stale(tools, &prefix, folder)
}
