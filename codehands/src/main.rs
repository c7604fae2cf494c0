//! The `codehands` command line.

// A build without some adapter leaves the glue for it unused; the default build, which
// clippy and the tests see, uses all of it (`.ci/run` checks each feature alone).
#![cfg_attr(
    not(all(
        feature = "claude",
        feature = "codex",
        feature = "git",
        feature = "docker",
        feature = "memory-fs",
        feature = "fake",
        feature = "plugins",
        feature = "box"
    )),
    allow(unused)
)]

mod cli;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    codehands::timing::mark_process_start();
    // Read as OsString: a path or prompt that is not UTF-8 must get an error, not a panic.
    let args: Vec<OsString> = std::env::args_os().collect();
    // The binary is also the agent's box: its outer process and its init (agent-box).
    #[cfg(feature = "box")]
    if let Some(code) = agent_box::dispatch(&args[1..]) {
        return exit_code(code);
    }
    // And the driver of a box on a Docker engine or swarm, and that box's init (engine-docker).
    #[cfg(feature = "remote")]
    if let Some(code) = engine_docker::dispatch(&args[1..]) {
        return exit_code(code);
    }
    // The binary doubles as the fake agent program (`--agent fake`): it then takes
    // Claude Code's arguments, not ours.
    #[cfg(feature = "fake")]
    if args.get(1).is_some_and(|a| a == codehands::FAKE_AGENT_ARG) {
        return exit_code(runner_fake::fake_agent::main(&args[2..]));
    }
    if let Some(bad) = args.iter().skip(1).find(|a| a.to_str().is_none()) {
        eprintln!(
            "codehands: the argument {bad:?} is not UTF-8 (the \\x.. are its bytes that are not): \
             codehands takes ids, paths, prompts and options as UTF-8 text; rename the folder \
             or pass the text as UTF-8"
        );
        return ExitCode::from(2);
    }
    let cli = cli::Cli::parse_from(args);
    cli::init_logging(&cli);
    // The whole command as one span (`CODEHANDS_TIMING`, codehands::timing), closed just
    // before the process exits.
    let _process = tracing::trace_span!("process");
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("codehands: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::run(cli)) {
        Ok(code) => code,
        // The reader of stdout went away (`| head`): nothing more to say to anyone.
        Err(_) if cli::stdout_closed() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("codehands: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(any(feature = "fake", feature = "box"))]
fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
