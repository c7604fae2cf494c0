//! The suite as the caller of an agent that asks before it runs a tool: each
//! `permission.requested` is allowed through the contract's `Runner::answer`, as a daemon or
//! `codehands answer` would, so the scenes' commands run.

use futures::StreamExt;
use runner_contract::{Event, EventBody, EventStream, PermissionAnswer, Runner, SessionId};

/// Allows `event` when it is a permission request of session `id`; returns whether it was.
pub(super) async fn allow_if_asked(runner: &dyn Runner, id: &SessionId, event: &Event) -> bool {
    let EventBody::PermissionRequested(asked) = &event.body else {
        return false;
    };
    runner
        .answer(
            id,
            &asked.request_id,
            PermissionAnswer::Allow {
                updated_input: None,
            },
        )
        .await
        .unwrap_or_else(|e| panic!("the suite's allow of {:?} was refused: {e}", asked.tool));
    true
}

/// A run's events to its end, each permission request allowed as it comes when `asks`
/// (a run that does not ask never sees one: the runner denies at once).
pub(super) async fn collect(
    runner: &dyn Runner,
    id: &SessionId,
    mut stream: EventStream,
    asks: bool,
) -> Vec<Event> {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        if asks {
            allow_if_asked(runner, id, &event).await;
        }
        events.push(event);
    }
    events
}
