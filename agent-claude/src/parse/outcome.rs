//! The `result` line: `task.finished`, or `task.failed` when `is_error` is true
//! (never judged by `subtype` alone), with a message that says what to do.

use runner_contract::EventBody;
use runner_contract::event::{FailureKind, ProviderState, TaskFailed, TaskFinished};

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

/// What the results of one process cost and used, summed: a conversation prints a result
/// per turn it runs, and the runner keeps the last, which must stand for them all. Claude
/// Code's `total_cost_usd` counts the whole session, runs a resume continues included, so
/// each result's own share is read from `model_usage_since_last_result` when it is there.
#[derive(Debug, Default)]
pub(super) struct Spent {
    cost: Option<f64>,
    usage: Option<serde_json::Value>,
}

impl Spent {
    /// Adds the result `line` and sets the sums on its `event`.
    pub(super) fn add(&mut self, line: &Line<'_>, event: &mut EventBody) {
        let own = line
            .model_usage_since_last_result
            .and_then(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).ok())
            .and_then(|models| {
                let models = models.as_object()?.clone();
                Some(
                    models
                        .values()
                        .filter_map(|m| m.get("costUSD").and_then(serde_json::Value::as_f64))
                        .sum::<f64>(),
                )
            })
            .or_else(|| wire::f64_of(line.total_cost_usd));
        if let Some(own) = own {
            self.cost = Some(self.cost.unwrap_or(0.0) + own);
        }
        let usage = line
            .usage
            .and_then(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).ok());
        self.usage = match (self.usage.take(), usage) {
            (Some(before), Some(now)) => Some(sum_numbers(before, now)),
            (before, now) => now.or(before),
        };
        match event {
            EventBody::TaskFinished(finished) => {
                finished.cost_usd = self.cost;
                finished.usage = self.usage.clone();
            }
            EventBody::TaskFailed(failed) => failed.cost_usd = self.cost,
            _ => {}
        }
    }
}

/// `now` with each top-level number of `before` added to its own (token counts).
fn sum_numbers(before: serde_json::Value, mut now: serde_json::Value) -> serde_json::Value {
    if let (Some(before), Some(now)) = (before.as_object(), now.as_object_mut()) {
        for (key, value) in now.iter_mut() {
            if let (Some(a), Some(b)) = (
                before.get(key).and_then(serde_json::Value::as_u64),
                value.as_u64(),
            ) {
                *value = (a + b).into();
            }
        }
    }
    now
}
