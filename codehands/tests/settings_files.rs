//! The person's settings through the real command line: `[box] read` in their config brings
//! a folder into the box and nothing beside it; the repository's file counts as committed,
//! never as the agent left it; a bad file refuses the start with its line and makes nothing.

mod support;

use std::path::Path;

use support::World;

/// A profile agent (plain text) whose shell script reads what the test names.
fn profile(world: &World, script: &str) -> String {
    let text = format!(
        "name = \"reader\"\nprogram = \"/bin/sh\"\nargs = [\"-c\", {script:?}]\nparser = \"text\"\n"
    );
    let path = world.dir.path().join("reader.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn run(world: &World, profile: &str) -> std::process::Output {
    support::run(
        world
            .codehands()
            .env("NO_COLOR", "1")
            .current_dir(&world.repo)
            .args([
                "run",
                ".",
                "read",
                "--agent-file",
                profile,
                "--agent",
                "reader",
            ])
            .args(["--then", "keep", "--json"]),
    )
}

/// Every message the agent printed.
fn said(out: &std::process::Output) -> String {
    support::json_lines(out)
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| e["payload"]["text"].as_str().unwrap_or_default().to_owned() + "\n")
        .collect()
}

/// Plants `name` holding `text` under the agent's HOME; its path.
fn plant(world: &World, name: &str, text: &str) -> String {
    let path = world.agent_home.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_folder_the_settings_name_is_read_in_the_box_and_nothing_beside_it() {
    let world = World::demo();
    let sdk = plant(&world, "sdk/VERSION", "sdk-1.2\n");
    let beside = plant(&world, "notes/private.txt", "private-notes\n");
    let script = format!("cat {sdk}; cat {beside} || echo beside-refused");
    let agent = profile(&world, &script);

    let before = run(&world, &agent);
    support::ok(&before);
    let text = said(&before);
    assert!(!text.contains("sdk-1.2"), "no settings, no sdk: {text}");

    std::fs::write(
        world.home.root().join("config.toml"),
        "[box]\nread = [\"~/sdk\"]\n",
    )
    .unwrap();
    let after = run(&world, &agent);
    support::ok(&after);
    let text = said(&after);
    assert!(text.contains("sdk-1.2"), "the named folder is read: {text}");
    assert!(!text.contains("private-notes"), "{text}");
    assert!(text.contains("beside-refused"), "{text}");
}

#[test]
fn the_repos_file_counts_as_committed_not_as_the_checkout_holds_it() {
    let world = World::demo();
    let sdk = plant(&world, "sdk/VERSION", "sdk-1.2\n");
    let tools = plant(&world, "tools/VERSION", "tools-3.4\n");
    std::fs::write(
        world.repo.join(".codehands.toml"),
        "[box]\nread = [\"~/sdk\"]\n",
    )
    .unwrap();
    world.git(&["add", ".codehands.toml"]);
    world.git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "commit",
        "-qm",
        "settings",
    ]);
    // Changed in the checkout and not committed: not read.
    std::fs::write(
        world.repo.join(".codehands.toml"),
        "[box]\nread = [\"~/tools\"]\n",
    )
    .unwrap();
    let agent = profile(&world, &format!("cat {sdk} {tools}; true"));
    let out = run(&world, &agent);
    support::ok(&out);
    let text = said(&out);
    assert!(text.contains("sdk-1.2"), "{text}");
    assert!(!text.contains("tools-3.4"), "{text}");
}

#[test]
fn a_bad_settings_file_refuses_the_start_with_its_line_and_makes_nothing() {
    let world = World::demo();
    std::fs::create_dir_all(world.home.root()).unwrap();
    let config = world.home.root().join("config.toml");
    std::fs::write(&config, "[box]\nread = [\"~/.ssh\"]\n").unwrap();
    let agent = profile(&world, "echo hi");
    let out = run(&world, &agent);
    assert!(!out.status.success());
    let err = support::text(&out.stderr);
    assert!(
        err.contains(&format!("{} line 2", config.display())),
        "{err}"
    );
    assert!(err.contains("secrets"), "{err}");
    assert!(world.worktree_dirs().is_empty(), "no worktree is made");
    assert_eq!(world.branches(), ["main"], "no branch is made");
    let sessions = world.home.root().join("sessions");
    let none = !sessions.exists() || std::fs::read_dir(&sessions).unwrap().next().is_none();
    assert!(none, "no session record is made");
    assert!(Path::new(&config).exists());
}
