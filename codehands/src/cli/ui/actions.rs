//! What the page does: approve (with a message; an attempt of a task is picked, the others
//! rejected), reject (a session, or a whole task), stop, a follow-up, a comment on a line of
//! the diff (a follow-up naming the file and line), the answer to a permission request. Each
//! is the library call its command makes, in the same order, and answers with the line the
//! command prints; a refusal is the command's error, word for word.

use std::sync::Arc;

use axum::extract::{Path, State};
use runner_contract::PickOptions;
use runner_contract::{
    ApproveOptions, Error, PermissionAnswer, Runner, Sent, SessionId, SessionState,
};
use serde::Deserialize;

use super::api::{ApiResult, find_task, json};
use super::server::Ui;
use crate::cli::last_test::LastTest;
use runner_core::LocalRunner;

/// The body of a request, read strictly: a field that is not ours is refused.
fn body<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, Error> {
    serde_json::from_str(text)
        .map_err(|e| Error::invalid_input(format!("the request is not what the page sends: {e}")))
}

/// What the page says and gets back.
fn done(line: String, result: serde_json::Value) -> ApiResult {
    Ok(json(&serde_json::json!({ "line": line, "result": result })))
}

fn value(v: &impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or_default()
}

/// `POST /api/sessions/{id}/approve` `{"message", "force"}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Approve {
    #[serde(default)]
    message: String,
    #[serde(default)]
    force: bool,
}

/// As `codehands approve ID -m MSG [--force]`: an attempt of a task is picked (the others
/// rejected), any other session approved.
pub(super) async fn approve(
    State(ui): State<Arc<Ui>>,
    Path(text): Path<String>,
    request: String,
) -> ApiResult {
    let ask: Approve = body(&request)?;
    let runner = &ui.runner;
    let id = runner.resolve_session(&text).await?;
    if runner.task_of(&id).await?.is_some() {
        let options = PickOptions {
            message: ask.message,
            force: ask.force,
            keep_others: false,
        };
        let picked = runner.pick(&id, options).await?;
        let mut line = format!("approved: {} on branch {}", picked.commit, picked.branch);
        for other in &picked.rejected {
            line.push_str(&format!("\n  rejected attempt {}", other.short()));
        }
        for other in &picked.kept {
            line.push_str(&format!("\n  kept attempt {}", other.short()));
        }
        return done(line, value(&picked));
    }
    let options = ApproveOptions { force: ask.force };
    let approved = runner.approve_with(&id, &ask.message, options).await?;
    let mut line = format!(
        "approved: {} on branch {}",
        approved.commit, approved.branch
    );
    let last_test = LastTest::of(&runner.logged_events(&id, 0)?);
    if !matches!(last_test, LastTest::Passed { .. }) {
        line.push('\n');
        line.push_str(&last_test.line());
    }
    done(line, value(&approved))
}

/// `POST /api/sessions/{id}/reject`: as `codehands reject ID` of a session.
pub(super) async fn reject(State(ui): State<Arc<Ui>>, Path(text): Path<String>) -> ApiResult {
    let id = ui.runner.resolve_session(&text).await?;
    let rejected = ui.runner.reject_session(&id).await?;
    let line = crate::cli::decide::rejected_line(&rejected);
    done(
        line,
        serde_json::json!({ "sessionId": id, "keptBranch": rejected.kept_branch }),
    )
}

/// `POST /api/tasks/{id}/reject`: as `codehands reject TASK`, every attempt not decided.
pub(super) async fn reject_task(State(ui): State<Arc<Ui>>, Path(text): Path<String>) -> ApiResult {
    let id = find_task(&ui.runner, &text).await?;
    let rejected = ui.runner.reject_task(&id).await?;
    let line = format!(
        "rejected task {}: {} attempt(s) thrown away (worktrees and branches)",
        id.short(),
        rejected.len()
    );
    done(line, value(&rejected))
}

/// `POST /api/sessions/{id}/stop`: as `codehands stop ID` (a stopped session is no error).
pub(super) async fn stop(State(ui): State<Arc<Ui>>, Path(text): Path<String>) -> ApiResult {
    let runner = &ui.runner;
    let id = runner.resolve_session(&text).await?;
    let already = runner.session(&id).await?.state == SessionState::Stopped;
    if !already {
        runner.stop(&id).await?;
    }
    let was = if already {
        "already stopped"
    } else {
        "stopped"
    };
    let line = format!(
        "{was}. Resume with: codehands resume {}  or throw it away: codehands reject {}",
        id.short(),
        id.short()
    );
    done(line, value(&runner.session(&id).await?))
}

/// `POST /api/sessions/{id}/send` `{"text"}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Send {
    text: String,
}

/// As `codehands send ID TEXT`: a follow-up turn (which its own supervisor runs; the page
/// watches it in the events), or a message to the running turn.
pub(super) async fn send(
    State(ui): State<Arc<Ui>>,
    Path(text): Path<String>,
    request: String,
) -> ApiResult {
    let ask: Send = body(&request)?;
    let id = ui.runner.resolve_session(&text).await?;
    say(&ui.runner, id, ask.text).await
}

/// `POST /api/sessions/{id}/comment` `{"path", "line", "side", "text"}`: a comment on a line
/// of the diff, sent as a follow-up.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Comment {
    path: String,
    line: u64,
    /// `new` (the line as the change leaves it) or `old` (a line the change removed).
    side: String,
    text: String,
}

/// The follow-up a comment becomes: it names the file and the line.
fn comment_text(comment: &Comment) -> Result<String, Error> {
    let which = match comment.side.as_str() {
        "new" => "",
        "old" => " before your change (a line you removed)",
        other => {
            return Err(Error::invalid_input(format!(
                "{other:?} is not a side of the diff: `new` or `old`"
            )));
        }
    };
    if comment.text.trim().is_empty() {
        return Err(Error::invalid_input(
            "the comment is empty: say what the agent should change",
        ));
    }
    Ok(format!(
        "About {}, line {}{which}: {}",
        comment.path,
        comment.line,
        comment.text.trim()
    ))
}

pub(super) async fn comment(
    State(ui): State<Arc<Ui>>,
    Path(text): Path<String>,
    request: String,
) -> ApiResult {
    let comment: Comment = body(&request)?;
    let id = ui.runner.resolve_session(&text).await?;
    let followup = comment_text(&comment)?;
    say(&ui.runner, id, followup).await
}

/// Gives `text` to the session as `codehands send` does.
async fn say(runner: &LocalRunner, id: SessionId, text: String) -> ApiResult {
    match runner.send(&id, text.clone()).await? {
        // The turn runs in a supervisor of its own: the stream is not needed to drive it.
        Sent::FollowUp(_events) => done(
            format!("follow-up sent to {}: the agent works again", id.short()),
            serde_json::json!({ "sessionId": id, "followUp": true, "text": text }),
        ),
        Sent::Steered => done(
            format!("sent to the running turn of {id}"),
            serde_json::json!({ "sessionId": id, "steered": true, "text": text }),
        ),
    }
}

/// `POST /api/sessions/{id}/answer` `{"requestId", "decision", "message"}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Answer {
    request_id: String,
    decision: String,
    #[serde(default)]
    message: Option<String>,
}

/// As `codehands answer ID REQUEST allow|deny [-m MSG]`.
pub(super) async fn answer(
    State(ui): State<Arc<Ui>>,
    Path(text): Path<String>,
    request: String,
) -> ApiResult {
    let ask: Answer = body(&request)?;
    let id = ui.runner.resolve_session(&text).await?;
    let (answer, outcome) = match ask.decision.as_str() {
        "allow" => (
            PermissionAnswer::Allow {
                updated_input: None,
            },
            "allowed",
        ),
        "deny" => (
            PermissionAnswer::Deny {
                message: ask.message.filter(|m| !m.trim().is_empty()),
            },
            "denied",
        ),
        other => {
            return Err(
                Error::invalid_input(format!("{other:?} is not an answer: allow or deny")).into(),
            );
        }
    };
    ui.runner.answer(&id, &ask.request_id, answer).await?;
    let line = format!(
        "{outcome}: request {} of session {}",
        runner_contract::present::visible(&ask.request_id, false),
        id.short()
    );
    done(
        line,
        serde_json::json!({ "sessionId": id, "requestId": ask.request_id, "outcome": outcome }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_names_the_file_and_the_line() {
        let comment = |side: &str, text: &str| Comment {
            path: "src/date.py".into(),
            line: 12,
            side: side.into(),
            text: text.into(),
        };
        assert_eq!(
            comment_text(&comment("new", " use a month of 1 to 12 ")).unwrap(),
            "About src/date.py, line 12: use a month of 1 to 12"
        );
        assert_eq!(
            comment_text(&comment("old", "keep this")).unwrap(),
            "About src/date.py, line 12 before your change (a line you removed): keep this"
        );
        assert!(comment_text(&comment("left", "x")).is_err());
        assert!(comment_text(&comment("new", "  ")).is_err());
    }
}
