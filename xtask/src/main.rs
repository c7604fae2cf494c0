//! Development tasks for codehands, run as `cargo xtask <task>`.
//!
//! Each task lives in its own module; `main` only dispatches. Tasks print what
//! they do and exit non-zero with a message when they fail.

mod agents;
mod bench_attempts;
mod bench_check;
mod bench_check_measure;
mod bench_deps;
mod bench_events;
mod bench_git;
mod bench_many;
mod bench_parse;
mod bench_run;
mod bench_sandbox;
mod bench_scale;
mod bench_spans;
mod codegen;
mod fuzz;
mod images;
mod images_remote;
mod man;
mod record;
mod record_demo;
mod system;
mod test;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  codegen [--check]     write the contract's JSON Schemas to schemas/ (--check: fail on drift)
  images                build the sandbox's images locally (cached under $CODEHANDS_CACHE/images)
  bench sandbox         time the sandbox box against `docker run` with the same flags
  agents                fetch the pinned agent CLIs into the cache (Claude Code 2.1.332, Codex 0.163.0,
                        mini-swe-agent 2.4.6)
  record claude <name>  record a fixture from the real Claude Code (`all` for every scenario)
  record codex <name>   record a fixture from the real Codex 0.163.0 (`all` for every scenario)
  record mini-swe-agent <name>  record a fixture from the real mini-swe-agent 2.4.6 (`all` too)
  record demo           record the fake agent's demo run from the real Claude Code, through the runner
  bench git [--rounds N]  GitVcs against the git program on a 20,000-file repo
  bench run [--rounds N] `codehands run` with the real Claude Code against the bare `claude -p`
  bench many [--rounds N] 64 fake runs started together on one repo against 64 one by one
  bench deps [--rounds N] a boxed fake run with a 200 MB node_modules against one without
  bench attempts [--rounds N] a task of 4 fake attempts against a task of one (wall, memory)
  bench events [--rounds N] events/s and latency through `codehands run --json`, the supervisor's memory
  bench scale [--runs N] [--rounds N] 64 (N) fake runs through a one-node Docker Swarm against as many with --engine local
  bench parse           the Claude parser against serde_json::Value over 100 MB of recordings
  bench check [--rounds N] [--update]  the regression gate: quick benchmarks on the debug build
                        as ratios to references timed in the same rounds, against bench/baseline.json
                        (fails on a ratio 12% over its baseline; boxed 18%, reject 50%)
  fuzz [TARGET] [--seconds N] [--seconds-for TARGET=N]
                        run the cargo-fuzz targets of fuzz/ (nightly) N seconds each (60),
                        or a target its own N; crashes are kept under fuzz/regressions/
  man                   write the man page of codehands to target/man/codehands.1
  system                install the system packages the tests need when missing (bubblewrap, chromium, openssh)
  install               install what the tests need (bubblewrap, pinned agent CLIs, local Docker images), cached
  test [ARGS…]          install what the tests need, then run every test (cargo test --workspace --no-fail-fast ARGS…), ending with one summary line
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (task, rest) = match args.split_first() {
        Some((task, rest)) => (task.as_str(), rest),
        None => {
            eprint!("{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    let result = match task {
        "codegen" => codegen::run(rest),
        "images" => images::run(rest).and_then(|()| images_remote::run()),
        "bench" if rest.first().map(String::as_str) == Some("sandbox") => {
            bench_sandbox::run(&rest[1..])
        }
        "agents" => agents::run(rest),
        "record" if rest.first().map(String::as_str) == Some("demo") => {
            record_demo::run(&rest[1..])
        }
        "record" => record::run(rest),
        "bench" if rest.first().map(String::as_str) == Some("run") => bench_run::run(&rest[1..]),
        "bench" if rest.first().map(String::as_str) == Some("git") => bench_git::run(&rest[1..]),
        "bench" if rest.first().map(String::as_str) == Some("events") => {
            bench_events::run(&rest[1..])
        }
        "bench" if rest.first().map(String::as_str) == Some("many") => bench_many::run(&rest[1..]),
        "bench" if rest.first().map(String::as_str) == Some("deps") => bench_deps::run(&rest[1..]),
        "bench" if rest.first().map(String::as_str) == Some("check") => {
            bench_check::run(&rest[1..])
        }
        "bench" if rest.first().map(String::as_str) == Some("attempts") => {
            bench_attempts::run(&rest[1..])
        }
        "bench" if rest.first().map(String::as_str) == Some("scale") => {
            bench_scale::run(&rest[1..])
        }
        "bench" if rest.first().map(String::as_str) == Some("parse") => {
            bench_parse::run(&rest[1..])
        }
        "fuzz" => fuzz::run(rest),
        "man" => man::run(rest),
        "install" => test::install(rest),
        "system" => system::run(rest),
        "test" => test::run(rest),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown task {other:?}\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask {task}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of xtask's manifest folder).
pub fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf()
}

/// A bench's `[--rounds N]` argument: `default` without one; `bench` names it in the usage.
pub fn rounds(args: &[String], default: usize, bench: &str) -> Result<usize, String> {
    match args {
        [] => Ok(default),
        [flag, n] if flag == "--rounds" => n
            .parse()
            .map_err(|_| format!("--rounds takes a number, not {n:?}")),
        other => Err(format!(
            "usage: cargo xtask bench {bench} [--rounds N], not {other:?}"
        )),
    }
}

/// In a debug build of xtask, runs `cargo xtask TASK… ARGS…` again as a release build and
/// returns its outcome; in a release build returns `None`, so the caller does the work.
/// Benchmarks that time our own code in-process use it: unoptimised gix, tokio and serde
/// would measure the wrong thing.
pub fn rerun_in_release(task: &[&str], args: &[String]) -> Option<Result<(), String>> {
    if !cfg!(debug_assertions) {
        return None;
    }
    println!(
        "{}: building and running xtask in release, for a fair comparison",
        task.join(" ")
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(&cargo)
        .args(["run", "--release", "--quiet", "--package", "xtask", "--"])
        .args(task)
        .args(args)
        .current_dir(workspace_root())
        .status();
    Some(match status {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("the release run failed ({status})")),
        Err(e) => Err(format!("cannot run {cargo}: {e}")),
    })
}
