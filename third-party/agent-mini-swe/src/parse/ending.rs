//! How a run that did not submit ended, from the `exit` message's `exit_status`.
//!
//! mini names its own stops (`LimitsExceeded`, `TimeExceeded`, `RepeatedFormatError`);
//! any other status is the name of the exception that ended the run, with the
//! exception's text as the message's content. Provider trouble comes as litellm's
//! exceptions, each standing for one HTTP status (litellm's `exceptions.py`):
//! `AuthenticationError: OpenAIException - Incorrect API key provided.` and so on.
//! mini retries a failing model call (ten times by default, waiting 4 s and more)
//! and reports the retries on stderr only, so the one provider trouble stdout
//! shows is the one that ended the run.

use runner_contract::event::{FailureKind, ProviderState, ProviderStatus, TaskFailed};

/// What an ending other than `Submitted` becomes.
pub(super) struct Ending {
    /// The provider's state, when the exception names provider trouble.
    pub provider: Option<ProviderStatus>,
    /// The failure.
    pub failed: TaskFailed,
}

/// The HTTP status each of litellm's exceptions stands for.
fn http_status(exception: &str) -> Option<u16> {
    Some(match exception {
        "BadRequestError" | "ContextWindowExceededError" | "UnsupportedParamsError" => 400,
        "AuthenticationError" => 401,
        "PermissionDeniedError" => 403,
        "NotFoundError" => 404,
        "Timeout" => 408,
        "UnprocessableEntityError" => 422,
        "RateLimitError" => 429,
        "InternalServerError" | "APIError" | "APIConnectionError" => 500,
        "BadGatewayError" => 502,
        "ServiceUnavailableError" => 503,
        _ => return None,
    })
}

/// The state a person can act on, for a litellm exception and its text.
fn state(status: u16, text: &str) -> Option<ProviderState> {
    let lower = text.to_ascii_lowercase();
    match status {
        429 if lower.contains("quota") => Some(ProviderState::UsageLimit),
        429 => Some(ProviderState::RateLimited),
        401 | 403 => Some(ProviderState::AuthExpired),
        402 => Some(ProviderState::SubscriptionInactive),
        408 | 500..=599 => Some(ProviderState::Down),
        _ => None,
    }
}

/// The ending for `exit_status` (with the exit message's text, the amount spent
/// and the limits from mini's config).
pub(super) fn ending(
    exit_status: &str,
    text: &str,
    spent: Option<f64>,
    limit: Option<f64>,
) -> Ending {
    let text = text.trim();
    let failed = |reason, message: String| TaskFailed {
        reason,
        message,
        stderr: None,
        exit_code: None,
        cost_usd: spent,
    };
    match exit_status {
        "LimitsExceeded" => Ending {
            provider: None,
            failed: failed(
                FailureKind::BudgetExhausted,
                format!(
                    "mini-swe-agent stopped at its limit: US${} spent of US${}; raise the budget to let it go on",
                    spent.unwrap_or(0.0),
                    limit.map_or_else(|| "?".to_owned(), |l| l.to_string()),
                ),
            ),
        },
        "TimeExceeded" => Ending {
            provider: None,
            failed: failed(
                FailureKind::AgentError,
                "mini-swe-agent stopped at its wall-time limit".to_owned(),
            ),
        },
        "RepeatedFormatError" => Ending {
            provider: None,
            failed: failed(
                FailureKind::AgentError,
                "the model answered several times in a row without a usable bash command; try another model".to_owned(),
            ),
        },
        exception => {
            let status = http_status(exception);
            let state = status.and_then(|s| state(s, text));
            let reason = if state == Some(ProviderState::AuthExpired) {
                FailureKind::AuthFailed
            } else {
                FailureKind::AgentError
            };
            let hint = match state {
                Some(ProviderState::AuthExpired) => {
                    "check the provider's key (OPENAI_API_KEY, or the one the model's provider reads)"
                }
                Some(ProviderState::RateLimited | ProviderState::Down) => "try again later",
                Some(ProviderState::UsageLimit | ProviderState::SubscriptionInactive) => {
                    "check the provider account's plan and billing"
                }
                None => "the agent's stderr has the traceback",
            };
            let what = if text.is_empty() {
                exception.to_owned()
            } else {
                text.to_owned()
            };
            Ending {
                provider: state.map(|state| ProviderStatus {
                    status: state,
                    message: what.clone(),
                    resets_at: None,
                    http_status: status,
                    retry_attempt: None,
                }),
                failed: failed(
                    reason,
                    format!("mini-swe-agent ended on {exception}: {what} ({hint})"),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn litellm_exceptions_name_provider_states() {
        let auth = ending(
            "AuthenticationError",
            "litellm.AuthenticationError: OpenAIException - Incorrect API key provided.",
            None,
            None,
        );
        assert_eq!(auth.failed.reason, FailureKind::AuthFailed);
        let provider = auth.provider.unwrap();
        assert_eq!(
            (provider.status, provider.http_status),
            (ProviderState::AuthExpired, Some(401))
        );
        let quota = ending(
            "RateLimitError",
            "You exceeded your current quota",
            None,
            None,
        );
        assert_eq!(quota.provider.unwrap().status, ProviderState::UsageLimit);
        let limited = ending("RateLimitError", "Too many requests", None, None);
        assert_eq!(limited.provider.unwrap().status, ProviderState::RateLimited);
        assert_eq!(limited.failed.reason, FailureKind::AgentError);
        let down = ending("InternalServerError", "", None, None);
        assert_eq!(down.provider.unwrap().status, ProviderState::Down);
        let other = ending("ValueError", "bad config", None, None);
        assert!(other.provider.is_none());
        assert!(other.failed.message.contains("ValueError: bad config"));
    }

    #[test]
    fn mini_s_own_stops() {
        let spent = ending("LimitsExceeded", "LimitsExceeded", Some(0.61), Some(0.5));
        assert_eq!(spent.failed.reason, FailureKind::BudgetExhausted);
        assert!(spent.failed.message.contains("US$0.61 spent of US$0.5"));
        assert_eq!(spent.failed.cost_usd, Some(0.61));
        assert_eq!(
            ending("RepeatedFormatError", "", None, None).failed.reason,
            FailureKind::AgentError
        );
    }
}
