//! `codehands doctor`'s box checks: bubblewrap, a real box started (not only looked for),
//! the limits the machine gives it, and Codex's own sandbox run once inside a box.

use std::path::Path;

use runner_contract::Confinement;
use runner_core::AgentRegistry;

use super::probe::{Finding, Probe, Site};

/// The box's findings for `setup`; `site` runs the programs asked outside a box.
pub fn findings(setup: &codehands::Setup, registry: &AgentRegistry, site: &Site) -> Vec<Finding> {
    let boxes = codehands::agent_box(setup);
    let scratch = setup.home.root().join("doctor");
    let helper = boxes.helper().map(Path::to_owned);
    let path = setup
        .settings
        .caller_env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str());
    let works = boxes.available().map_err(|e| e.to_string()).and_then(|()| {
        let helper = helper.as_deref().ok_or("no helper")?;
        agent_box::probe::try_box(helper, &scratch, path)
    });
    let bwrap = agent_box::probe::find_bwrap(path);
    let version = bwrap
        .as_deref()
        .and_then(agent_box::probe::bwrap_version)
        .and_then(|v| v.split_whitespace().last().map(str::to_owned));
    let limits = match agent_box::cgroup::find("doctor") {
        Ok(cgroup) => {
            let which = match cgroup {
                agent_box::plan::Cgroup::V1 { .. } => "cgroup v1",
                agent_box::plan::Cgroup::V2 { .. } => "cgroup v2",
            };
            let limits = boxes.limits();
            format!(
                "limits: memory {}, {} processes ({which})",
                limits
                    .memory_bytes
                    .map_or("unlimited".into(), |b| format!("{} MiB", b >> 20)),
                limits.pids.map_or("unlimited".into(), |n| n.to_string())
            )
        }
        Err(why) => format!("no memory or process limits in the box here: {why}"),
    };
    let mut out = vec![Finding {
        name: "box".into(),
        program: bwrap.map_or("bwrap".into(), |b| b.display().to_string()),
        location: Some(match &works {
            Ok(()) => format!("a box started and wrote its worktree; {limits}"),
            Err(_) => limits,
        }),
        probe: Probe {
            found: works.is_ok(),
            version: version.clone(),
            tested_version: Some("0.8.0".into()),
            tested: version.as_deref().is_some_and(|v| v.starts_with("0.8.")),
            note: works.as_ref().err().cloned(),
        },
    }];
    out.push(toolchains(setup, path));
    if let (Ok(()), Some(helper)) = (&works, &helper) {
        out.extend(codex_sandbox(registry, helper, &scratch, path, site));
    }
    let _ = std::fs::remove_dir(&scratch);
    out
}

/// What of the caller's home the box brings in for their toolchains (README.md, "The
/// agent's box"): each one found on their PATH, or none.
fn toolchains(setup: &codehands::Setup, path: Option<&str>) -> Finding {
    let env = &setup.settings.caller_env;
    let home = env
        .iter()
        .find(|(k, v)| k == "HOME" && !v.is_empty())
        .map(|(_, v)| Path::new(v));
    let found = home
        .map(|home| agent_box::toolchains::find(path.unwrap_or_default(), home, env).found)
        .unwrap_or_default();
    Finding {
        name: "box toolchains".into(),
        program: "(your PATH under your home)".into(),
        location: Some(if found.is_empty() {
            "none: nothing of your home comes into the box for a toolchain".into()
        } else {
            format!("read-only in the box: {}", found.join("; "))
        }),
        probe: Probe {
            found: true,
            version: Some(found.len().to_string()),
            tested_version: None,
            tested: true,
            note: None,
        },
    }
}

/// Codex's own sandbox, run once inside a box: it must run a command in the worktree and
/// refuse a write outside it.
fn codex_sandbox(
    registry: &AgentRegistry,
    helper: &Path,
    scratch: &Path,
    path: Option<&str>,
    site: &Site,
) -> Option<Finding> {
    let codex = registry
        .get(&runner_contract::AgentName::parse("codex").ok()?)
        .ok()?;
    let version = codex.version_probe()?;
    let program = version.program.clone();
    // `.git` is writable in the box and read-only in Codex's sandbox, wherever the box's
    // home is (a home under /tmp is writable in both).
    let script = "echo boxed > box-check; mkdir -p .git; if touch .git/outside 2>/dev/null; then echo unconfined >> box-check; fi";
    let args = [
        "sandbox",
        "-c",
        "sandbox_mode=\"workspace-write\"",
        "--",
        "sh",
        "-c",
        script,
    ]
    .map(std::ffi::OsString::from);
    let run =
        agent_box::probe::run_in_box(helper, scratch, path, &program, &args, &codex.box_needs());
    let (ok, note) = match &run {
        Err(why) => (false, Some(why.clone())),
        Ok(run) if run.written.trim() == "boxed" => (true, None),
        Ok(run) if run.written.contains("unconfined") => (
            false,
            Some("Codex's sandbox let a command write where it protects (.git)".into()),
        ),
        Ok(run) => (
            false,
            Some(format!(
                "Codex's sandbox did not run a command (exit {:?}): {}",
                run.code,
                codex
                    .stderr_warnings(&run.stderr)
                    .join("; ")
                    .trim()
                    .to_owned()
                    + run.stderr.lines().last().unwrap_or("")
            )),
        ),
    };
    Some(Finding {
        name: "codex-sandbox".into(),
        program: program.display().to_string(),
        location: Some(if ok {
            "Codex's own sandbox runs inside the box (a command ran, a write to .git was refused)"
                .into()
        } else {
            "Codex's own sandbox does not work inside the box: every command Codex runs fails"
                .into()
        }),
        probe: Probe {
            found: ok,
            note,
            ..site.agent(&version)
        },
    })
}
