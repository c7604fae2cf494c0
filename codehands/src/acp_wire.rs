//! The wire side of `codehands acp` (docs/acp.md, "codehands as an ACP agent"): what
//! one line from the client is, and what a request asks, checked before anything runs.
//! Nothing here touches a runner or the disk, so the fuzz target `acp_server` drives it
//! with any bytes (fuzz-harness); the command line's server acts on what it gives.
//!
//! Messages are read with `serde_json`, as `agent-acp` reads an agent's (its `wire.rs`
//! says why not the schema crate).

use std::path::PathBuf;

use runner_contract::SessionId;
use serde_json::{Map, Value, json};

pub use crate::client_lines::Frame;

/// The longest line the server reads, 16 MiB: a prompt of text and resource links is far
/// smaller (the server takes no images and no embedded resources); a longer line is
/// answered with a parse error, its bytes never held.
pub const MAX_LINE: usize = 16 << 20;

/// JSON-RPC's "parse error": a line that is not a JSON-RPC message.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's "invalid request": JSON that is not a JSON-RPC 2.0 message (a batch, a
/// number, another version).
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC's "invalid params".
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC's "internal error".
pub const INTERNAL_ERROR: i64 = -32603;

/// A JSON-RPC error: its code and what went wrong, saying what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    /// One of the codes above.
    pub code: i64,
    /// The words for the client.
    pub message: String,
}

impl RpcError {
    /// An error of `code` saying `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The error's reply to the request `id` (null for a line that is no request), as one
    /// line of JSON without its newline.
    pub fn reply_line(&self, id: &Value) -> String {
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": self.code, "message": self.message },
        })
        .to_string()
    }
}

/// What one line from the client is.
#[derive(Debug)]
pub enum Incoming {
    /// A request, to be answered under `id`: what it asks, or why it is refused.
    Request {
        /// The client's id for it.
        id: Value,
        /// The call, or the error that answers it.
        call: Result<Call, RpcError>,
    },
    /// The notification `session/cancel`.
    Cancel {
        /// The session whose prompt is cancelled.
        session_id: String,
    },
    /// The client's reply to one of our requests.
    Reply {
        /// Our id of the request.
        id: Value,
        /// Its result, or its error.
        reply: Result<Value, Value>,
    },
    /// A line that is not a JSON-RPC message (not JSON: a parse error; JSON but no message,
    /// such as a batch: an invalid request): answered with this error, id null.
    Unreadable(RpcError),
    /// A notification that asks for nothing we do: nothing to do.
    Ignored,
}

/// What a request asks of the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `initialize`.
    Initialize,
    /// `authenticate` (there is nothing to authenticate).
    Authenticate,
    /// `session/new` in the folder `cwd` (absolute; the server checks the rest).
    NewSession {
        /// The session's folder.
        cwd: PathBuf,
    },
    /// `session/load` of a codehands session.
    LoadSession {
        /// The session.
        session_id: SessionId,
        /// The folder the client names.
        cwd: PathBuf,
    },
    /// `session/prompt`.
    Prompt {
        /// The ACP session it is for.
        session_id: String,
        /// The prompt's text: its text blocks joined, resource links named.
        text: String,
    },
}

/// What the line `frame` is.
pub fn decode(frame: &Frame) -> Incoming {
    let line = match frame {
        Frame::Line(line) => line,
        Frame::NotUtf8(_) => {
            return Incoming::Unreadable(RpcError::new(
                PARSE_ERROR,
                "a line that is not UTF-8: send each JSON-RPC message as one line of UTF-8 JSON",
            ));
        }
        Frame::TooLong { bytes } => {
            return Incoming::Unreadable(RpcError::new(
                PARSE_ERROR,
                format!(
                    "a line of {bytes} bytes, over codehands' cap of {MAX_LINE} bytes a message: \
                     send a shorter message (a prompt's text, resource links for files)"
                ),
            ));
        }
    };
    let mut message = match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(message)) => message,
        Ok(Value::Array(_)) => {
            return Incoming::Unreadable(RpcError::new(
                INVALID_REQUEST,
                "a batch (a JSON array): codehands serves no batches, send each message as one \
                 JSON object a line",
            ));
        }
        Ok(_) => {
            return Incoming::Unreadable(RpcError::new(
                INVALID_REQUEST,
                "not a JSON-RPC message: send one JSON object a line",
            ));
        }
        Err(e) => {
            return Incoming::Unreadable(RpcError::new(
                PARSE_ERROR,
                format!("not a JSON-RPC message ({e}): send one JSON object a line"),
            ));
        }
    };
    // Present (even null) means a request, which JSON-RPC 2.0 answers, under that id.
    let id = message.remove("id");
    let id_ok = id
        .as_ref()
        .is_none_or(|id| id.is_null() || id.is_string() || id.is_number());
    let version_ok = message.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
    let method = message.remove("method");
    let method_ok = method.as_ref().is_none_or(Value::is_string);
    if !id_ok || !version_ok || !method_ok {
        let why = if !version_ok {
            "\"jsonrpc\" is not \"2.0\": codehands speaks JSON-RPC 2.0 only"
        } else if !id_ok {
            "the id is neither a string, a number nor null"
        } else {
            "the method is not a string"
        };
        // The id, when it is one a reply can carry; else null, as JSON-RPC says.
        let id = id.filter(|_| id_ok).unwrap_or(Value::Null);
        return Incoming::Request {
            id,
            call: Err(RpcError::new(
                INVALID_REQUEST,
                format!("an invalid request: {why}"),
            )),
        };
    }
    let params = message.remove("params").unwrap_or(Value::Null);
    let method = method.and_then(|m| m.as_str().map(str::to_owned));
    match (method, id) {
        (Some(method), Some(id)) => Incoming::Request {
            call: call(&method, &params),
            id,
        },
        (Some(method), None) if method == "session/cancel" => match session_of(&params) {
            Some(session_id) => Incoming::Cancel {
                session_id: session_id.to_owned(),
            },
            None => Incoming::Ignored,
        },
        (Some(_), None) => Incoming::Ignored,
        (None, Some(id)) => Incoming::Reply {
            reply: reply(&mut message),
            id,
        },
        (None, None) => Incoming::Request {
            id: Value::Null,
            call: Err(RpcError::new(
                INVALID_REQUEST,
                "an invalid request: neither a method nor an id",
            )),
        },
    }
}

/// A reply's result, or its error.
fn reply(message: &mut Map<String, Value>) -> Result<Value, Value> {
    match message.remove("error") {
        Some(error) => Err(error),
        None => Ok(message.remove("result").unwrap_or(Value::Null)),
    }
}

/// What the request `method` with `params` asks.
fn call(method: &str, params: &Value) -> Result<Call, RpcError> {
    Ok(match method {
        "initialize" => Call::Initialize,
        "authenticate" => Call::Authenticate,
        "session/new" => Call::NewSession { cwd: cwd(params)? },
        "session/load" => Call::LoadSession {
            session_id: params
                .get("sessionId")
                .and_then(Value::as_str)
                .and_then(|id| SessionId::parse(id).ok())
                .ok_or_else(|| {
                    RpcError::new(
                        INVALID_PARAMS,
                        "sessionId is not a codehands session id: load a session this server \
                         made (`codehands list` shows them)",
                    )
                })?,
            cwd: cwd(params)?,
        },
        "session/prompt" => Call::Prompt {
            session_id: session_of(params)
                .ok_or_else(|| {
                    RpcError::new(
                        INVALID_PARAMS,
                        "sessionId is missing: open a session with session/new first",
                    )
                })?
                .to_owned(),
            text: prompt_text(params)?,
        },
        other => {
            return Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("codehands does not serve {other}"),
            ));
        }
    })
}

fn session_of(params: &Value) -> Option<&str> {
    params.get("sessionId")?.as_str()
}

/// The session's folder as the client gives it: an absolute path.
fn cwd(params: &Value) -> Result<PathBuf, RpcError> {
    let cwd = params
        .get("cwd")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .ok_or_else(|| {
            RpcError::new(
                INVALID_PARAMS,
                "cwd is missing: give the absolute path of a folder of a git repo",
            )
        })?;
    if !cwd.is_absolute() {
        return Err(RpcError::new(
            INVALID_PARAMS,
            format!(
                "cwd {} is not an absolute path: give the absolute path of a folder of a git repo",
                cwd.display()
            ),
        ));
    }
    Ok(cwd)
}

/// The prompt's text: its text blocks joined, a resource link named.
fn prompt_text(params: &Value) -> Result<String, RpcError> {
    let blocks = params
        .get("prompt")
        .and_then(Value::as_array)
        .ok_or_else(|| RpcError::new(INVALID_PARAMS, "prompt is missing: send text blocks"))?;
    let text: Vec<String> = blocks
        .iter()
        .filter_map(|block| match block["type"].as_str() {
            Some("text") => block["text"].as_str().map(str::to_owned),
            Some("resource_link") => block["uri"].as_str().map(|uri| format!("(see {uri})")),
            _ => None,
        })
        .collect();
    let text = text.join("\n\n");
    if text.trim().is_empty() {
        return Err(RpcError::new(
            INVALID_PARAMS,
            "the prompt has no text: codehands takes text blocks",
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Incoming {
        decode(&Frame::Line(text.into()))
    }

    fn unreadable(incoming: Incoming) -> RpcError {
        match incoming {
            Incoming::Unreadable(e) => e,
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn lines_that_are_no_message_are_parse_errors() {
        for incoming in [
            decode(&Frame::NotUtf8("\u{fffd}".into())),
            decode(&Frame::TooLong {
                bytes: MAX_LINE + 1,
            }),
            line("{\"id\":1,\"method\":\"initialize\"\0}"),
            line("{\"id\":1,"),
        ] {
            let e = unreadable(incoming);
            assert_eq!(e.code, PARSE_ERROR);
            let reply: Value = serde_json::from_str(&e.reply_line(&Value::Null)).unwrap();
            assert_eq!(reply["id"], Value::Null);
            assert!(reply["error"]["message"].as_str().unwrap().contains("send"));
        }
    }

    #[test]
    fn a_request_is_its_call_or_the_error_that_answers_it() {
        let Incoming::Request { id, call } =
            line(r#"{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/r"}}"#)
        else {
            panic!("a request");
        };
        assert_eq!(
            (id, call),
            (json!(7), Ok(Call::NewSession { cwd: "/r".into() }))
        );
        for (text, code) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"rel"}}"#,
                INVALID_PARAMS,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"x","cwd":"/r"}}"#,
                INVALID_PARAMS,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
                INVALID_PARAMS,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file"}"#,
                METHOD_NOT_FOUND,
            ),
            (
                r#"{"jsonrpc":"1.0","id":1,"method":"initialize"}"#,
                INVALID_REQUEST,
            ),
            (r#"{"id":1,"method":"initialize"}"#, INVALID_REQUEST),
            (
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}"#,
                INVALID_REQUEST,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":7}"#, INVALID_REQUEST),
        ] {
            let Incoming::Request { call: Err(e), .. } = line(text) else {
                panic!("refused: {text}");
            };
            assert_eq!(e.code, code, "{text}");
        }
    }

    #[test]
    fn json_that_is_no_message_is_an_invalid_request() {
        for text in [
            "[]",
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}]",
            "7",
            "\"x\"",
        ] {
            assert_eq!(unreadable(line(text)).code, INVALID_REQUEST, "{text}");
        }
        // Neither a method nor an id, or another version: answered under id null.
        for text in ["{}", r#"{"jsonrpc":"1.0","method":"session/cancel"}"#] {
            let Incoming::Request { id, call: Err(e) } = line(text) else {
                panic!("refused: {text}");
            };
            assert_eq!((id, e.code), (Value::Null, INVALID_REQUEST), "{text}");
        }
    }

    #[test]
    fn a_request_with_id_null_is_answered_under_null() {
        let Incoming::Request { id, call } =
            line(r#"{"jsonrpc":"2.0","id":null,"method":"initialize"}"#)
        else {
            panic!("a request");
        };
        assert_eq!((id, call), (Value::Null, Ok(Call::Initialize)));
    }

    #[test]
    fn notifications_and_replies() {
        assert!(matches!(
            line(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#),
            Incoming::Cancel { session_id } if session_id == "s"
        ));
        assert!(matches!(
            line(r#"{"jsonrpc":"2.0","method":"other"}"#),
            Incoming::Ignored
        ));
        assert!(matches!(
            line(r#"{"jsonrpc":"2.0","id":3,"error":{"code":1}}"#),
            Incoming::Reply { reply: Err(_), .. }
        ));
    }
}
