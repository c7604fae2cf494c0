//! runner-testkit's `Agent` conformance suite, run on `MiniSweAgent`.

use agent_mini_swe::{MiniSweAgent, install};
use runner_testkit::agent;

#[test]
fn mini_swe_agent_keeps_every_agent_promise() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join(install::DEFAULT_CONFIG), "agent: {}\n").unwrap();
    std::os::unix::fs::symlink("/dev/stdin", config.join(install::STDIN_CONFIG)).unwrap();
    agent::all(
        &MiniSweAgent::new("mini", &config),
        dir.path(),
        "mini-swe-agent-has-no-resume",
    );
}
