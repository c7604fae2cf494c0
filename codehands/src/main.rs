//! The `codehands` command line.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    // The binary doubles as the fake agent program (`--agent fake`): it then takes
    // Claude Code's arguments, not ours.
    #[cfg(feature = "fake")]
    if args.get(1).map(String::as_str) == Some(codehands::FAKE_AGENT_ARG) {
        return exit_code(runner_fake::fake_agent::main(&args[2..]));
    }
    let cli = cli::Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("codehands: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("codehands: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(feature = "fake")]
fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
