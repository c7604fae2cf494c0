//! `cargo test --test record`: every scenario of `tests/scenarios/mod.rs` has its recording
//! in `tests/fixtures/`, and every recording its snapshot. With `-- --record <scenario>|all`
//! (what `cargo xtask record mistral-vibe <scenario>` runs) it records again from the real
//! Mistral Vibe against the scripted model server (the requests it sent go to
//! `target/recordings/mistral-vibe/`).

mod scenarios;

fn main() -> std::process::ExitCode {
    scenarios::recorder().main()
}
