//! Vibe's word for a refused key. Vibe 2.26.1 answers a prompt whose provider said 401 with
//! its own "configuration error" (code -31002, "Invalid API key (from env var …)"), not ACP's
//! "authentication required", so the ACP parser alone reads it as any error of the agent.
//! This parser says it as Claude Code's and Codex's do: `provider.status` `auth_expired`, then
//! `task.failed` `auth_failed`, which the runner ends the run on at once.

use runner_contract::event::{FailureKind, ProviderState, ProviderStatus, TaskFailed};
use runner_contract::{AgentParser, EventBody};

/// Vibe's code for a configuration error, which a refused key is one of.
const CONFIGURATION_ERROR: i64 = -31002;
/// How Vibe's message for a provider's 401 begins.
const REFUSED_KEY: &str = "Invalid API key";

/// The ACP parser, with Vibe's refused key read as one.
pub(crate) struct VibeParser {
    pub(crate) acp: Box<dyn AgentParser>,
}

/// Vibe's message, when `line` is its answer to a request of ours refusing the key.
fn refused_key(line: &str) -> Option<String> {
    if !line.contains(REFUSED_KEY) {
        return None;
    }
    let answer: serde_json::Value = serde_json::from_str(line).ok()?;
    let error = answer.get("error")?;
    let message = error.get("message")?.as_str()?;
    (error.get("code")?.as_i64()? == CONFIGURATION_ERROR && message.starts_with(REFUSED_KEY))
        .then(|| message.to_owned())
}

impl AgentParser for VibeParser {
    fn parse_line(&mut self, line: &str) -> Vec<EventBody> {
        let events = self.acp.parse_line(line);
        let Some(said) = refused_key(line) else {
            return events;
        };
        events
            .into_iter()
            .flat_map(|event| match event {
                EventBody::TaskFailed(failed) if failed.reason == FailureKind::AgentError => {
                    vec![
                        EventBody::ProviderStatus(ProviderStatus {
                            status: ProviderState::AuthExpired,
                            message: said.clone(),
                            resets_at: None,
                            http_status: Some(401),
                            retry_attempt: None,
                        }),
                        EventBody::TaskFailed(TaskFailed {
                            reason: FailureKind::AuthFailed,
                            message: format!(
                                "the provider refused Vibe's key ({said}): give it a valid {} (or {}) and start a new session",
                                crate::API_KEY_VAR,
                                crate::MISTRAL_KEY_VAR
                            ),
                            ..failed
                        }),
                    ]
                }
                other => vec![other],
            })
            .collect()
    }

    fn finish(&mut self, exit_code: Option<i32>) -> Vec<EventBody> {
        self.acp.finish(exit_code)
    }

    fn owed_input(&mut self) -> Vec<String> {
        self.acp.owed_input()
    }
}
