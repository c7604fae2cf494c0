//! The lines codehands writes to an ACP agent's stdin: our requests (the handshake and the
//! prompt), our answers to its requests, and `session/cancel`. Each is one line of JSON-RPC,
//! the same for the same input (the runner finds what it already delivered by looking for the
//! line in the turn's input file), and our request ids are fixed per turn, since each turn is
//! a process of its own.

use serde_json::{Value, json};

use crate::wire::{PROTOCOL_VERSION, PermissionOption};

/// The id of our `initialize`.
pub(crate) const INITIALIZE: u64 = 1;
/// The id of our `session/new`, `session/load` or `session/resume`.
pub(crate) const OPEN: u64 = 2;
/// The id of our `session/prompt`.
pub(crate) const PROMPT: u64 = 3;

fn request(id: u64, method: &str, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

/// `initialize`. We declare no `fs/*` and no `terminal/*`: the agent reads, writes and runs
/// commands with its own tools in the worktree, where the runner sees their effect in the
/// diff. Serving them would make codehands carry out the agent's writes and commands itself,
/// a second place to confine to the worktree and scrub of secrets for no gain here.
pub(crate) fn initialize() -> String {
    request(
        INITIALIZE,
        "initialize",
        json!({
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {
                "fs": { "readTextFile": false, "writeTextFile": false },
                "terminal": false,
            },
            "clientInfo": { "name": "codehands", "version": env!("CARGO_PKG_VERSION") },
        }),
    )
}

/// How the turn opens its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Open {
    /// `session/new`.
    New,
    /// `session/load`: the agent replays the history first.
    Load,
    /// `session/resume`: no replay.
    Resume,
}

/// The request that opens the session in `cwd` (`session_id` for a load or resume).
pub(crate) fn open(how: Open, cwd: &str, session_id: Option<&str>) -> String {
    let mut params = json!({ "cwd": cwd, "mcpServers": [] });
    let method = match how {
        Open::New => "session/new",
        Open::Load => "session/load",
        Open::Resume => "session/resume",
    };
    if let Some(id) = session_id.filter(|_| how != Open::New) {
        params["sessionId"] = json!(id);
    }
    request(OPEN, method, params)
}

/// `session/prompt` with the text blocks of the turn.
pub(crate) fn prompt(session_id: &str, blocks: &[String]) -> String {
    let prompt: Vec<Value> = blocks
        .iter()
        .map(|text| json!({ "type": "text", "text": text }))
        .collect();
    request(
        PROMPT,
        "session/prompt",
        json!({ "sessionId": session_id, "prompt": prompt }),
    )
}

/// `session/cancel`: the agent ends the turn (its prompt answers `cancelled`).
pub(crate) fn cancel(session_id: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "method": "session/cancel",
        "params": { "sessionId": session_id },
    })
    .to_string()
}

/// Our answer to a permission request: the first option of `kind` (`allow_once` or
/// `reject_once`; for a rejection with no such option, `reject_always` before giving up),
/// or the `cancelled` outcome when the agent offered none of them.
pub(crate) fn permission_answer(id: &Value, options: &[PermissionOption], allow: bool) -> String {
    let wanted: &[&str] = if allow {
        &["allow_once"]
    } else {
        &["reject_once", "reject_always"]
    };
    let chosen = wanted
        .iter()
        .find_map(|kind| options.iter().find(|o| o.kind == *kind));
    let outcome = match chosen {
        Some(option) => json!({ "outcome": "selected", "optionId": option.option_id }),
        None => json!({ "outcome": "cancelled" }),
    };
    json!({ "jsonrpc": "2.0", "id": id, "result": { "outcome": outcome } }).to_string()
}

/// The error that answers a request of the agent's we do not serve.
pub(crate) fn method_not_found(id: &Value, method: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32601,
            "message": format!(
                "codehands does not serve {method}: it declared no such capability in initialize"
            ),
        },
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(kinds: &[&str]) -> Vec<PermissionOption> {
        kinds
            .iter()
            .map(|k| PermissionOption {
                option_id: format!("opt-{k}"),
                name: String::new(),
                kind: (*k).to_owned(),
            })
            .collect()
    }

    fn chosen(line: &str) -> Value {
        serde_json::from_str::<Value>(line).unwrap()["result"]["outcome"].clone()
    }

    #[test]
    fn an_answer_picks_once_never_always() {
        let all = options(&["allow_always", "allow_once", "reject_always", "reject_once"]);
        let allow = permission_answer(&json!(0), &all, true);
        assert_eq!(chosen(&allow)["optionId"], "opt-allow_once");
        assert_eq!(serde_json::from_str::<Value>(&allow).unwrap()["id"], 0);
        assert_eq!(
            chosen(&permission_answer(&json!("r"), &all, false))["optionId"],
            "opt-reject_once"
        );
        // Only "always" to allow: nothing is allowed for good behind the caller's back.
        let always = options(&["allow_always", "reject_always"]);
        assert_eq!(
            chosen(&permission_answer(&json!(1), &always, true))["outcome"],
            "cancelled"
        );
        assert_eq!(
            chosen(&permission_answer(&json!(1), &always, false))["optionId"],
            "opt-reject_always"
        );
    }

    #[test]
    fn each_line_is_one_line_of_json_rpc() {
        let lines = [
            initialize(),
            open(Open::New, "/w", Some("ignored")),
            open(Open::Load, "/w", Some("s1")),
            prompt("s1", &["two\nlines".into()]),
            cancel("s1"),
            method_not_found(&json!(4), "fs/read_text_file"),
        ];
        for line in &lines {
            assert!(!line.contains('\n'), "{line}");
            let value: Value = serde_json::from_str(line).unwrap();
            assert_eq!(value["jsonrpc"], "2.0");
        }
        let new: Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(new["method"], "session/new");
        assert!(new["params"].get("sessionId").is_none());
        let load: Value = serde_json::from_str(&lines[2]).unwrap();
        assert_eq!(load["params"]["sessionId"], "s1");
        let init: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(init["params"]["clientCapabilities"]["terminal"], false);
    }
}
