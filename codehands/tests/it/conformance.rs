//! runner-testkit's `Agent` conformance suite, run on the agents the facade makes itself: a
//! profile of each kind (text, JSON lines, ACP), the fake agent, and an agent of a plugin
//! library loaded for real. The adapter crates run it on theirs (their `tests/conformance.rs`).

use crate::support;

use std::path::Path;
use std::sync::Arc;

use codehands::RunnerBuilder;
use runner_contract::{Agent, AgentName};
use runner_testkit::agent;
use support::World;

/// The agent named `name` of a runner built from `builder`.
fn agent_of(builder: RunnerBuilder, name: &str) -> Arc<dyn Agent> {
    let (registry, problems) = builder.agents().unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let name = AgentName::parse(name).unwrap();
    registry.entry(&name).unwrap().agent.clone()
}

/// The agent of the profile `text`, written to a file in `world`.
fn profile(world: &World, text: &str) -> Arc<dyn Agent> {
    let path = world.dir.path().join("agent.toml");
    std::fs::write(&path, text).unwrap();
    let builder = RunnerBuilder::new(world.setup(world.settings()))
        .load_home(false)
        .agent_file(&path);
    agent_of(builder, "patchbot")
}

fn world() -> World {
    World::new(&[("a.py", "x = 1\n")])
}

fn worktree(world: &World) -> &Path {
    &world.repo
}

#[test]
fn a_text_profile_keeps_every_agent_promise() {
    let world = world();
    let agent = profile(
        &world,
        r#"
name = "patchbot"
program = "/usr/bin/patchbot"
args = ["--model", "{model}", "{worktree}"]
parser = "text"
[provider]
api-key-env = "PATCHBOT_AUTH"
"#,
    );
    agent::all(&*agent, worktree(&world), "earlier");
    assert_eq!(agent.secret_envs(), ["PATCHBOT_AUTH"]);
}

#[test]
fn a_json_lines_profile_keeps_every_agent_promise() {
    let world = world();
    let agent = profile(
        &world,
        r#"
name = "patchbot"
description = "Patches by the bot"
program = "/usr/bin/patchbot"
parser = "json-lines"
[json-lines]
kind = "type"
message = { when = "say", text = "text" }
command = { when = "ran", command = "cmd", exit-code = "code", output = "out" }
result = { when = "done", cost-usd = "cost" }
"#,
    );
    agent::all(&*agent, worktree(&world), "earlier");
    assert_eq!(agent.description().as_deref(), Some("Patches by the bot"));
}

#[cfg(feature = "acp")]
#[test]
fn an_acp_profile_keeps_every_agent_promise() {
    let world = world();
    let agent = profile(
        &world,
        r#"
name = "patchbot"
program = "/usr/bin/patchbot-acp"
protocol = "acp"
"#,
    );
    agent::all(&*agent, worktree(&world), "sess-earlier");
}

#[cfg(feature = "fake")]
#[test]
fn the_fake_agent_keeps_every_agent_promise() {
    let world = world();
    let builder = RunnerBuilder::new(world.setup(world.settings())).load_home(false);
    let fake = agent_of(builder, "fake");
    agent::all(
        &*fake,
        worktree(&world),
        "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42",
    );
}

#[cfg(feature = "plugins")]
#[test]
fn a_plugin_agent_keeps_every_agent_promise() {
    let world = world();
    let builder = RunnerBuilder::new(world.setup(world.settings()))
        .load_home(false)
        .plugin(support::plugins::sample("tee"));
    let tee = agent_of(builder, "tee-notes");
    // The sample prints what `tee` prints: plain text, which the suite sees from its parser.
    agent::all(&*tee, worktree(&world), "earlier");
}
