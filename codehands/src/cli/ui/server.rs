//! The review page's server: 127.0.0.1 only, a random key in the URL, every request without
//! it refused, and no header that would let another site's script read an answer (no CORS).

use std::io::Read;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use runner_contract::{Error, Result};
use runner_core::LocalRunner;

use super::{actions, api, stream};

/// The page, its script and its style, served from the binary (no build step of their own).
const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");
const STYLE: &str = include_str!("page.css");

/// What every request of the page shares.
pub(super) struct Ui {
    /// The runner every command line command uses, built once.
    pub runner: LocalRunner,
    /// The key a request must carry (`?token=` or the `x-codehands-token` header).
    token: String,
    /// The port served, which the `Host` header must name.
    port: u16,
    /// The tests column of the list, kept per session while its log does not grow.
    pub tests: api::TestsCache,
}

/// Binds 127.0.0.1:`port`, prints the page's URL on stdout and serves until Ctrl-C.
pub async fn serve(runner: LocalRunner, port: u16) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| {
            Error::io(
                format!("cannot listen on 127.0.0.1:{port} (pick another with --port N, or 0 for any free one)"),
                &e,
            )
        })?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::io("cannot read the address served", &e))?
        .port();
    let ui = Arc::new(Ui {
        runner,
        token: new_token()?,
        port,
        tests: api::TestsCache::default(),
    });
    let url = format!("http://127.0.0.1:{port}/?token={}", ui.token);
    crate::cli::output::line(&url)?;
    eprintln!(
        "codehands ui: serving the review page on 127.0.0.1:{port} (only this machine, only \
         with the key in the URL); Ctrl-C ends it"
    );
    let app = router(ui);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| Error::io("the review page's server failed", &e))
}

/// Every route, behind the key check.
fn router(ui: Arc<Ui>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/page.js", get(script))
        .route("/page.css", get(style))
        .route("/api/sessions", get(api::list))
        .route("/api/sessions/{id}", get(api::session))
        .route("/api/sessions/{id}/diff", get(api::diff))
        .route("/api/sessions/{id}/report", get(api::report))
        .route("/api/sessions/{id}/events", get(stream::events))
        .route("/api/sessions/{id}/approve", post(actions::approve))
        .route("/api/sessions/{id}/reject", post(actions::reject))
        .route("/api/sessions/{id}/stop", post(actions::stop))
        .route("/api/sessions/{id}/send", post(actions::send))
        .route("/api/sessions/{id}/comment", post(actions::comment))
        .route("/api/sessions/{id}/answer", post(actions::answer))
        .route("/api/tasks/{id}", get(api::task))
        .route("/api/tasks/{id}/reject", post(actions::reject_task))
        .route("/api/compare", get(api::compare))
        .fallback(|| async { (StatusCode::NOT_FOUND, "no such page of codehands ui") })
        .layer(middleware::from_fn_with_state(ui.clone(), guard))
        .with_state(ui)
}

/// Refuses a request without the key, or sent to another host name than ours (a page of
/// another site that a DNS trick points at 127.0.0.1); marks every answer private.
async fn guard(State(ui): State<Arc<Ui>>, request: Request, next: Next) -> Response {
    let host_ok = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|host| {
            host == format!("127.0.0.1:{}", ui.port) || host == format!("localhost:{}", ui.port)
        });
    if !host_ok {
        return refused("refused: the review page answers only at 127.0.0.1 on its own port");
    }
    let given = request
        .headers()
        .get("x-codehands-token")
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| query_value(request.uri().query().unwrap_or(""), "token"));
    if !given.is_some_and(|given| same_key(&given, &ui.token)) {
        return refused(
            "refused: this page needs its key; open the whole URL `codehands ui` printed \
             (it ends with ?token=…)",
        );
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

fn refused(message: &'static str) -> Response {
    (StatusCode::FORBIDDEN, message).into_response()
}

/// Compares the keys in a time that does not depend on where they differ.
fn same_key(given: &str, token: &str) -> bool {
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The value of `name` in a query string (`a=1&token=…`), percent-decoding left out: our
/// keys and ids are hex and dashes.
pub(super) fn query_value(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
}

/// 32 bytes of the kernel's randomness, as hex.
fn new_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Error::io("cannot read /dev/urandom for the page's key", &e))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The page, with the key in the links to its script and style (each request needs it).
async fn page(State(ui): State<Arc<Ui>>) -> Response {
    let html = PAGE.replace("{{TOKEN}}", &ui.token);
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                 img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            ),
        ],
        html,
    )
        .into_response()
}

async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}

async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_read_from_the_query_and_compared_whole() {
        assert_eq!(
            query_value("a=1&token=ab12", "token").as_deref(),
            Some("ab12")
        );
        assert_eq!(query_value("tokens=ab12", "token"), None);
        assert!(same_key("ab12", "ab12"));
        assert!(!same_key("ab1", "ab12"));
        assert!(!same_key("ab13", "ab12"));
        let key = new_token().unwrap();
        assert_eq!(key.len(), 64);
        assert_ne!(key, new_token().unwrap());
    }
}
