//! The `acp_server` target: what an editor writes to `codehands acp`'s stdin, through the
//! server's line reader (`codehands::client_lines`, in chunks of varied sizes) and its
//! dispatcher (`codehands::acp_wire::decode`: what each line is, what a request asks).
//! Every line must give exactly one outcome: a parse error answered with id null, a
//! request answered (its error being one line of JSON-RPC under its id), a notification, or
//! a reply. The runner's side (sessions, prompts) is not driven: it would start agents.

use codehands::acp_wire::{self, Call, Incoming, RpcError};
use codehands::client_lines::{ClientLines, Frame};
use serde_json::Value;

/// The input's first byte picks the chunk sizes (as `agent_output`'s does) and, with its
/// high bit, a small line cap so over-long lines come often; the rest is the client's bytes.
pub fn acp_server(data: &[u8]) {
    let Some((&knob, input)) = data.split_first() else {
        return;
    };
    let max_line = if knob & 0x80 != 0 {
        64
    } else {
        acp_wire::MAX_LINE
    };
    let chunked = frames(input, max_line, knob);
    assert_eq!(
        chunked,
        frames(input, max_line, 0),
        "the lines depend on where the reads end"
    );
    for frame in &chunked {
        if let Frame::TooLong { bytes } = frame {
            assert!(*bytes > max_line, "a line under the cap was dropped");
        }
        match acp_wire::decode(frame) {
            Incoming::Unreadable(error) => {
                assert!(
                    [acp_wire::PARSE_ERROR, acp_wire::INVALID_REQUEST].contains(&error.code),
                    "{error:?}"
                );
                assert!(
                    !matches!(frame, Frame::Line(line) if is_request(line)),
                    "a request was taken for a parse error: {frame:?}"
                );
                one_reply_line(&error, &Value::Null);
            }
            Incoming::Request { id, call } => {
                assert!(
                    id.is_null() || id.is_string() || id.is_number(),
                    "a reply cannot carry the id {id}"
                );
                match call {
                    Err(error) => {
                        assert!(
                            [
                                acp_wire::INVALID_REQUEST,
                                acp_wire::INVALID_PARAMS,
                                acp_wire::METHOD_NOT_FOUND
                            ]
                            .contains(&error.code),
                            "{error:?}"
                        );
                        one_reply_line(&error, &id);
                    }
                    Ok(Call::NewSession { cwd } | Call::LoadSession { cwd, .. }) => {
                        assert!(cwd.is_absolute(), "a relative cwd was taken: {cwd:?}");
                    }
                    Ok(Call::Prompt { text, .. }) => {
                        assert!(!text.trim().is_empty(), "a prompt without text was taken");
                    }
                    Ok(Call::Initialize | Call::Authenticate) => {}
                }
            }
            Incoming::Cancel { .. } | Incoming::Reply { .. } | Incoming::Ignored => {}
        }
    }
}

/// Whether `line` is a JSON-RPC 2.0 request: a JSON object with a string method and an id.
fn is_request(line: &str) -> bool {
    serde_json::from_str::<Value>(line).is_ok_and(|v| {
        v.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
            && v.get("method").is_some_and(Value::is_string)
            && v.get("id").is_some()
    })
}

/// The error's reply is one line of JSON-RPC under `id`.
fn one_reply_line(error: &RpcError, id: &Value) {
    assert!(!error.message.is_empty());
    let line = error.reply_line(id);
    assert!(!line.contains('\n'), "a reply of two lines: {line:?}");
    let reply: Value = serde_json::from_str(&line).expect("a reply is JSON");
    assert_eq!(&reply["id"], id);
    assert_eq!(reply["error"]["code"], error.code);
}

/// The client's lines as the server reads them, in reads whose sizes come from `knob`
/// (0: all at once).
fn frames(input: &[u8], max_line: usize, knob: u8) -> Vec<Frame> {
    let reader = Chunks {
        rest: input,
        state: u32::from(knob),
    };
    let mut lines = ClientLines::new(reader, max_line);
    std::iter::from_fn(|| lines.next_blocking()).collect()
}

/// A reader giving its bytes in reads of 1 to 64 bytes (a small linear congruential
/// sequence seeded by the knob: varied but repeatable), or all at once for a knob of 0.
struct Chunks<'a> {
    rest: &'a [u8],
    state: u32,
}

impl std::io::Read for Chunks<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let size = if self.state == 0 {
            self.rest.len()
        } else {
            self.state = self.state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (self.state >> 16) as usize % 64 + 1
        };
        let size = size.min(self.rest.len()).min(buf.len());
        let (now, rest) = self.rest.split_at(size);
        buf[..size].copy_from_slice(now);
        self.rest = rest;
        Ok(size)
    }
}
