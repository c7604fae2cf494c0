//! `cargo test --test record`: every scenario of `tests/scenarios/mod.rs` has its recording
//! in `tests/fixtures/`, and every recording its snapshot. With `-- --record <scenario>|all`
//! (what `cargo xtask record mini-swe-agent <scenario>` runs) it records again from the real
//! mini-swe-agent against the scripted model server (the requests it sent go to
//! `target/recordings/mini-swe-agent/`).

mod scenarios;

fn main() -> std::process::ExitCode {
    scenarios::recorder().main()
}
