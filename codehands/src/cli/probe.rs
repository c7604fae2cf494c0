//! Asking a program for its version, for `doctor` and `agents`.

use std::ffi::OsStr;
use std::path::Path;

use runner_contract::{Result, VersionProbe};
use runner_process::probe::{NeutralDir, command, probe_env};
use serde::Serialize;

use super::output;

/// What a version call found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    /// The program could be started.
    pub found: bool,
    /// The first word of its output that looks like a version.
    pub version: Option<String>,
    /// The version our tests ran, when the project pins one.
    pub tested_version: Option<String>,
    /// Whether the version found is one our tests ran.
    pub tested: bool,
    /// Why it could not be run, or the first line of its error output.
    pub note: Option<String>,
}

/// One line of `codehands doctor`: a tool and what its probe found (here, beside [`Probe`],
/// so that `doctor` and its box checks in `doctor_box` both use it and neither imports the
/// other's).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Finding {
    pub(super) name: String,
    pub(super) program: String,
    /// Where the program was found, or where to put it (the built-in agents); for the box,
    /// what it gives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) location: Option<String>,
    #[serde(flatten)]
    pub(super) probe: Probe,
}

/// Where `doctor`'s and `agents`' probes run: outside any box, as the caller, so with the
/// allowlist of the caller's variables only and in an empty folder of their own, never the
/// caller's folder (a worktree an agent wrote): `runner_process::probe`.
pub struct Site {
    env: Vec<(String, String)>,
    docker_env: Vec<(String, String)>,
    dir: NeutralDir,
}

impl Site {
    /// A site for probes from `caller` (the caller's environment), in a fresh folder of the
    /// system's temp folder, removed when the site is dropped.
    pub fn new(caller: &[(String, String)]) -> Result<Self> {
        Ok(Self {
            env: probe_env(caller.iter().cloned(), &[]),
            // The Docker CLI finds its engine as codehands does (`codehands::sandbox`).
            docker_env: probe_env(caller.iter().cloned(), &["DOCKER_HOST"]),
            dir: NeutralDir::make_in(&std::env::temp_dir())?,
        })
    }

    /// Runs `program args` and reads a version from its output; `tested` is a prefix of the
    /// versions our tests ran.
    pub fn run<S: AsRef<OsStr>>(&self, program: &OsStr, args: &[S], tested: Option<&str>) -> Probe {
        run_with(&self.env, self.dir.path(), program, args, tested)
    }

    /// [`Site::run`] for the Docker CLI, which also gets `DOCKER_HOST`.
    pub fn run_docker<S: AsRef<OsStr>>(&self, args: &[S], tested: Option<&str>) -> Probe {
        run_with(
            &self.docker_env,
            self.dir.path(),
            OsStr::new("docker"),
            args,
            tested,
        )
    }

    /// An agent's own version call.
    pub fn agent(&self, probe: &VersionProbe) -> Probe {
        self.run(
            probe.program.as_os_str(),
            &probe.args,
            probe.tested.as_deref(),
        )
    }
}

fn run_with<S: AsRef<OsStr>>(
    env: &[(String, String)],
    dir: &Path,
    program: &OsStr,
    args: &[S],
    tested: Option<&str>,
) -> Probe {
    let out = command(program, args, env, dir).output();
    let (found, version, note) = match out {
        Err(e) => (
            false,
            None,
            Some(format!("cannot run {}: {e}", program.to_string_lossy())),
        ),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            let version = VersionProbe::version_in(&text);
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
    let is_tested = match (&version, tested) {
        (Some(v), Some(t)) => v.starts_with(t),
        _ => false,
    };
    Probe {
        found,
        version,
        tested_version: tested.map(str::to_owned),
        tested: is_tested,
        note,
    }
}

/// A short coloured account: `found 2.1.332 (tested)`.
pub fn describe(colour: bool, p: &Probe) -> String {
    let state = match (&p.version, p.found) {
        (Some(v), _) => output::paint(colour, "32", &format!("found {v}")),
        (None, true) => output::paint(colour, "33", "found, but no version"),
        (None, false) => output::paint(colour, "31", "not found"),
    };
    let tested = match (p.tested, p.found, &p.tested_version) {
        (true, _, _) => " (tested)".to_owned(),
        (false, true, Some(t)) => format!(" (our tests ran {t})"),
        (false, true, None) => " (no version our tests ran)".to_owned(),
        (false, false, _) => String::new(),
    };
    format!("{state}{tested}")
}
