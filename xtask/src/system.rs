//! `cargo xtask system`: the system packages the tests need, installed when missing.
//!
//! Today that is bubblewrap (`bwrap`), which puts every agent in its box, Chromium with its
//! WebDriver (`chromedriver`), in which the review page's tests (`codehands/tests/it/ui_page.rs`)
//! look at the page, and OpenSSH (`sshd`, `ssh-keygen`) for the engine reached over ssh. On Debian and Ubuntu, as root, they are installed with apt-get (once:
//! a program already on PATH is not asked for again); elsewhere the task says what to install.

use std::path::Path;
use std::process::Command;

/// Each program the tests need, and the Debian package that brings it.
const PACKAGES: &[(&str, &str)] = &[
    ("bwrap", "bubblewrap"),
    ("chromium", "chromium"),
    ("chromedriver", "chromium-driver"),
    // The engine reached as `DOCKER_HOST=ssh://` (`codehands/tests/it/engine_ssh.rs`): an sshd
    // of the test's own on loopback, and the client's `ssh` and `ssh-keygen`.
    ("sshd", "openssh-server"),
    ("ssh-keygen", "openssh-client"),
];

/// `cargo xtask system`.
pub fn run(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask system".into());
    }
    let missing: Vec<&str> = PACKAGES
        .iter()
        .filter(|(program, _)| !on_path(program))
        .map(|(_, package)| *package)
        .collect();
    if missing.is_empty() {
        println!("system: {} already installed", names());
        return Ok(());
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root || !on_path("apt-get") {
        return Err(format!(
            "install {} (Debian/Ubuntu: sudo apt-get install {}; Fedora: sudo dnf install {}), then run this again",
            missing.join(" "),
            missing.join(" "),
            missing.join(" ")
        ));
    }
    println!("system: apt-get install {}", missing.join(" "));
    apt(&["update", "-q"])?;
    let mut install = vec!["install", "-y", "-q", "--no-install-recommends"];
    install.extend(&missing);
    apt(&install)
}

fn names() -> String {
    PACKAGES
        .iter()
        .map(|(_, p)| *p)
        .collect::<Vec<_>>()
        .join(", ")
}

fn apt(args: &[&str]) -> Result<(), String> {
    let status = Command::new("apt-get")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .map_err(|e| format!("cannot run apt-get: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`apt-get {}` failed ({status})", args.join(" ")))
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| Path::new(&dir).join(program).is_file())
    })
}
