//! `codehands doctor`: what is installed, and whether our tests ran those versions.

use std::path::Path;
use std::process::{Command, ExitCode};

use clap::Args;
use runner_core::Result;
use serde::Serialize;

use super::output;

/// The versions the test suite runs against (the pinned agents, this machine's git and engine).
const TESTED: &[(&str, &str)] = &[
    ("git", "2.47."),
    ("claude", "2.1.332"),
    ("codex", "0.163.0"),
    ("docker", "20.10."),
];

/// Arguments of `codehands doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
}

/// One tool's finding.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Finding {
    name: &'static str,
    program: String,
    found: bool,
    version: Option<String>,
    tested: bool,
    note: Option<String>,
}

/// Looks for each tool and prints what it found.
pub async fn run(args: DoctorArgs) -> Result<ExitCode> {
    let claude = std::env::var("CLAUDE_BIN").unwrap_or_else(|_| "claude".into());
    let codex = std::env::var("CODEX_BIN").unwrap_or_else(|_| "codex".into());
    let findings = vec![
        probe("git", "git", &["--version"]),
        probe("claude", &claude, &["--version"]),
        probe("codex", &codex, &["--version"]),
        probe(
            "docker",
            "docker",
            &["version", "--format", "{{.Server.Version}}"],
        ),
    ];
    if args.json {
        output::json_line(&findings)?;
        return Ok(ExitCode::SUCCESS);
    }
    let colour = output::colour();
    for f in &findings {
        let state = match (&f.version, f.found) {
            (Some(v), _) => output::paint(colour, "32", &format!("found {v}")),
            (None, true) => output::paint(colour, "33", "found, but no version"),
            (None, false) => output::paint(colour, "31", "not found"),
        };
        let tested = if f.tested {
            " (tested)"
        } else if f.found {
            " (not a version our tests ran)"
        } else {
            ""
        };
        output::line(&format!("{:<7} {state}{tested}  [{}]", f.name, f.program))?;
        if let Some(note) = &f.note {
            output::line(&format!("        {note}"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn probe(name: &'static str, program: &str, args: &[&str]) -> Finding {
    let out = Command::new(program).args(args).output();
    let (found, version, note) = match out {
        Err(e) => (false, None, Some(format!("cannot run {program}: {e}"))),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            let version = first_version(&text);
            let note = (!out.status.success()).then(|| {
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_owned()
            });
            (true, version, note.filter(|n| !n.is_empty()))
        }
    };
    let tested = version
        .as_deref()
        .is_some_and(|v| TESTED.iter().any(|(n, t)| *n == name && v.starts_with(t)));
    let _ = Path::new(program);
    Finding {
        name,
        program: program.to_owned(),
        found,
        version,
        tested,
        note,
    }
}

/// The first word that looks like a version (`2.47.3`, `20.10.24+dfsg1`).
fn first_version(text: &str) -> Option<String> {
    text.split_whitespace()
        .map(|w| w.trim_start_matches('v').trim_end_matches(','))
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_owned)
}
