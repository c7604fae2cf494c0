//! Each agent crate's recordings, checked or made again by the `record` test of the crate's
//! one test binary ([`Recorder::test`]: a check, or a recording when [`RECORD_ENV`] names a
//! scenario).

use std::path::{Path, PathBuf};

use model_server::ModelServer;
use runner_contract::Agent;

use crate::fixtures::Fixtures;
use crate::run::Harness;
use crate::scenario::{Scenario, npm_available};

/// An agent crate's recordings and how to make them again.
///
/// The crate's `record` test ([`Recorder::test`]) checks that every scenario has its
/// recording, every recording comes from a scenario, and every recording has its snapshot;
/// with `CODEHANDS_RECORD=<scenario>|all` it runs the real program on the scenario and saves
/// its stdout as the recording (read every line before committing it).
pub struct Recorder {
    /// The program and its pinned version, for the log: "Claude Code 2.1.332".
    pub program: String,
    /// The name `cargo xtask record` knows the agent by ("claude"); also the folder under
    /// `target/recordings/` that gets the requests each recording sent.
    pub record_name: &'static str,
    /// The crate's recordings.
    pub fixtures: Fixtures,
    /// Every scenario.
    pub scenarios: Vec<Scenario>,
    /// The adapter pointed at the installed program, or what is missing and how to get it.
    pub agent: fn() -> Result<Box<dyn Agent>, String>,
    /// The provider variables that send the agent to the scripted server.
    pub provider_env: fn(&ModelServer) -> Vec<(String, String)>,
}

/// The variable that makes [`Recorder::test`] record a scenario (or `all`) again from the
/// real program instead of checking; `cargo xtask record <agent> <scenario>` sets it.
pub const RECORD_ENV: &str = "CODEHANDS_RECORD";

impl Recorder {
    /// The body of the crate's `record` test: records again what [`RECORD_ENV`] names, else
    /// checks that every scenario has its recording and every recording its snapshot.
    /// Panics, as a failed test does, with what went wrong.
    pub fn test(self) {
        let outcome = match std::env::var(RECORD_ENV) {
            Ok(which) => self.record(&which),
            Err(_) => self.check(),
        };
        if let Err(wrong) = outcome {
            panic!("the recordings of {}:\n{wrong}", self.program);
        }
    }

    /// Every problem of the recordings on disk, each with what to do about it.
    pub fn problems(&self) -> Vec<String> {
        let fixtures = &self.fixtures;
        let on_disk = fixtures.names();
        let mut problems = Vec::new();
        let mut seen = Vec::new();
        for scenario in &self.scenarios {
            if seen.contains(&scenario.name) {
                problems.push(format!(
                    "two scenarios are named `{}`: a name is its recording's file name",
                    scenario.name
                ));
            }
            seen.push(scenario.name);
            if !on_disk.iter().any(|n| n == scenario.name) {
                problems.push(format!(
                    "scenario `{name}` has no recording {}: make it with `cargo xtask record {} {name}`",
                    fixtures.shown(&fixtures.path(scenario.name)),
                    self.record_name,
                    name = scenario.name,
                ));
            }
        }
        for name in &on_disk {
            if !seen.contains(&name.as_str()) {
                problems.push(format!(
                    "{} comes from no scenario in tests/it/scenarios.rs, so it cannot be recorded again: add its scenario or remove it",
                    fixtures.shown(&fixtures.path(name))
                ));
            }
            let snapshot = fixtures.snapshot_path(name);
            if !snapshot.is_file() {
                problems.push(format!(
                    "{} has no snapshot {}: add `{name}` to `fixture_tests!` in tests/fixtures.rs, run it and accept the snapshot (`cargo insta review`)",
                    fixtures.shown(&fixtures.path(name)),
                    fixtures.shown(&snapshot),
                ));
            }
        }
        problems
    }

    fn check(&self) -> Result<(), String> {
        let problems = self.problems();
        if problems.is_empty() {
            println!(
                "record: {} scenarios of {}, each recorded in tests/fixtures/ with its snapshot",
                self.scenarios.len(),
                self.program
            );
            return Ok(());
        }
        Err(problems
            .iter()
            .map(|problem| format!("error: {problem}"))
            .collect::<Vec<_>>()
            .join("\n"))
    }

    fn names(&self) -> String {
        let names: Vec<&str> = self.scenarios.iter().map(|s| s.name).collect();
        format!(
            "usage: cargo xtask record {} <scenario>|all\nscenarios: {}",
            self.record_name,
            names.join(", ")
        )
    }

    fn record(&self, which: &str) -> Result<(), String> {
        let chosen: Vec<&Scenario> = if which == "all" {
            self.scenarios.iter().collect()
        } else {
            match self.scenarios.iter().find(|s| s.name == which) {
                Some(scenario) => vec![scenario],
                None => {
                    return Err(format!(
                        "no scenario `{which}` for {}\n{}",
                        self.program,
                        self.names()
                    ));
                }
            }
        };
        let agent = match (self.agent)() {
            Ok(agent) => agent,
            Err(missing) => {
                runner_testkit::skip(&format!("nothing recorded: {missing}"));
                return Ok(());
            }
        };
        self.record_each(agent.as_ref(), &chosen)
            .map_err(|e| format!("error: {e}"))
    }

    fn record_each(&self, agent: &dyn Agent, chosen: &[&Scenario]) -> Result<(), String> {
        let runtime = tokio::runtime::Runtime::new().map_err(|e| format!("tokio: {e}"))?;
        let harness = Harness::new(agent, &self.provider_env);
        let requests_dir = recordings_dir().join(self.record_name);
        std::fs::create_dir_all(&requests_dir)
            .map_err(|e| format!("{}: {e}", requests_dir.display()))?;
        for scenario in chosen {
            if scenario.needs_npm && !npm_available() {
                println!("skipping {}: it needs npm on PATH", scenario.name);
                continue;
            }
            println!(
                "recording {} ({}) with {}",
                scenario.name, scenario.about, self.program
            );
            let output = runtime.block_on(harness.run(scenario))?;
            let target = self.fixtures.write(scenario.name, &output.lines)?;
            let requests: Vec<serde_json::Value> = output
                .requests
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "method": r.method, "path": r.path, "status": r.status, "turn": r.turn,
                        "body": r.json().unwrap_or_else(|| serde_json::Value::String(r.body.clone())),
                    })
                })
                .collect();
            let dump = requests_dir.join(format!("{}.requests.json", scenario.name));
            let pretty = serde_json::to_string_pretty(&requests).map_err(|e| e.to_string())?;
            std::fs::write(&dump, pretty).map_err(|e| format!("{}: {e}", dump.display()))?;
            println!(
                "  {} lines, exit code {:?}, {} requests -> {} (requests in {})",
                output.lines.len(),
                output.exit_code,
                output.requests.len(),
                target.display(),
                dump.display()
            );
            for request in &output.requests {
                println!(
                    "  {} {} -> {} (turn {:?})",
                    request.method, request.path, request.status, request.turn
                );
            }
            if !output.stderr.trim().is_empty() {
                println!("  stderr: {}", output.stderr.trim());
            }
        }
        Ok(())
    }
}

/// `target/recordings`, beside the build: the test binary is
/// `<target>/<profile>/deps/record-<hash>`.
fn recordings_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir)
        .join("recordings")
}
