//! Provider trouble as Codex 0.163.0 prints it, named as a `provider.status`.
//!
//! From the recordings: while it retries, a top-level `error` line per attempt,
//! `Reconnecting... 1/5 (unexpected status 401 Unauthorized: …, url: …)` or
//! `Reconnecting... 1/5 (exceeded retry limit, last status: 429 Too Many Requests)`;
//! when it gives up, an `error` line with the bare message and `turn.failed` with the
//! same. The HTTP status is only in the text, so it is read from there; a 5xx
//! comes without one, as "We’re currently experiencing high demand, …".

use runner_contract::event::{ProviderState, ProviderStatus};

/// A stream error read from its text.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct StreamError {
    /// `Some((attempt, of))` for a "Reconnecting... n/m" line.
    pub retry: Option<(u32, u32)>,
    /// The HTTP status named in the text.
    pub http_status: Option<u16>,
    /// The state a person can act on, when the text says one.
    pub state: Option<ProviderState>,
}

/// Reads an `error` message.
pub(super) fn read(message: &str) -> StreamError {
    let retry = message
        .strip_prefix("Reconnecting... ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|fraction| fraction.split_once('/'))
        .and_then(|(n, m)| Some((n.parse().ok()?, m.parse().ok()?)));
    let http_status = http_status(message);
    let lower = message.to_ascii_lowercase();
    let state = if lower.contains("usage limit") || lower.contains("quota") {
        Some(ProviderState::UsageLimit)
    } else {
        match http_status {
            Some(429) => Some(ProviderState::RateLimited),
            Some(401 | 403) => Some(ProviderState::AuthExpired),
            Some(402) => Some(ProviderState::SubscriptionInactive),
            Some(500..=599) => Some(ProviderState::Down),
            // Codex hides a 5xx behind its own words ("We’re currently experiencing
            // high demand, …"), with no status in the text.
            _ if lower.contains("high demand")
                || lower.contains("overloaded")
                || lower.contains("stream disconnected") =>
            {
                Some(ProviderState::Down)
            }
            _ => None,
        }
    };
    StreamError {
        retry,
        http_status,
        state,
    }
}

/// The `provider.status` for an `error` line, when it names provider trouble.
pub(super) fn status(message: &str) -> Option<ProviderStatus> {
    let error = read(message);
    Some(ProviderStatus {
        status: error.state?,
        message: message.to_owned(),
        resets_at: None,
        http_status: error.http_status,
        retry_attempt: error.retry.map(|(n, _)| n),
    })
}

/// The first three-digit number after "status " or "status: " in the text.
fn http_status(message: &str) -> Option<u16> {
    let mut rest = message;
    while let Some(at) = rest.find("status") {
        rest = &rest[at + "status".len()..];
        let digits: String = rest
            .trim_start_matches([':', ' '])
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if digits.len() == 3 {
            return digits.parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_retries_codex_prints() {
        let auth = read(
            "Reconnecting... 1/5 (unexpected status 401 Unauthorized: Incorrect API key provided., url: http://127.0.0.1:1/v1/responses)",
        );
        assert_eq!(
            auth,
            StreamError {
                retry: Some((1, 5)),
                http_status: Some(401),
                state: Some(ProviderState::AuthExpired)
            }
        );
        let limited =
            read("Reconnecting... 3/5 (exceeded retry limit, last status: 429 Too Many Requests)");
        assert_eq!(limited.retry, Some((3, 5)));
        assert_eq!(limited.state, Some(ProviderState::RateLimited));
        let last = read("exceeded retry limit, last status: 429 Too Many Requests");
        assert_eq!((last.retry, last.http_status), (None, Some(429)));
        assert_eq!(
            read("unexpected status 503 Service Unavailable").state,
            Some(ProviderState::Down)
        );
        assert_eq!(
            read("You've hit your usage limit. Try again later.").state,
            Some(ProviderState::UsageLimit)
        );
        assert_eq!(
            read("Reconnecting... 1/5 (We’re currently experiencing high demand, which may cause temporary errors.)").state,
            Some(ProviderState::Down)
        );
        assert_eq!(read("something else went wrong").state, None);
        assert_eq!(
            read("status 40"),
            StreamError {
                retry: None,
                http_status: None,
                state: None
            }
        );
    }
}
