//! Provider trouble as Claude Code 2.1.332 prints it, named as a `provider.status`.
//!
//! From the recordings: while it backs off, a `system` line of subtype `api_retry`
//! per retry (`error`: `rate_limit`, `authentication_failed`, `server_error`,
//! `overloaded` …, `error_status`, `retry_delay_ms`); at the end an assistant line
//! with `is_api_error_message: true`, the same `error` (or `billing_error`) and
//! `api_error_status`.

use std::time::{Duration, SystemTime};

use runner_contract::event::{ProviderState, ProviderStatus};

/// The state for Claude Code's `error` name, falling back on the HTTP status.
pub(super) fn state_for(error: Option<&str>, http_status: Option<u16>) -> Option<ProviderState> {
    let by_name = match error.unwrap_or("") {
        "rate_limit" => Some(ProviderState::RateLimited),
        "authentication_failed" | "oauth_org_not_allowed" => Some(ProviderState::AuthExpired),
        "billing_error" => Some(ProviderState::SubscriptionInactive),
        "server_error" | "overloaded" => Some(ProviderState::Down),
        _ => None,
    };
    by_name.or(match http_status? {
        429 => Some(ProviderState::RateLimited),
        401 | 403 => Some(ProviderState::AuthExpired),
        402 => Some(ProviderState::SubscriptionInactive),
        500..=599 => Some(ProviderState::Down),
        _ => None,
    })
}

/// The `provider.status` of one `api_retry` line: live, at every retry.
pub(super) fn from_retry(
    error: Option<&str>,
    http_status: Option<u16>,
    attempt: Option<u64>,
    retry_delay_ms: Option<u64>,
) -> Option<ProviderStatus> {
    let status = state_for(error, http_status)?;
    // The CLI waits retry_delay_ms (from retry-after, with jitter) before trying again:
    // that is when the limit is expected to lift.
    let resets_at = match (status, retry_delay_ms) {
        (ProviderState::RateLimited, Some(ms)) => Some(
            humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_millis(ms))
                .to_string(),
        ),
        _ => None,
    };
    let what = match status {
        ProviderState::RateLimited => "rate limited",
        ProviderState::AuthExpired => "the API key or login was refused",
        ProviderState::UsageLimit => "a usage limit was reached",
        ProviderState::SubscriptionInactive => "billing is not active",
        ProviderState::Down => "the provider is down or overloaded",
    };
    let code = http_status.map_or_else(String::new, |c| format!(" (HTTP {c})"));
    let delay = retry_delay_ms.map_or_else(String::new, |ms| format!(", retrying in {ms} ms"));
    let attempt_text = attempt.map_or_else(String::new, |a| format!(" attempt {a}"));
    Some(ProviderStatus {
        status,
        message: format!("Claude Code:{attempt_text} {what}{code}{delay}"),
        resets_at,
        http_status,
        retry_attempt: attempt.and_then(|a| u32::try_from(a).ok()),
    })
}

/// The `provider.status` of the assistant line that gives up (`is_api_error_message`).
pub(super) fn from_api_error(
    error: Option<&str>,
    http_status: Option<u16>,
    text: String,
) -> Option<ProviderStatus> {
    Some(ProviderStatus {
        status: state_for(error, http_status)?,
        message: text,
        resets_at: None,
        http_status,
        retry_attempt: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_cli_then_the_status() {
        use ProviderState::*;
        assert_eq!(state_for(Some("rate_limit"), Some(429)), Some(RateLimited));
        assert_eq!(
            state_for(Some("authentication_failed"), Some(403)),
            Some(AuthExpired)
        );
        assert_eq!(
            state_for(Some("billing_error"), Some(400)),
            Some(SubscriptionInactive)
        );
        assert_eq!(state_for(Some("overloaded"), Some(529)), Some(Down));
        assert_eq!(state_for(Some("server_error"), Some(500)), Some(Down));
        assert_eq!(state_for(Some("something_new"), Some(503)), Some(Down));
        assert_eq!(state_for(Some("something_new"), Some(400)), None);
        assert_eq!(state_for(Some("invalid_request"), None), None);
    }

    #[test]
    fn a_rate_limit_retry_says_when_it_lifts() {
        let status = from_retry(Some("rate_limit"), Some(429), Some(1), Some(1200)).unwrap();
        assert_eq!(status.status, ProviderState::RateLimited);
        assert_eq!(status.retry_attempt, Some(1));
        let resets = humantime::parse_rfc3339(status.resets_at.as_deref().unwrap()).unwrap();
        assert!(resets > SystemTime::now());
        assert!(status.message.contains("HTTP 429"), "{}", status.message);
        let down = from_retry(Some("overloaded"), Some(529), Some(2), Some(600)).unwrap();
        assert_eq!(down.resets_at, None);
    }
}
