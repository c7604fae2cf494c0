//! The agent in a box: bubblewrap with the worktree writable, a private home, the agent's
//! login handed in file by file, a network namespace whose only ways out are relays to the
//! agent's provider, and limits in a cgroup.
//!
//! - [`BwrapBox`]: the contract's `Confinement`, which the runner wraps each turn with.
//! - [`plan`]: a box as plain data (`runs/<id>/box.json`); [`planner`] makes one, with
//!   [`program`] saying what of the host the agent's program needs.
//! - [`argv`]: the bubblewrap command line of a plan.
//! - [`outer`]: the process the runner starts instead of the agent (`__box`).
//! - [`init`]: pid 1 inside the box (`__box-init`).
//! - [`proxy`], [`relay`]: the allow-list proxy's outer end and the byte pumps.
//! - [`git_admin`]: the repository's git folders, and what of them stays read-only.
//! - [`cgroup`]: the limits; [`etc`]: the box's own `/etc` files; [`probe`]: whether a
//!   box works on this machine.
//! - [`seccomp`]: the system calls a box refuses; [`watchdog`]: the outer process's watch
//!   over the init.
//! - [`toolchains`]: the caller's toolchains under their home; [`deps`]: the checkout's
//!   dependency folders the worktree lacks.

pub mod argv;
pub mod cgroup;
mod confine;
pub mod deps;
pub mod etc;
pub mod git_admin;
pub mod init;
pub mod outer;
pub mod plan;
pub mod planner;
pub mod probe;
pub mod program;
pub mod proxy;
pub mod relay;
pub mod seccomp;
pub mod toolchains;
pub mod watchdog;

pub use confine::BwrapBox;
pub use plan::{BoxPlan, Limits, LoginHow};
pub use planner::BoxInputs;

/// The hidden subcommand of the outer box process.
pub const OUTER_COMMAND: &str = "__box";
/// The hidden subcommand of the box's init.
pub const INIT_COMMAND: &str = "__box-init";

/// Runs `__box` or `__box-init` when `args` (without the program's name) start with one:
/// a program that can be a box's helper calls this first thing in `main` and exits with
/// the code it returns.
pub fn dispatch(args: &[std::ffi::OsString]) -> Option<i32> {
    let (first, rest) = args.split_first()?;
    if first == OUTER_COMMAND {
        Some(outer::main(rest.iter().cloned()))
    } else if first == INIT_COMMAND {
        Some(init::main(rest.iter().cloned()))
    } else {
        None
    }
}
