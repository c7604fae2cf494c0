//! runner-core's `Agent` conformance suite, run on `AcpAgent`: the prompt and a resume's
//! session id reach the agent in the lines its parser owes after the handshake.

use agent_acp::AcpAgent;
use runner_contract::AgentName;
use runner_core::testkit::agent;

/// What an ACP agent answers to `initialize` and to the opening of its session.
pub const HANDSHAKE: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#,
    r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"sess-1"}}"#,
];

#[test]
fn an_acp_agent_keeps_every_agent_promise() {
    let dir = tempfile::tempdir().unwrap();
    let acp = AcpAgent::new(AgentName::parse("some-acp").unwrap(), "some-acp-agent")
        .with_provider_env(vec!["PROVIDER_SECRET_FOR_TESTS".into()]);
    agent::all_after_handshake(&acp, dir.path(), "sess-earlier", HANDSHAKE);
}
