//! `--plugin` on the command line, with the sample plugin libraries built by cargo:
//! `codehands agents` lists a plugin's agents, and `codehands run` runs one end to end.

#![cfg(feature = "plugins")]

use crate::support;

use std::process::{Command, Stdio};

use support::plugins::sample;
use support::{World, json_lines};

fn codehands(world: &World) -> Command {
    let mut cmd = world.codehands();
    cmd.env("NO_COLOR", "1")
        .current_dir(&world.repo)
        .stdin(Stdio::null());
    cmd
}

#[test]
fn agents_json_lists_a_plugins_agent_with_its_origin() {
    let world = World::new(&[("README.md", "hi\n")]);
    let plugin = sample("tee");
    let out = codehands(&world)
        .args(["agents", "--json", "--plugin"])
        .arg(&plugin)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = json_lines(&out);
    let tee = listed
        .iter()
        .find(|a| a["name"] == "tee-notes")
        .unwrap_or_else(|| panic!("{listed:#?}"));
    assert_eq!(
        tee["origin"],
        serde_json::json!({"kind": "plugin", "path": plugin.display().to_string()})
    );
    assert_eq!(tee["program"], "tee");
    assert_eq!(
        tee["capabilities"],
        serde_json::json!({"resume": false, "budget": false})
    );
    // The built-in agents are still there beside it.
    assert!(listed.iter().any(|a| a["name"] == "fake"), "{listed:#?}");
}

#[test]
fn run_with_a_plugins_agent_then_approve_commits_its_change() {
    let world = World::new(&[("README.md", "hi\n")]);
    let out = codehands(&world)
        .args([
            "run",
            ".",
            "Notes written by a plugin.",
            "--agent",
            "tee-notes",
        ])
        .args(["--then", "approve", "--json", "--plugin"])
        .arg(sample("tee"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out);
    let kinds: Vec<_> = lines.iter().map(|e| e["type"].as_str()).collect();
    // The events, then the approval's result.
    assert_eq!(
        kinds,
        [
            Some("message"),
            Some("task.finished"),
            Some("approval.requested"),
            None
        ],
        "{lines:#?}"
    );
    let branch = lines[3]["branch"].as_str().unwrap();
    assert_eq!(lines[2]["payload"]["branch"], branch);
    assert_eq!(
        world.git(&["show", &format!("{branch}:NOTES.md")]),
        "Notes written by a plugin.\n"
    );
    assert_eq!(
        world
            .git(&["rev-list", "--count", &format!("main..{branch}")])
            .trim(),
        "1"
    );
}

#[test]
fn a_plugin_that_does_not_load_stops_the_command_with_its_reason() {
    let world = World::new(&[("README.md", "hi\n")]);
    let plugin = sample("abi-v99");
    let out = codehands(&world)
        .args(["run", ".", "x", "--agent", "tee-notes", "--plugin"])
        .arg(&plugin)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{} speaks plugin ABI version 99, and this codehands speaks version 1",
            plugin.display()
        )),
        "{stderr}"
    );
    assert!(world.worktree_dirs().is_empty(), "nothing was started");
}
