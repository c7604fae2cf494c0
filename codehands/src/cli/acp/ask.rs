//! What `codehands acp` asks the client, as `session/request_permission`: the inner agent's
//! permission requests, relayed, and at the end of each turn whether to approve, keep or
//! reject its change. Every request names its tool call's `kind`, so a client's policy can
//! tell a command (`execute`) from an edit (`edit`) from a read; the approval, which writes a
//! commit into the person's repository, is an `edit`, which a read-only policy refuses.

use runner_contract::options::PermissionAnswer;
use runner_contract::{Runner, SessionId, event::PermissionRequested};
use serde_json::{Value, json};

use super::Server;
use super::session::{Session, TurnSignals};
use super::updates;

/// What a person at the client is told when they refuse a tool.
const REFUSED: &str = "The person at the ACP client refused this tool.";

/// The tool call kinds ACP knows.
const KINDS: &[&str] = &[
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
];

/// Asks the client about the inner agent's permission request and gives the runner its
/// answer; no answer (the client went away, or cancelled) denies it.
pub(super) async fn relay(
    server: &Server,
    id: SessionId,
    acp_id: &str,
    asked: PermissionRequested,
    signals: &TurnSignals,
) {
    let call_id = asked
        .tool_use_id
        .clone()
        .unwrap_or_else(|| asked.request_id.clone());
    let question = server.conn.request(
        "session/request_permission",
        json!({
            "sessionId": acp_id,
            "toolCall": {
                "toolCallId": call_id,
                "title": title(&asked.tool, &asked.input),
                "kind": kind(&asked.tool, &asked.input),
                "rawInput": asked.input,
            },
            "options": [
                { "optionId": "allow", "name": "Allow once", "kind": "allow_once" },
                { "optionId": "deny", "name": "Deny", "kind": "reject_once" },
            ],
        }),
    );
    // A cancel denies what is still asked (ACP: the client answers it `cancelled`).
    let reply = tokio::select! {
        reply = question => reply,
        () = signals.until_cancelled() => None,
    };
    let answer = match reply.and_then(|reply| chosen(&reply)).as_deref() {
        Some("allow") => PermissionAnswer::Allow {
            updated_input: None,
        },
        _ => PermissionAnswer::Deny {
            message: Some(REFUSED.into()),
        },
    };
    if let Err(e) = server.runner.answer(&id, &asked.request_id, answer).await {
        tracing::info!(session = %id, "the answer to {} was not taken: {e}", asked.request_id);
    }
}

/// The ACP kind of a tool the inner agent asks to run: the kind an ACP agent gave it, else
/// by the tool's name (Claude Code's tools), else `other`.
fn kind(tool: &str, input: &Value) -> &'static str {
    let given = input["toolCall"]["kind"].as_str();
    if let Some(known) = given.and_then(|k| KINDS.iter().find(|known| **known == k)) {
        return known;
    }
    match tool {
        "Bash" | "BashOutput" | "KillShell" | "KillBash" => "execute",
        "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => "edit",
        "Read" | "NotebookRead" => "read",
        "Glob" | "Grep" | "LS" => "search",
        "WebFetch" | "WebSearch" => "fetch",
        _ => "other",
    }
}

/// The tool's title as a person reads it: the command or the file when the input names one.
fn title(tool: &str, input: &Value) -> String {
    let detail = ["command", "file_path", "path", "url"]
        .iter()
        .find_map(|key| input[*key].as_str());
    match detail {
        Some(detail) if !detail.is_empty() => format!("{tool}: {detail}"),
        _ => tool.to_owned(),
    }
}

/// What became of the turn's change.
pub(super) struct Decided {
    /// Approved or rejected: the next prompt starts a new codehands session.
    pub(super) settled: bool,
    /// The client cancelled the prompt while it was asked: the change is kept.
    pub(super) cancelled: bool,
}

/// Puts the turn's change to the client: approve (one commit on the branch), keep (a later
/// prompt follows up, where the agent can continue the conversation; else the change waits
/// for `codehands approve` or `reject`) or reject (nothing left). No answer, or a cancel,
/// keeps it.
pub(super) async fn decide(
    server: &Server,
    session: &Session,
    id: SessionId,
    branch: &str,
    diff: &runner_contract::DiffStat,
    signals: &TurnSignals,
) -> Decided {
    let acp_id = &session.acp_id;
    let continues = server.runner.can_continue(&id).await.unwrap_or(false);
    let call_id = format!("codehands-approval-{id}");
    let title = format!(
        "Approve the change on {branch}? {}",
        updates::diff_words(diff)
    );
    signals.update(
        server,
        acp_id,
        json!({
            "sessionUpdate": "tool_call",
            "toolCallId": call_id,
            "title": title,
            "kind": "edit",
            "status": "pending",
        }),
    );
    let keep = if continues {
        "Keep it: a next prompt follows up".to_owned()
    } else {
        format!(
            "Keep it: decide later with `codehands approve {id}` or `codehands reject {id}` \
             (this agent cannot continue the conversation)"
        )
    };
    let question = server.conn.request(
        "session/request_permission",
        json!({
            "sessionId": acp_id,
            "toolCall": { "toolCallId": call_id, "title": title, "kind": "edit" },
            "options": [
                { "optionId": "approve", "name": format!("Approve: commit it on {branch}"), "kind": "allow_once" },
                { "optionId": "keep", "name": keep, "kind": "reject_once" },
                { "optionId": "reject", "name": "Reject: throw it away", "kind": "reject_always" },
            ],
        }),
    );
    let reply = tokio::select! {
        reply = question => reply,
        () = signals.until_cancelled() => None,
    };
    let choice = if signals.cancelled() {
        None
    } else {
        reply.and_then(|reply| chosen(&reply))
    };
    let mut settled = false;
    let said = match choice.as_deref() {
        Some("approve") => match server.runner.approve(&id, "").await {
            Ok(approved) => {
                settled = true;
                format!(
                    "Approved: commit {} on {}.",
                    approved.commit, approved.branch
                )
            }
            Err(e) => format!("The change could not be approved: {e}"),
        },
        Some("reject") => match server.runner.reject(&id).await {
            Ok(()) => {
                settled = true;
                "Rejected: the change is gone.".to_owned()
            }
            Err(e) => format!("The change could not be rejected: {e}"),
        },
        _ if continues => {
            format!("Kept: codehands session {id} awaits approval; a next prompt follows up.")
        }
        _ => format!(
            "Kept: codehands session {id} awaits approval; this agent cannot continue the \
             conversation, so approve it (`codehands approve {id}`) or reject it \
             (`codehands reject {id}`), and open a new session for a new change."
        ),
    };
    signals.update(
        server,
        acp_id,
        json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "completed",
            "content": [{ "type": "content", "content": { "type": "text", "text": said } }],
        }),
    );
    signals.update(
        server,
        acp_id,
        updates::chunk("agent_message_chunk", &format!("\n\n{said}")),
    );
    Decided {
        settled,
        cancelled: signals.cancelled(),
    }
}

/// The option the client chose, if it chose one.
fn chosen(reply: &std::result::Result<Value, Value>) -> Option<String> {
    let outcome = &reply.as_ref().ok()?["outcome"];
    (outcome["outcome"] == "selected")
        .then(|| outcome["optionId"].as_str().map(str::to_owned))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_kind_a_client_policy_can_read() {
        assert_eq!(kind("Bash", &json!({"command": "ls"})), "execute");
        assert_eq!(kind("Write", &json!({"file_path": "/w/a"})), "edit");
        assert_eq!(kind("Grep", &json!({})), "search");
        assert_eq!(kind("mcp__x__y", &json!({})), "other");
        // An ACP agent's own kind wins; one ACP does not know does not.
        assert_eq!(
            kind("touch a", &json!({"toolCall": {"kind": "execute"}})),
            "execute"
        );
        assert_eq!(kind("x", &json!({"toolCall": {"kind": "launch"}})), "other");
        assert_eq!(
            title("Bash", &json!({"command": "npm test"})),
            "Bash: npm test"
        );
    }
}
