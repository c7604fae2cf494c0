//! `cargo test --test record`: every scenario of `tests/scenarios/mod.rs` has its recording
//! in `tests/fixtures/`, and every recording its snapshot. With `-- --record <scenario>|all`
//! (what `cargo xtask record claude <scenario>` runs) it records again from the real
//! Claude Code against the scripted model server.

mod scenarios;

fn main() -> std::process::ExitCode {
    scenarios::recorder().main()
}
