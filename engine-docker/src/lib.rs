//! An implementation of `runner_contract::Confinement` for a box on a Docker engine
//! (`--engine docker`) or a Docker Swarm cluster (`--engine swarm`), with bollard.
//!
//! The repo cannot be bound in on another machine, so the base travels in and the result
//! comes back as data (`remote-transfer`), checked before it touches the run's worktree:
//!
//! - [`DockerEngine`]: the `Confinement`; `wrap` writes the run's plan (`runs/<id>/remote.json`)
//!   and returns the invocation of [`SHIM_COMMAND`], the local process the runner spawns,
//!   records, stops and adopts as it would the agent.
//! - `shim`: that process. It reads the agent's prompt from its stdin, ships the base tree, the
//!   prompt and the agent's environment into the box (files, never the container's env),
//!   streams the box's output to its own stdout and stderr (so into the run's transcript, which
//!   the supervisor turns into events), and applies the checked result before it exits with
//!   the agent's code. A shim started again for the same plan finds its box by label and skips
//!   the output its stdout file holds already.
//! - [`init`]: pid 1's child in the box ([`INIT_COMMAND`]): unpacks the base, loads the env,
//!   runs the agent, and on a swarm sends the result back through the log stream.
//! - [`egress`]: the box's only way out, to its provider through an allow-list proxy.
//! - [`devcontainer`]: the repo's `.devcontainer/devcontainer.json` read as data, for a box in
//!   the repo's own image (`derive` adds codehands to it on the engine).
//! - [`k8s`]: the same box as a Kubernetes Job, on paper (docs/kubernetes.md).

mod connect;
mod derive;
pub mod devcontainer;
pub mod egress;
mod engine;
pub mod frame;
pub mod handin;
pub mod image;
pub mod image_agents;
pub mod init;
pub mod k8s;
pub mod phases;
pub mod plan;
pub mod security;
mod shim;

pub use connect::check_host;
pub use engine::{DockerEngine, REMOTE_IMAGE};
pub use phases::Phases;
pub use plan::{RemoteLimits, RemotePlan};
pub use shim::fill_pool;

/// Removes the networks and egress proxies the boxes on the engine `docker_host` names share
/// (made once per engine and kept: README.md, "Where runs run"), for a bench or test done with
/// the engine; what a box still uses stays. `ssh_env` is the caller's `PATH`, `HOME` and
/// `SSH_AUTH_SOCK`, for an `ssh://` engine.
pub fn remove_shared(docker_host: Option<&str>, ssh_env: &[(String, String)]) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    runtime.block_on(async {
        if let Ok((docker, _dial)) = connect::connect_to(docker_host, ssh_env).await {
            shim::remove_shared(&docker).await;
        }
    });
}

/// The hidden subcommand of the local process that drives a remote box.
pub const SHIM_COMMAND: &str = "__remote";
/// The hidden subcommand that starts the agent inside a remote box.
pub const INIT_COMMAND: &str = "__remote-init";
/// The hidden subcommand that removes what a remote box left on its engine, after its turn.
pub const CLEANUP_COMMAND: &str = "__remote-cleanup";
/// The hidden subcommand of a remote box's egress proxy.
pub const EGRESS_COMMAND: &str = "__remote-egress";

/// Runs `__remote`, `__remote-init`, `__remote-egress` or `__remote-cleanup` when `args` (without the program's name) start with
/// one: the `codehands` binary calls this first thing in `main` and exits with the code.
pub fn dispatch(args: &[std::ffi::OsString]) -> Option<i32> {
    let (first, rest) = args.split_first()?;
    if first == SHIM_COMMAND {
        Some(shim::main(rest))
    } else if first == INIT_COMMAND {
        Some(init::main(rest))
    } else if first == EGRESS_COMMAND {
        Some(egress::proxy::main(rest))
    } else if first == CLEANUP_COMMAND {
        Some(shim::cleanup_main(rest))
    } else {
        None
    }
}
