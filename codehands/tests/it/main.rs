//! The integration tests of the `codehands` facade and command line: real git repos, the real
//! agents against the scripted model server, the box, the engines.
//!
//! One test binary for the crate (each file below is a module): the suite links once.

mod acp_agents;
mod acp_server;
mod agent_profiles;
mod agent_registry;
mod box_git_admin;
mod box_hostile;
mod box_lifecycle;
mod box_livable;
mod box_livable_claude;
mod box_nested_git;
mod claude_rules;
mod cli_converse;
mod cli_crash;
mod cli_detached;
mod cli_disk_full;
mod cli_fake;
mod cli_last_test;
mod cli_many;
mod cli_plugins;
mod cli_run;
mod cli_tasks;
mod cli_ux;
mod codex_e2e;
mod confinement;
mod conformance;
mod engine_docker;
mod engine_ssh;
mod engine_swarm;
mod engine_swarm_race;
mod plugins;
mod profile_boxed;
mod remote_agents;
mod remote_image;
mod runner_claude;
mod runner_converse;
mod runner_durable;
mod runner_fake_agent;
mod runner_journal;
mod settings_files;
mod support;
mod task_agents;
mod task_limits;
mod tasks;
mod trust_files;
mod trust_secrets;
mod trust_terminal;
mod ui_page;
mod vibe_e2e;
mod workflow_agents;
mod workflows;
