//! The final report against recorded runs: each log in `tests/fixtures/` (see its README) is
//! what the runner writes for a recording of a real agent; its report and the human
//! view are snapshots.

use std::path::{Path, PathBuf};

use runner_contract::report::{RunEnding, RunReport};
use runner_contract::{
    Event, SessionId, SessionRecord, SessionState, StartOptions, TokenCounts, WorktreeSpec,
};
use runner_core::report::{self, ReportInput};

fn events(name: &str) -> Vec<Event> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.events.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap();
    let events: Vec<Event> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{name}: {e}: {line}")))
        .collect();
    // A log as the runner writes it: one session, seq 1..N with no gap.
    for (event, seq) in events.iter().zip(1..) {
        assert_eq!(event.seq, seq, "{name}");
        assert_eq!(event.session_id, events[0].session_id, "{name}");
    }
    events
}

fn record(events: &[Event], state: SessionState, model: Option<&str>) -> SessionRecord {
    let id: SessionId = events[0].session_id;
    let id8 = &id.to_string()[..8];
    let mut options = StartOptions::new(
        id,
        "/home/dev/src/date-bug",
        "Fix the failing test. Run npm test to check.",
        "stream-agent".parse().unwrap(),
    );
    options.model = model.map(str::to_owned);
    let worktree = WorktreeSpec {
        repo: PathBuf::from("/home/dev/src/date-bug"),
        base: "0c5b8a1f2e3d4c5b6a798877665544332211aabb".into(),
        branch: format!("codehands/fix-the-failing-test-{id8}"),
        path: PathBuf::from(format!("/home/dev/.codehands/worktrees/b82e293da65f/{id8}")),
    };
    let mut record = SessionRecord::queued(&options, "b82e293da65f".into(), worktree);
    record.state = state;
    record.last_seq = events.last().unwrap().seq;
    record.created_at = "2026-12-03T13:02:49.870Z".into();
    record.updated_at = "2026-12-03T13:03:12.020Z".into();
    record
}

fn report_of(name: &str, state: SessionState) -> RunReport {
    let events = events(name);
    let record = record(&events, state, None);
    let report = report::build(ReportInput {
        record: &record,
        events: &events,
        agent_program: Some("/usr/local/bin/stream-agent"),
        agent_version: Some("2.1.332"),
    });
    // The JSON reads back strictly: what `codehands report --json` prints is the contract.
    let json = serde_json::to_string(&report).unwrap();
    assert_eq!(serde_json::from_str::<RunReport>(&json).unwrap(), report);
    report
}

fn snapshot(name: &str, report: &RunReport) {
    insta::assert_json_snapshot!(format!("{name}.json"), report);
    insta::assert_snapshot!(format!("{name}.human"), report::render_human(report));
}

#[test]
fn a_finished_run() {
    let report = report_of("report-run", SessionState::AwaitingApproval);
    assert_eq!(
        report.ended,
        RunEnding::Finished {
            approval_requested: true
        }
    );
    assert_eq!(report.turns, 1);
    assert_eq!(
        report
            .tool_calls
            .iter()
            .map(|(t, n)| (t.as_str(), *n))
            .collect::<Vec<_>>(),
        [("Edit", 1), ("Read", 1), ("command", 2)]
    );
    assert_eq!(
        report
            .commands
            .iter()
            .map(|c| c.exit_code)
            .collect::<Vec<_>>(),
        [Some(1), Some(0)]
    );
    assert_eq!(
        report.tests.iter().map(|t| t.passed).collect::<Vec<_>>(),
        [false, true]
    );
    assert_eq!(report.cost_usd, Some(0.004));
    assert_eq!(
        report.tokens,
        Some(TokenCounts {
            input: 500,
            output: 100
        })
    );
    assert_eq!(report.diff_stat.as_ref().map(|d| d.files_changed), Some(1));
    assert_eq!(report.duration_ms, Some(21_864));
    assert_eq!((report.event_count, report.last_seq), (14, 14));
    snapshot("finished", &report);
}

#[test]
fn a_run_with_a_refused_command() {
    let report = report_of("report-refused-command", SessionState::AwaitingApproval);
    assert_eq!(report.denied_tools.len(), 1);
    assert_eq!(report.denied_tools[0].tool.as_deref(), Some("Bash"));
    // The refusal and the command are one call.
    assert_eq!(report.tool_calls.values().sum::<u64>(), 1);
    assert_eq!(report.tests, []);
    snapshot("refused", &report);
}

#[test]
fn a_failed_run() {
    let report = report_of("report-budget-exhausted", SessionState::Failed);
    assert!(
        matches!(&report.ended, RunEnding::Failed { reason, .. } if *reason == runner_contract::event::FailureKind::BudgetExhausted),
        "{:?}",
        report.ended
    );
    assert_eq!(report.cost_usd, Some(0.8400000000000001));
    assert_eq!(report.tokens, None);
    assert_eq!(report.diff_stat, None);
    snapshot("failed", &report);
}

#[test]
fn a_stopped_run() {
    let report = report_of("report-stopped", SessionState::Stopped);
    assert_eq!(report.ended, RunEnding::Stopped { reason: None });
    assert_eq!((report.cost_usd, report.tokens), (None, None));
    assert_eq!(report.commands[0].exit_code, None);
    snapshot("stopped", &report);
}

#[test]
fn a_resumed_run_is_running_until_its_record_says_otherwise() {
    // The stopped log, with the record already moved to running by a resume whose agent
    // has printed nothing yet.
    let events = events("report-stopped");
    let record = record(&events, SessionState::Running, Some("sonnet-5"));
    let report = report::build(ReportInput {
        record: &record,
        events: &events,
        agent_program: None,
        agent_version: None,
    });
    assert_eq!(report.ended, RunEnding::Running);
    assert_eq!(report.ended_at, None);
    assert_eq!(report.duration_ms, None);
    // The model asked for wins over the one the agent reported.
    assert_eq!(report.model.as_deref(), Some("sonnet-5"));
}

#[test]
fn the_record_and_the_report_agree_on_cost() {
    // One function sums for both: the runner stores `cost_of` on the record.
    for name in [
        "report-run",
        "report-refused-command",
        "report-budget-exhausted",
    ] {
        let events = events(name);
        let (cost, tokens) = report::cost_of(&events);
        let report = report_of(name, SessionState::AwaitingApproval);
        assert_eq!((report.cost_usd, report.tokens), (cost, tokens), "{name}");
        assert!(cost.is_some(), "{name}");
    }
}
