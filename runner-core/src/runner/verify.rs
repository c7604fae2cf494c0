//! The `--verify` gate: what the sandbox said about a run's change, and whether approve may
//! go ahead.
//!
//! After a run started with `verify`, the supervisor turns the [`SandboxResult`] into a
//! `test.result` event ([`test_result`]) and keeps the [`Verdict`] in
//! `runs/<sessionId>/verdict.json`, so an approve from any process (another `codehands`, the
//! daemon after a restart) sees it. Approve refuses a session whose verdict is not
//! [`Outcome::Passed`] unless the caller forces it ([`crate::options::ApproveOptions`]). A
//! box that could not run the tests (no engine, a tool missing from the image) is told
//! apart from tests that ran and failed: the person acts differently on each.

use serde::{Deserialize, Serialize};

use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::event::{EventBody, TestResult};
use runner_contract::home::Home;
use runner_contract::ids::SessionId;
use runner_contract::private::read_record;
use runner_contract::traits::sandbox::SandboxResult;

/// The file of the verdict in a session's run folder.
const VERDICT_FILE: &str = runner_contract::run_folder::VERDICT;

/// What the sandbox found, in the terms approve acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// The tests ran and passed.
    Passed,
    /// The tests ran and failed (or were killed at a limit).
    TestsFailed,
    /// The box could not run the tests at all.
    CouldNotRun,
}

/// The sandbox's verdict on a session's change, kept in `runs/<sessionId>/verdict.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Verdict {
    /// What approve acts on.
    pub outcome: Outcome,
    /// The test command the box ran (or meant to run).
    pub command: String,
    /// One line a person can read: why the tests failed or could not run.
    pub reason: String,
    /// The sandbox run (`runs/<sessionId>/test-<n>.json`) this verdict is of.
    pub n: u32,
}

impl Verdict {
    /// The verdict of one sandbox run.
    pub fn of(result: &SandboxResult) -> Self {
        let (outcome, reason) = if let Some(error) = &result.error {
            (
                Outcome::CouldNotRun,
                format!("{}: {}", error.kind.as_str(), error.message),
            )
        } else if result.passed {
            (Outcome::Passed, "the tests passed".to_owned())
        } else if result.timed_out {
            (Outcome::TestsFailed, "the tests timed out".to_owned())
        } else if result.out_of_memory {
            (
                Outcome::TestsFailed,
                "the tests ran out of memory".to_owned(),
            )
        } else {
            let code = result
                .exit_code
                .map_or("no exit code".to_owned(), |c| format!("exit code {c}"));
            (Outcome::TestsFailed, format!("the tests failed ({code})"))
        };
        Self {
            outcome,
            command: result.command.clone(),
            reason,
            n: result.n,
        }
    }

    /// Keeps the verdict in the session's run folder (private, replaced atomically).
    pub fn save(&self, home: &Home, id: &SessionId) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::internal(format!("cannot encode the verdict: {e}")))?;
        home.private()
            .replace_file(&home.run_dir(id).join(VERDICT_FILE), &bytes)
    }

    /// The verdict kept for session `id`, if its run was verified.
    pub fn load(home: &Home, id: &SessionId) -> Result<Option<Self>> {
        read_record(
            &home.run_dir(id).join(VERDICT_FILE),
            "a valid verdict",
            "delete it to approve without it",
        )
    }
}

/// The `test.result` event of a sandbox run: a box that could not run the tests says so
/// (`couldNotRun` and the reason), never "failed".
pub(crate) fn test_result(result: &SandboxResult) -> EventBody {
    let summary = if let Some(error) = &result.error {
        Some(format!("{}: {}", error.kind.as_str(), error.message))
    } else if result.timed_out {
        Some("timed out".to_owned())
    } else if result.out_of_memory {
        Some("out of memory".to_owned())
    } else {
        None
    };
    EventBody::TestResult(TestResult {
        command: result.command.clone(),
        passed: result.passed && result.error.is_none(),
        exit_code: result.exit_code.and_then(|c| i32::try_from(c).ok()),
        sandboxed: true,
        summary,
        tool_use_id: None,
        could_not_run: result.error.as_ref().map(|e| e.kind),
    })
}

/// Refuses the approve of session `id` when its run was verified and the verdict is not a
/// pass, unless `force`; the error says what the sandbox found and how to go ahead.
pub(crate) fn gate(home: &Home, id: &SessionId, force: bool) -> Result<()> {
    let Some(verdict) = Verdict::load(home, id)? else {
        return Ok(());
    };
    if force || verdict.outcome == Outcome::Passed {
        return Ok(());
    }
    let what = match verdict.outcome {
        Outcome::TestsFailed => format!("`{}` failed in the sandbox", verdict.command),
        _ => format!("the sandbox could not run `{}`", verdict.command),
    };
    Err(Error::new(
        ErrorKind::VerifyFailed,
        format!(
            "not approved: the run was verified and {what} ({}); look at `codehands diff {id}`, \
             then approve anyway with `--force` (the library: `ApproveOptions {{ force: true }}`), \
             or reject it",
            verdict.reason
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_contract::traits::sandbox::{SandboxError, SandboxErrorKind};

    fn result(passed: bool, exit: i64, error: Option<SandboxErrorKind>) -> SandboxResult {
        SandboxResult {
            n: 1,
            command: "npm test".into(),
            image: "img".into(),
            passed,
            exit_code: Some(exit),
            timed_out: false,
            out_of_memory: false,
            output: String::new(),
            duration_ms: 1,
            error: error.map(|kind| SandboxError {
                kind,
                message: "pnpm is not in the image".into(),
            }),
        }
    }

    #[test]
    fn a_box_that_could_not_run_is_not_a_test_failure() {
        let unrun = result(false, 127, Some(SandboxErrorKind::Unsupported));
        assert_eq!(Verdict::of(&unrun).outcome, Outcome::CouldNotRun);
        let EventBody::TestResult(t) = test_result(&unrun) else {
            panic!("a test.result")
        };
        assert_eq!(t.could_not_run, Some(SandboxErrorKind::Unsupported));
        assert_eq!(
            t.summary.as_deref(),
            Some("sandbox.unsupported: pnpm is not in the image")
        );
        assert_eq!(
            Verdict::of(&result(false, 1, None)).outcome,
            Outcome::TestsFailed
        );
        assert_eq!(Verdict::of(&result(true, 0, None)).outcome, Outcome::Passed);
    }

    #[test]
    fn the_gate_refuses_a_failed_verdict_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().join("home"));
        let id = SessionId::new_random();
        assert!(gate(&home, &id, false).is_ok(), "no verdict: not verified");
        Verdict::of(&result(false, 1, None))
            .save(&home, &id)
            .unwrap();
        let refused = gate(&home, &id, false).unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::VerifyFailed);
        assert!(refused.message().contains("--force"), "{refused}");
        assert!(gate(&home, &id, true).is_ok());
        Verdict::of(&result(true, 0, None))
            .save(&home, &id)
            .unwrap();
        assert!(gate(&home, &id, false).is_ok());
    }
}
