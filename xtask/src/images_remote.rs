//! `cargo xtask images` (its last step): the remote box's image, `codehands/remote:1`
//! (engine_docker::REMOTE_IMAGE): `FROM scratch` with the workspace's `codehands`, the pinned
//! Claude Code when it is installed, and the C libraries they link (engine_docker::image),
//! then a shell and the pinned Codex's install folder (engine_docker::image_agents): a few tens
//! of MB without the agents, about 700 MB with both. Like the sandbox's images it is
//! skipped when the engine has it, loaded from `$CODEHANDS_CACHE/images/` when saved there, and
//! built (then saved) otherwise. A cluster gets it from a registry the user names
//! (`docker push`, then `CODEHANDS_REMOTE_IMAGE`) or by `docker save | docker load` on each
//! node (README.md, "Where runs run").

use std::process::Command;

use engine_docker::REMOTE_IMAGE;

pub fn run() -> Result<(), String> {
    let saved = cache_dir()
        .join("images")
        .join(format!("{}.tar", REMOTE_IMAGE.replace(['/', ':'], "-")));
    if docker(&["image", "inspect", "--format", "{{.Id}}", REMOTE_IMAGE]).is_ok() {
        println!("images: {REMOTE_IMAGE} is on the engine already");
        if !saved.is_file() {
            save(&saved)?;
        }
        return Ok(());
    }
    if saved.is_file() {
        println!("images: loading {REMOTE_IMAGE} from {}", saved.display());
        docker(&["load", "--quiet", "--input", &saved.to_string_lossy()])?;
        if docker(&["image", "inspect", REMOTE_IMAGE]).is_ok() {
            return Ok(());
        }
    }
    println!("images: building {REMOTE_IMAGE} from this workspace's codehands");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(cargo)
        .args(["build", "--quiet", "-p", "codehands"])
        .current_dir(crate::workspace_root())
        .status()
        .map_err(|e| e.to_string())?;
    if !built.success() {
        return Err("cargo build -p codehands failed".into());
    }
    // The agents go in with it when they are installed (`cargo xtask install`): Claude Code,
    // and Codex's install folder whole, on a layer with a shell (engine_docker::image_agents).
    // Codex's own sandbox needs the box's profile for it (docs/remote-box.md).
    let claude = agent_claude::pinned::path_in(&cache_dir());
    let programs: Vec<&std::path::Path> = if claude.is_file() {
        println!("images: with Claude Code from {}", claude.display());
        vec![claude.as_path()]
    } else {
        println!("images: without Claude Code (not installed: `cargo xtask install`)");
        Vec::new()
    };
    engine_docker::image::build(
        REMOTE_IMAGE,
        &crate::workspace_root().join("target/debug/codehands"),
        &programs,
    )?;
    let codex = agent_codex::pinned::path_in(&cache_dir());
    let whole: Vec<engine_docker::image_agents::KeptWhole<'_>> = if codex.is_file() {
        println!("images: with Codex from {}", codex.display());
        vec![engine_docker::image_agents::KeptWhole {
            program: &codex,
            levels_up: 2,
        }]
    } else {
        println!("images: without Codex (not installed: `cargo xtask install`)");
        Vec::new()
    };
    engine_docker::image_agents::build(REMOTE_IMAGE, REMOTE_IMAGE, &whole)?;
    save(&saved)?;
    println!("images: built {REMOTE_IMAGE}");
    Ok(())
}

/// `$CODEHANDS_CACHE`, or `~/.cache/codehands`.
fn cache_dir() -> std::path::PathBuf {
    match std::env::var_os("CODEHANDS_CACHE") {
        Some(dir) if !dir.is_empty() => dir.into(),
        _ => std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| ".".into()))
            .join(".cache/codehands"),
    }
}

/// `docker save` into the cache, through a temporary name so a cut-off save is never loaded.
fn save(saved: &std::path::Path) -> Result<(), String> {
    if let Some(dir) = saved.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let partial = saved.with_extension("tar.partial");
    docker(&["save", "--output", &partial.to_string_lossy(), REMOTE_IMAGE])?;
    std::fs::rename(&partial, saved)
        .map_err(|e| format!("cannot save {}: {e}", saved.display()))?;
    println!("images: saved {REMOTE_IMAGE} to {}", saved.display());
    Ok(())
}

fn docker(args: &[&str]) -> Result<String, String> {
    let out = Command::new("docker")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run docker: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "docker {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
