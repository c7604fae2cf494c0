//! The scripted model server: an HTTP server on 127.0.0.1 that real agent CLIs
//! talk to in tests, answering from a [`Script`] and keeping every request.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use runner_fake::model_server::{ModelServer, Script, Turn};
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

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::oneshot;

pub use script::{Block, HttpError, Reply, Script, Turn, Usage};

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
    /// The script turn that answered, if one did.
    pub turn: Option<usize>,
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
    /// How often each turn has answered, to retire limited error turns.
    hits: Vec<u32>,
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
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let hits = vec![0; script.turns.len()];
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
                async move { handle(&state, method, uri, headers, body) }
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

fn handle(state: &Shared, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned());
    let text = String::from_utf8_lossy(&body).into_owned();
    let mut state = lock(state);
    let answer = match (method.as_str(), path_only(&path)) {
        ("POST", "/v1/messages") => scripted(
            &mut state,
            &text,
            anthropic::count_tool_results,
            anthropic::answer_messages,
        ),
        ("POST", "/v1/messages/count_tokens") => anthropic::answer_count_tokens(&text),
        ("POST", "/v1/responses") => scripted(
            &mut state,
            &text,
            openai::count_tool_outputs,
            openai::answer_responses,
        ),
        ("POST", "/v1/chat/completions") => scripted(
            &mut state,
            &text,
            chat::count_tool_messages,
            chat::answer_chat,
        ),
        // Anything else is logged (kept in `requests`) and refused, so a test sees what
        // the agent asked for that the server does not speak.
        _ => plain(404, "the scripted model server does not serve this path"),
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
        status: answer.status,
        turn: answer.turn,
    });
    drop(state);
    let mut response = Response::builder()
        .status(StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR));
    for (name, value) in &answer.headers {
        response = response.header(name, value);
    }
    response
        .body(Body::from(answer.body))
        .unwrap_or_else(|_| Response::new(Body::from("bad scripted header")))
}

/// How an API counts the tool results in a request, and how it answers with a turn.
type CountResults = fn(&Value) -> usize;
type AnswerTurn = fn(&Value, Option<(usize, &Turn)>, usize) -> anthropic::Answer;

/// Answers a request of any scripted API: the turn is chosen by how many tool
/// results the conversation holds (see [`Script`]), past the end `after_end` answers.
fn scripted(
    state: &mut State,
    text: &str,
    count: CountResults,
    answer: AnswerTurn,
) -> anthropic::Answer {
    let request = match serde_json::from_str::<Value>(text) {
        Ok(request) => request,
        Err(e) => return plain(400, &format!("the body is not JSON: {e}")),
    };
    let index = anthropic::pick_turn(&state.script, count(&request), &state.hits);
    if let Some(i) = index {
        state.hits[i] += 1;
    }
    state.messages += 1;
    let turn = index
        .map(|i| (i, &state.script.turns[i]))
        .or_else(|| state.script.after_end.as_ref().map(|t| (usize::MAX, t)));
    let mut answered = answer(&request, turn, state.messages);
    answered.turn = index;
    answered
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
