//! The scripted model server: an HTTP server on 127.0.0.1 that real agent CLIs
//! talk to in tests, answering from a [`Script`] and keeping every request.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use model_server::{ModelServer, Script, Turn};
//! let server = ModelServer::start(Script::new([Turn::text("Hello.")])).await?;
//! // Point the agent at it: ANTHROPIC_BASE_URL = server.base_url()
//! let requests = server.requests();
//! # Ok(()) }
//! ```
//!
//! The Anthropic Messages API lives in `anthropic.rs`, the OpenAI Responses API (for
//! Codex) in `openai.rs`, the OpenAI Chat Completions API (for litellm-based agents
//! such as mini-swe-agent) in `chat.rs`; each further API gets its own file.

mod anthropic;
mod chat;
mod openai;
mod script;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::oneshot;

pub use script::{Block, FollowUp, HttpError, Reply, Script, Turn, Usage};

/// One request the server received, kept whole.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// The HTTP method.
    pub method: String,
    /// The path with its query (`/v1/messages?beta=true`).
    pub path: String,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body as text (lossy for bytes that are not UTF-8).
    pub body: String,
    /// The status the server answered with.
    pub status: u16,
    /// The script turn that answered, if one did (an index into the turns of the
    /// script named by `script`).
    pub turn: Option<usize>,
    /// The marker of the follow-up script that answered ([`Script::follow_up`]);
    /// `None` for the main script, or when no script answered.
    pub script: Option<String>,
}

impl RecordedRequest {
    /// The body parsed as JSON, if it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.body).ok()
    }

    /// A header's value by (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

struct State {
    script: Script,
    /// How often each turn has answered, to retire limited error turns: `hits[0]`
    /// for the main script, `hits[i + 1]` for follow-up `i`.
    hits: Vec<Vec<u32>>,
    requests: Vec<RecordedRequest>,
    messages: usize,
}

type Shared = Arc<Mutex<State>>;

/// A text in two pieces (split on a char boundary), so the client must join deltas: every
/// API's stream sends text this way.
fn halves(text: &str) -> impl Iterator<Item = &str> {
    let mut mid = text.len() / 2;
    while !text.is_char_boundary(mid) {
        mid -= 1;
    }
    let (a, b) = text.split_at(mid);
    [a, b].into_iter().filter(|s| !s.is_empty())
}

fn lock(state: &Shared) -> MutexGuard<'_, State> {
    // A panic in one handler must not hide the requests from the test that reads them.
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A running scripted model server; it stops when dropped.
pub struct ModelServer {
    addr: SocketAddr,
    state: Shared,
    stop: Option<oneshot::Sender<()>>,
}

impl ModelServer {
    /// Starts a server on 127.0.0.1 on a free port, answering from `script`.
    /// Call from inside a tokio runtime; the server runs on it until dropped.
    pub async fn start(script: Script) -> std::io::Result<Self> {
        Self::start_on(std::net::Ipv4Addr::LOCALHOST.into(), script).await
    }

    /// [`Self::start`] on `ip` (an address of this machine that a remote box's egress proxy
    /// reaches, such as a Docker bridge's gateway).
    pub async fn start_on(ip: std::net::IpAddr, script: Script) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind((ip, 0)).await?;
        let addr = listener.local_addr()?;
        let hits = std::iter::once(&script)
            .chain(script.follow_ups.iter().map(|f| &f.script))
            .map(|s| vec![0; s.turns.len()])
            .collect();
        let state: Shared = Arc::new(Mutex::new(State {
            script,
            hits,
            requests: Vec::new(),
            messages: 0,
        }));
        let handler_state = state.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = handler_state.clone();
                async move { handle(&state, method, uri, headers, body).await }
            },
        );
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(e) = serve.await {
                eprintln!("scripted model server: {e}");
            }
        });
        Ok(Self {
            addr,
            state,
            stop: Some(stop),
        })
    }

    /// The base URL to give the agent, for example `http://127.0.0.1:41234`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL in OpenAI's convention, with `/v1` (for `OPENAI_BASE_URL`).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    /// The `POST /v1/messages` requests received so far, bodies parsed.
    pub fn message_requests(&self) -> Vec<Value> {
        lock(&self.state)
            .requests
            .iter()
            .filter(|r| r.method == "POST" && path_only(&r.path) == "/v1/messages")
            .filter_map(RecordedRequest::json)
            .collect()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn path_only(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

/// Answers one request: records it as it arrives, then waits out the turn's delay
/// (without holding the state) and sends the answer.
async fn handle(
    state: &Shared,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (answer, delay) = prepare(state, &method, &uri, &headers, &body);
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let mut response = Response::builder()
        .status(StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR));
    for (name, value) in &answer.headers {
        response = response.header(name, value);
    }
    response
        .body(Body::from(answer.body))
        .unwrap_or_else(|_| Response::new(Body::from("bad scripted header")))
}

/// Picks the answer to a request and records the request, under the state lock;
/// returns the answer and how long to wait before sending it.
fn prepare(
    state: &Shared,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> (anthropic::Answer, Option<Duration>) {
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned());
    let text = String::from_utf8_lossy(body).into_owned();
    let mut state = lock(state);
    let answered = match (method.as_str(), path_only(&path)) {
        ("POST", "/v1/messages") => scripted(&mut state, &text, &ANTHROPIC),
        ("POST", "/v1/messages/count_tokens") => {
            Scripted::plain(anthropic::answer_count_tokens(&text))
        }
        ("POST", "/v1/responses") => scripted(&mut state, &text, &RESPONSES),
        ("POST", "/v1/chat/completions") => scripted(&mut state, &text, &CHAT),
        // Anything else is logged (kept in `requests`) and refused, so a test sees what
        // the agent asked for that the server does not speak.
        _ => Scripted::plain(plain(
            404,
            "the scripted model server does not serve this path",
        )),
    };
    state.requests.push(RecordedRequest {
        method: method.as_str().to_owned(),
        path,
        headers: headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: text,
        status: answered.answer.status,
        turn: answered.answer.turn,
        script: answered.script,
    });
    (answered.answer, answered.delay)
}

/// What one scripted API needs: how it counts the tool results of a conversation
/// from a message on, how it finds the last user message holding a marker, and how
/// it answers with a turn.
struct Api {
    /// The tool results in the conversation's messages (input items) from this
    /// position on.
    count: fn(&Value, usize) -> usize,
    /// The last user message holding one of the markers: its position and which
    /// marker (see [`last_marked`]).
    marked: fn(&Value, &[&str]) -> Option<Marked>,
    /// The answer for the turn picked (or the fallback when there is none).
    answer: fn(&Value, Option<(usize, &Turn)>, usize) -> anthropic::Answer,
}

const ANTHROPIC: Api = Api {
    count: anthropic::count_tool_results,
    marked: anthropic::marked_message,
    answer: anthropic::answer_messages,
};

const RESPONSES: Api = Api {
    count: openai::count_tool_outputs,
    marked: openai::marked_input,
    answer: openai::answer_responses,
};

const CHAT: Api = Api {
    count: chat::count_tool_messages,
    marked: chat::marked_message,
    answer: chat::answer_chat,
};

/// A marked user message: its position in the conversation and the index of the
/// marker it holds.
type Marked = (usize, usize);

/// An answer with what the server does around it.
struct Scripted {
    answer: anthropic::Answer,
    /// How long to wait before sending it.
    delay: Option<Duration>,
    /// The follow-up script's marker, when one answered.
    script: Option<String>,
}

impl Scripted {
    fn plain(answer: anthropic::Answer) -> Self {
        Self {
            answer,
            delay: None,
            script: None,
        }
    }
}

/// Of a conversation's user messages (each its position and its texts), the last
/// one holding one of `markers`: its position and the index of the first marker
/// (in the order given) it holds.
fn last_marked<'a>(
    user_messages: impl Iterator<Item = (usize, Vec<&'a str>)>,
    markers: &[&str],
) -> Option<Marked> {
    if markers.is_empty() {
        return None;
    }
    user_messages
        .filter_map(|(position, texts)| {
            markers
                .iter()
                .position(|marker| texts.iter().any(|text| text.contains(marker)))
                .map(|which| (position, which))
        })
        .last()
}

/// Answers a request of any scripted API: the script is the follow-up whose marker
/// is in the last marked user message (the main script when none is), the turn is
/// chosen by how many tool results the conversation holds after that message (see
/// [`Script`]), past the end `after_end` answers.
fn scripted(state: &mut State, text: &str, api: &Api) -> Scripted {
    let request = match serde_json::from_str::<Value>(text) {
        Ok(request) => request,
        Err(e) => return Scripted::plain(plain(400, &format!("the body is not JSON: {e}"))),
    };
    let markers: Vec<&str> = state
        .script
        .follow_ups
        .iter()
        .map(|f| f.marker.as_str())
        .collect();
    let (follow_up, from) = match (api.marked)(&request, &markers) {
        Some((position, which)) => (Some(which), position + 1),
        None => (None, 0),
    };
    let script = match follow_up {
        Some(which) => &state.script.follow_ups[which].script,
        None => &state.script,
    };
    let hits = &mut state.hits[follow_up.map_or(0, |which| which + 1)];
    let index = anthropic::pick_turn(script, (api.count)(&request, from), hits);
    if let Some(i) = index {
        hits[i] += 1;
    }
    state.messages += 1;
    // Past the end, each answer's tool calls get ids of their own (`<id>_<n>`): a script
    // whose `after_end` calls a tool is an agent that loops, and stays a coherent one.
    let looping = match index {
        Some(_) => None,
        None => script
            .after_end
            .as_ref()
            .map(|t| t.with_unique_ids(state.messages)),
    };
    let turn = index
        .map(|i| (i, &script.turns[i]))
        .or_else(|| looping.as_ref().map(|t| (usize::MAX, t)));
    let delay = turn.and_then(|(_, t)| t.delay());
    let mut answer = (api.answer)(&request, turn, state.messages);
    answer.turn = index;
    Scripted {
        answer,
        delay,
        script: follow_up.map(|which| state.script.follow_ups[which].marker.clone()),
    }
}

fn plain(status: u16, message: &str) -> anthropic::Answer {
    anthropic::Answer {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: serde_json::json!({ "type": "error", "error": { "type": "not_found_error", "message": message } })
            .to_string(),
        turn: None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn state(script: Script) -> State {
        let hits = std::iter::once(&script)
            .chain(script.follow_ups.iter().map(|f| &f.script))
            .map(|s| vec![0; s.turns.len()])
            .collect();
        State {
            script,
            hits,
            requests: Vec::new(),
            messages: 0,
        }
    }

    fn tool(id: &str) -> Block {
        Block::tool_use(id, "Read", json!({ "file_path": "a" }))
    }

    fn result(id: &str) -> Value {
        json!({ "role": "user", "content": [{ "type": "tool_result", "tool_use_id": id }] })
    }

    fn user(text: &str) -> Value {
        json!({ "role": "user", "content": text })
    }

    fn ask(state: &mut State, messages: &[Value]) -> (Option<usize>, Option<String>, String) {
        let body = json!({ "model": "m", "messages": messages }).to_string();
        let answered = scripted(state, &body, &ANTHROPIC);
        (answered.answer.turn, answered.script, answered.answer.body)
    }

    #[test]
    fn a_marked_message_switches_to_its_follow_up_counting_results_after_it() {
        let mut state = state(
            Script::new([Turn::blocks([tool("a")]), Turn::text("first done")])
                .follow_up(
                    "[second]",
                    Script::new([Turn::blocks([tool("b")]), Turn::text("second done")]),
                )
                .follow_up("[third]", Script::new([Turn::text("third done")])),
        );
        let start = [user("fix it")];
        assert_eq!(ask(&mut state, &start).0, Some(0));
        let first = [user("fix it"), result("a")];
        let (turn, script, body) = ask(&mut state, &first);
        assert_eq!((turn, script), (Some(1), None));
        assert!(body.contains("first done"));

        let mut second = first.to_vec();
        second.push(user("more [second]"));
        let (turn, script, _) = ask(&mut state, &second);
        assert_eq!(
            (turn, script.as_deref()),
            (Some(0), Some("[second]")),
            "the result before the marked message does not count"
        );
        second.push(result("b"));
        let (turn, _, body) = ask(&mut state, &second);
        assert_eq!(turn, Some(1));
        assert!(body.contains("second done"));

        let mut third = second.clone();
        third.push(user("and [third]"));
        assert_eq!(ask(&mut state, &third).1.as_deref(), Some("[third]"));
        third.push(user("[second] once more"));
        assert_eq!(
            ask(&mut state, &third).1.as_deref(),
            Some("[second]"),
            "the marker of the last marked message wins"
        );
    }

    #[test]
    fn a_follow_up_past_its_end_answers_its_own_after_end() {
        let follow = Script {
            after_end: Some(Turn::text("follow-up over")),
            ..Script::new([Turn::text("ok")])
        };
        let mut state = state(Script::new([Turn::text("main")]).follow_up("[x]", follow));
        let (turn, script, body) = ask(&mut state, &[user("[x]"), result("z")]);
        assert_eq!((turn, script.as_deref()), (None, Some("[x]")));
        assert!(body.contains("follow-up over"));
    }

    #[test]
    fn each_api_finds_its_follow_up() {
        let script = || {
            Script::new([Turn::text("main")]).follow_up("[x]", Script::new([Turn::text("follow")]))
        };
        let mut responses = state(script());
        let body = json!({ "input": [
            { "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "go [x]" }] },
        ]})
        .to_string();
        let answered = scripted(&mut responses, &body, &RESPONSES);
        assert_eq!(answered.script.as_deref(), Some("[x]"));
        assert!(answered.answer.body.contains("follow"));
        let mut chat = state(script());
        let body = json!({ "messages": [{ "role": "user", "content": "go [x]" }] }).to_string();
        assert_eq!(
            scripted(&mut chat, &body, &CHAT).script.as_deref(),
            Some("[x]")
        );
        let body = json!({ "messages": [{ "role": "user", "content": "go" }] }).to_string();
        assert_eq!(scripted(&mut chat, &body, &CHAT).script, None);
    }

    #[test]
    fn limited_errors_are_counted_per_script() {
        let mut state = state(
            Script::new([HttpError::status(429).times(1).into(), Turn::text("main")]).follow_up(
                "[x]",
                Script::new([HttpError::status(529).times(1).into(), Turn::text("follow")]),
            ),
        );
        let plain = [user("go")];
        let marked = [user("go [x]")];
        assert_eq!(ask(&mut state, &plain).0, Some(0));
        assert_eq!(
            ask(&mut state, &marked).0,
            Some(0),
            "its own error still due"
        );
        assert_eq!(ask(&mut state, &marked).0, Some(1));
        assert_eq!(ask(&mut state, &plain).0, Some(1));
    }

    #[test]
    fn the_delay_of_the_turn_that_answers_is_kept() {
        let wait = Duration::from_millis(250);
        let mut state = state(Script::new([
            Turn::text("slow").delayed(wait),
            Turn::text("fast"),
        ]));
        let body = json!({ "messages": [user("go")] }).to_string();
        assert_eq!(scripted(&mut state, &body, &ANTHROPIC).delay, Some(wait));
        assert_eq!(
            Turn::from(HttpError::status(500)).delayed(wait).delay(),
            None,
            "an error is not delayed"
        );
        assert_eq!(Reply::new(vec![]).delay, None, "no delay by default");
    }
}
