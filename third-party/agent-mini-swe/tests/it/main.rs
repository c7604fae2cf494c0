//! The mini-swe-agent adapter's tests, one binary (the workspace's layout): the arguments it
//! builds, its recordings replayed through its parser, the real program against the scripted
//! model server, a whole `codehands` run with it, and the shared conformance suites.

mod args;
mod conformance;
mod end_to_end;
mod fixtures;
mod live;
mod record;
mod scenarios;
