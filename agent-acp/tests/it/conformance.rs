//! runner-testkit's `Agent` conformance suite, run on `AcpAgent`: the prompt and a resume's
//! session id reach the agent in the lines its parser owes after the handshake (the suite
//! plays ACP's, as the agent's `protocol()` names it).

use agent_acp::AcpAgent;
use runner_contract::AgentName;
use runner_testkit::agent;

#[test]
fn an_acp_agent_keeps_every_agent_promise() {
    let dir = tempfile::tempdir().unwrap();
    let acp = AcpAgent::new(AgentName::parse("some-acp").unwrap(), "some-acp-agent")
        .with_provider_env(vec!["PROVIDER_SECRET_FOR_TESTS".into()]);
    agent::all(&acp, dir.path(), "sess-earlier");
}
