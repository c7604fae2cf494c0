//! What the page reads: the sessions and tasks, a session, its diff and report, a task's
//! attempts side by side, two attempts compared. Each answer is the library's own type as
//! JSON (the contract's camelCase), read with the calls the command line makes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use runner_contract::{Error, ErrorKind, Runner, SessionId, SessionRecord, SessionState, TaskId};
use serde::Serialize;

use super::server::{Ui, query_value};
use crate::cli::last_test::LastTest;
use runner_core::LocalRunner;

/// An error as the page shows it: the command line's words, with a status that fits.
pub(super) struct ApiError(Error);

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        Self(error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match self.0.kind() {
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::InvalidInput => StatusCode::BAD_REQUEST,
            ErrorKind::IllegalMove
            | ErrorKind::NothingToApprove
            | ErrorKind::Locked
            | ErrorKind::VerifyFailed
            | ErrorKind::Unsupported => StatusCode::CONFLICT,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let body = serde_json::json!({
            "error": self.0.to_string(),
            "kind": format!("{:?}", self.0.kind()),
        });
        (status, json_text(&body)).into_response()
    }
}

/// What a handler returns.
pub(super) type ApiResult = std::result::Result<Response, ApiError>;

/// `value` as a JSON answer.
pub(super) fn json(value: &impl Serialize) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        json_text(value),
    )
        .into_response()
}

fn json_text(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| {
        serde_json::json!({ "error": format!("cannot write the answer as JSON: {e}") }).to_string()
    })
}

/// The last test of each session, kept while its log stays as it was (a session that runs
/// is read again each time).
#[derive(Default)]
pub(super) struct TestsCache(Mutex<HashMap<SessionId, (u64, SessionState, Tests)>>);

/// The tests column: how the last test run ended, and the command line's line for it.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Tests {
    outcome: &'static str,
    line: String,
}

impl Tests {
    fn of(last: &LastTest) -> Self {
        let outcome = match last {
            LastTest::Passed { .. } => "passed",
            LastTest::Failed { .. } => "failed",
            LastTest::NeverRan { .. } => "never",
        };
        Self {
            outcome,
            line: last.line(),
        }
    }
}

impl TestsCache {
    fn get(&self, runner: &LocalRunner, record: &SessionRecord) -> Option<Tests> {
        let id = record.session_id;
        let settled = !matches!(record.state, SessionState::Queued | SessionState::Running);
        if settled {
            let cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((seq, state, tests)) = cache.get(&id)
                && *seq == record.last_seq
                && *state == record.state
            {
                return Some(tests.clone());
            }
        }
        let tests = Tests::of(&LastTest::of(&runner.logged_events(&id, 0).ok()?));
        if settled {
            let mut cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
            cache.insert(id, (record.last_seq, record.state, tests.clone()));
        }
        Some(tests)
    }
}

/// One row of the list: the record, its last test, its task.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Row<'a> {
    #[serde(flatten)]
    record: &'a SessionRecord,
    tests: Option<Tests>,
    task_id: Option<TaskId>,
}

/// `GET /api/sessions`: every session (as `codehands sessions --json`, with its last test
/// and task), every task, and the files that could not be read.
pub(super) async fn list(State(ui): State<Arc<Ui>>) -> ApiResult {
    let listing = ui.runner.listing().await?;
    // A task whose record cannot be read is said by `codehands task` and `recover`.
    let tasks = ui.runner.tasks().await.unwrap_or_default();
    let task_of = |id: &SessionId| {
        tasks
            .iter()
            .find(|t| t.attempts.iter().any(|a| a.session_id == *id))
            .map(|t| t.task_id)
    };
    let rows: Vec<Row> = listing
        .records
        .iter()
        .map(|record| Row {
            record,
            tests: ui.tests.get(&ui.runner, record),
            task_id: task_of(&record.session_id),
        })
        .collect();
    let unreadable: Vec<_> = listing
        .unreadable
        .iter()
        .map(|(path, e)| {
            serde_json::json!({
                "path": path.display().to_string(),
                "error": runner_contract::present::visible(e.message(), false),
            })
        })
        .collect();
    Ok(json(&serde_json::json!({
        "sessions": rows,
        "tasks": tasks,
        "unreadable": unreadable,
    })))
}

/// `GET /api/sessions/{id}`: the record, and the task it is an attempt of.
pub(super) async fn session(State(ui): State<Arc<Ui>>, Path(text): Path<String>) -> ApiResult {
    let id = ui.runner.resolve_session(&text).await?;
    let record = ui.runner.session(&id).await?;
    let task = ui.runner.task_of(&id).await?;
    Ok(json(&serde_json::json!({
        "record": record,
        "taskId": task.as_ref().map(|t| t.task_id),
        "attempt": task.as_ref().and_then(|t| t.attempt_of(&id)),
    })))
}

/// `GET /api/sessions/{id}/diff`: the change since the base commit, its text made visible
/// (control and bidi characters escaped, as on a terminal); an approved session's error
/// names its commit.
pub(super) async fn diff(State(ui): State<Arc<Ui>>, Path(text): Path<String>) -> ApiResult {
    let id = ui.runner.resolve_session(&text).await?;
    let diff = match ui.runner.diff(&id).await {
        Ok(diff) => diff,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(crate::cli::sessions::after_the_fact(&ui.runner, &id, e)
                .await
                .into());
        }
        Err(e) => return Err(e.into()),
    };
    Ok(json(&serde_json::json!({
        "patch": runner_contract::present::visible(&diff.patch, true),
        "stat": diff.stat,
    })))
}

/// `GET /api/sessions/{id}/report`: the final report, and its text as `codehands report`
/// prints it.
pub(super) async fn report(State(ui): State<Arc<Ui>>, Path(text): Path<String>) -> ApiResult {
    let id = ui.runner.resolve_session(&text).await?;
    let report = ui.runner.report(&id).await?;
    let text = runner_core::report::render_human(&report);
    Ok(json(&serde_json::json!({ "report": report, "text": text })))
}

/// The task `text` names (its id or a prefix of 8+ characters), said as `codehands task` says.
pub(super) async fn find_task(runner: &LocalRunner, text: &str) -> Result<TaskId, Error> {
    runner.find_task(text).await?.ok_or_else(|| {
        Error::not_found(format!(
            "no task id starts with {text}: `codehands run --attempts` starts one and prints its id"
        ))
    })
}

/// `GET /api/tasks/{id}`: the attempts side by side (`codehands task ID --json`).
pub(super) async fn task(State(ui): State<Arc<Ui>>, Path(text): Path<String>) -> ApiResult {
    let id = find_task(&ui.runner, &text).await?;
    let report = ui.runner.task_report(&id).await?;
    Ok(json(&report))
}

/// `GET /api/compare?a=ID&b=ID2`: how A's change differs from B's (`diff A --against B`).
pub(super) async fn compare(State(ui): State<Arc<Ui>>, RawQuery(query): RawQuery) -> ApiResult {
    let query = query.unwrap_or_default();
    let side = |name: &str| -> Result<String, Error> {
        query_value(&query, name).ok_or_else(|| {
            Error::invalid_input(format!("name the session {name} to compare (?{name}=ID)"))
        })
    };
    let (a, b) = (side("a")?, side("b")?);
    let a = ui.runner.resolve_session(&a).await?;
    let b = ui.runner.resolve_session(&b).await?;
    let against = crate::cli::task_diff::compare(&ui.runner, &a, &b).await?;
    let mut value = serde_json::to_value(&against)
        .map_err(|e| Error::internal(format!("cannot write the comparison as JSON: {e}")))?;
    if let Some(patch) = value.get_mut("patch")
        && let Some(text) = patch.as_str()
    {
        *patch = runner_contract::present::visible(text, true)
            .into_owned()
            .into();
    }
    Ok(json(&value))
}
