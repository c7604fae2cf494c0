//! The `result` line: `task.finished`, or `task.failed` when `is_error` is true
//! (never judged by `subtype` alone), with a message that says what to do.

use runner_core::EventBody;
use runner_core::event::{FailureKind, ProviderState, TaskFailed, TaskFinished};

use super::provider;
use super::wire::{self, Line, Str};

/// The event of a `result` line; `provider` is the last provider trouble seen in the run.
pub(super) fn result(line: &Line<'_>, provider: Option<ProviderState>) -> EventBody {
    let cost_usd = wire::f64_of(line.total_cost_usd);
    if wire::bool_of(line.is_error) != Some(true) {
        return EventBody::TaskFinished(TaskFinished {
            result: line.result.owned(),
            cost_usd,
            usage: line
                .usage
                .and_then(|raw| serde_json::from_str(raw.get()).ok()),
            duration_ms: wire::u64_of(line.duration_ms),
            num_turns: wire::u64_of(line.num_turns),
            diff_stat: None,
            interrupted: false,
        });
    }
    let errors: Vec<String> = line
        .errors
        .and_then(|raw| serde_json::from_str::<Vec<Str<'_>>>(raw.get()).ok())
        .unwrap_or_default()
        .iter()
        .filter_map(Str::owned)
        .collect();
    let said = line
        .result
        .owned()
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| errors.join("; "));
    let status = wire::u64_of(line.api_error_status);
    let (reason, advice) =
        if line.subtype.is("error_max_budget_usd") || line.terminal_reason.is("budget_exhausted") {
            (
                FailureKind::BudgetExhausted,
                "raise the budget and resume the session",
            )
        } else {
            let state = provider
                .or_else(|| provider::state_for(None, status.and_then(|s| u16::try_from(s).ok())));
            match state {
                Some(ProviderState::AuthExpired) => (
                    FailureKind::AuthFailed,
                    "check ANTHROPIC_API_KEY, or log in to Claude Code again",
                ),
                Some(ProviderState::RateLimited) => (
                    FailureKind::AgentError,
                    "wait for the rate limit to lift, then resume",
                ),
                Some(ProviderState::SubscriptionInactive | ProviderState::UsageLimit) => (
                    FailureKind::AgentError,
                    "check the account's plan and billing, then resume",
                ),
                Some(ProviderState::Down) => (
                    FailureKind::AgentError,
                    "the model provider is failing: try again later",
                ),
                None if status.is_some() => (
                    FailureKind::AgentError,
                    "the model provider refused the request",
                ),
                None => (FailureKind::AgentError, "read the agent's output above"),
            }
        };
    let said = if said.is_empty() {
        format!(
            "Claude Code ended with an error ({})",
            line.subtype.get().unwrap_or("no subtype")
        )
    } else {
        said
    };
    EventBody::TaskFailed(TaskFailed {
        reason,
        message: format!("{said} — {advice}"),
        stderr: None,
        exit_code: None,
        cost_usd,
    })
}
