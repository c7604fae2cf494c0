//! agent-box's tests, one binary (the workspace's layout). `real_box`: real boxes
//! (bubblewrap, the outer process, the init) with shell-script agents.
//!
//! The hostile suite (`binds`, `git_admin`, `kernel`, `reach`): probes of what a hostile agent would try from its box, each paired
//! with an unboxed control that shows the probe would see the escape, run for a root caller
//! and for an unprivileged test user (as CI, containers and most users run codehands).
//!
//! A probe script exits 0 when the escape worked: the control must, the boxed run must not.

mod harness;

mod binds;
mod git_admin;
mod kernel;
mod reach;

mod real_box;
