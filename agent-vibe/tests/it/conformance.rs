//! runner-testkit's `Agent` conformance suite, run on `MistralVibe`: the prompt and a resume's
//! session id reach Vibe in the lines the parser owes after the handshake (ACP's, which the
//! suite plays as `protocol()` names it).

use agent_vibe::MistralVibe;
use runner_testkit::agent;

#[test]
fn mistral_vibe_keeps_every_agent_promise() {
    let dir = tempfile::tempdir().unwrap();
    let vibe = MistralVibe::new("vibe-acp", Some(dir.path().join("vibe-home")));
    agent::all(&vibe, dir.path(), "d9a7dbd3-earlier");
}

#[test]
fn its_settings_keep_telemetry_off_and_name_the_openai_compatible_server() {
    use runner_contract::Agent;
    let dir = tempfile::tempdir().unwrap();
    let vibe = MistralVibe::new("vibe-acp", Some(dir.path().join("vibe-home")));
    let mut request = agent::sample_request(dir.path());
    request.provider_env = vec![
        ("OPENAI_BASE_URL".into(), "http://127.0.0.1:9/v1".into()),
        ("OPENAI_API_KEY".into(), "sk-x".into()),
    ];
    request.model = Some("devstral".into());
    let env = vibe.invocation(&request).unwrap().env;
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("VIBE_ENABLE_TELEMETRY"), Some("false"));
    assert_eq!(get("VIBE_ENABLE_UPDATE_CHECKS"), Some("false"));
    assert_eq!(get("VIBE_HOME"), dir.path().join("vibe-home").to_str());
    let providers: serde_json::Value =
        serde_json::from_str(get("VIBE_PROVIDERS").unwrap()).unwrap();
    assert_eq!(providers[0]["api_base"], "http://127.0.0.1:9/v1");
    assert_eq!(providers[0]["api_key_env_var"], "OPENAI_API_KEY");
    let models: serde_json::Value = serde_json::from_str(get("VIBE_MODELS").unwrap()).unwrap();
    assert_eq!(models[0]["name"], "devstral");
    assert_eq!(get("VIBE_ACTIVE_MODEL"), Some("codehands"));
    assert!(
        !env.iter().any(|(_, v)| v.contains("sk-x") && v.len() > 4),
        "the key goes by its own variable, not inside the settings"
    );
    // Without a server of its own, Vibe runs Mistral's, on the model asked for.
    request.provider_env = vec![("MISTRAL_API_KEY".into(), "m-key".into())];
    let env = vibe.invocation(&request).unwrap().env;
    assert!(!env.iter().any(|(k, _)| k == "VIBE_PROVIDERS"));
    assert!(env.contains(&("VIBE_ACTIVE_MODEL".into(), "devstral".into())));
}
