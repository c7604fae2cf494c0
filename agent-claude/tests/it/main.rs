//! The adapter's tests, one binary (the workspace's layout: ARCHITECTURE.md, "Tests"): the
//! arguments it builds, the recordings of the real Claude Code replayed through its parser, the
//! real program against the scripted model server, and the shared conformance suites.

mod args;
mod conformance;
mod fixtures;
mod live;
mod record;
mod robustness;
mod scenarios;
