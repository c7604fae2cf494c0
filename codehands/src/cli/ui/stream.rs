//! A run's events as server-sent events, from its event log: replayed after a seq, then live
//! (`Runner::events`, what `codehands events --follow` reads). Each SSE carries the event's
//! seq as its id, so the browser's reconnect (`Last-Event-ID`) resumes after the last one it
//! got; an `end` event says the run was followed to its end (or why it could not be).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::response::sse::{Event as Sse, KeepAlive};
use futures::StreamExt;
use runner_contract::{Event, Runner};

use super::api::ApiResult;
use super::server::{Ui, query_value};

/// `GET /api/sessions/{id}/events?after=N`: the events after seq N (or after the
/// `Last-Event-ID` a reconnecting browser sends), then live until the run ends.
pub(super) async fn events(
    State(ui): State<Arc<Ui>>,
    Path(text): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> ApiResult {
    let id = ui.runner.resolve_session(&text).await?;
    let resumed = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let asked = query_value(query.as_deref().unwrap_or(""), "after").and_then(|v| v.parse().ok());
    let after = resumed.or(asked).unwrap_or(0);
    let events = ui.runner.events(&id, after).await?;
    let end_ui = ui.clone();
    let stream = events
        .map(|event| Ok::<_, Infallible>(sse_of(&event)))
        .chain(futures::stream::once(async move {
            // Ended with the run, or before it could be followed to its end: then why.
            let why = end_ui
                .runner
                .after_stream(&id)
                .await
                .err()
                .map(|e| e.to_string());
            let state = end_ui
                .runner
                .session(&id)
                .await
                .map(|r| r.state.to_string())
                .ok();
            let data = serde_json::json!({ "state": state, "error": why });
            Ok(Sse::default().event("end").data(data.to_string()))
        }));
    Ok(axum::response::Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(10)))
        .into_response())
}

/// One event as an SSE: its seq as the id, and as data the contract JSON with the line the
/// command line shows for it (`kind`, `text`).
fn sse_of(event: &Event) -> Sse {
    let (kind, text) = crate::cli::view::describe(&event.body);
    // The agent's raw line stays in the log: the page shows the event, and the line says it.
    let event = Event {
        raw: None,
        ..event.clone()
    };
    let data = serde_json::json!({ "kind": kind, "text": text, "event": event });
    Sse::default()
        .id(event.seq.to_string())
        .event("event")
        .data(data.to_string())
}
