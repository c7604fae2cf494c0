//! `codehands completions bash|zsh|fish` and the hidden `codehands __man`: both made from
//! the clap definition, so they never drift from the commands.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use runner_contract::{Error, Result};

/// The shells we write completions for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// bash: `codehands completions bash > ~/.local/share/bash-completion/completions/codehands`.
    Bash,
    /// zsh: `codehands completions zsh > "${fpath[1]}/_codehands"`.
    Zsh,
    /// fish: `codehands completions fish > ~/.config/fish/completions/codehands.fish`.
    Fish,
}

/// Arguments of `codehands completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// Which shell.
    #[arg(value_enum)]
    shell: Shell,
}

/// Prints the completion script of `args.shell`.
pub fn run(args: CompletionsArgs) -> Result<ExitCode> {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut super::command(), "codehands", &mut script);
    super::output::text(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the man page, in roff.
pub fn man() -> Result<ExitCode> {
    let mut page = Vec::new();
    clap_mangen::Man::new(super::command())
        .render(&mut page)
        .map_err(|e| Error::io("cannot render the man page", &e))?;
    super::output::text(&String::from_utf8_lossy(&page))?;
    Ok(ExitCode::SUCCESS)
}
