//! `cargo xtask record demo`: records the fake agent's embedded recording,
//! `runner-fake/recordings/date-bug.jsonl`, by running the real Claude Code
//! through the real runner (worktree, scrubbed environment, transcript) against
//! the scripted model server on the demo repo. The transcript is the recording.

use std::path::Path;
use std::process::Command;

use futures::StreamExt;
use model_server::ModelServer;
use runner_contract::{AgentName, EventBody, Home, Runner, SessionId, StartOptions, Vcs};

/// Records; `args` is empty.
pub fn run(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask record demo".into());
    }
    let claude = runner_testkit::agents::find_pinned("CLAUDE_BIN", agent_claude::pinned::path_in)
        .ok_or("Claude Code is not installed: run `cargo xtask agents` first")?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(record(&claude))
}

async fn record(claude: &Path) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let repo = dir.path().join("date-bug");
    runner_fake::demo_repo::write(&repo).map_err(|e| e.to_string())?;
    for args in [
        &["init", "--quiet", "--initial-branch=main"][..],
        &["add", "--all"],
        &[
            "-c",
            "user.name=codehands",
            "-c",
            "user.email=demo@codehands.invalid",
            "commit",
            "--quiet",
            "-m",
            "A date formatter with a failing test",
        ],
    ] {
        let ok = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(args)
            .status()
            .map_err(|e| e.to_string())?
            .success();
        if !ok {
            return Err(format!("git {} failed", args.join(" ")));
        }
    }
    let home = Home::new(dir.path().join("home"));
    let agent_home = dir.path().join("agent-home");
    std::fs::create_dir_all(&agent_home).map_err(|e| e.to_string())?;
    let id = SessionId::new_random();
    let key = vcs_git::GitVcs::new()
        .repo_key(&repo)
        .await
        .map_err(|e| e.to_string())?;
    let worktree = home.worktree_path(&key, &id).map_err(|e| e.to_string())?;
    let server = ModelServer::start(runner_fake::demo_repo::script(&worktree))
        .await
        .map_err(|e| e.to_string())?;

    let mut setup = codehands::Setup::from_env().map_err(|e| e.to_string())?;
    setup.home = home.clone();
    setup.claude_bin = claude.to_path_buf();
    setup.settings.caller_env = vec![
        ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
        ("HOME".into(), agent_home.display().to_string()),
        ("ANTHROPIC_BASE_URL".into(), server.base_url()),
        (
            "ANTHROPIC_API_KEY".into(),
            "sk-ant-dummy-for-recordings".into(),
        ),
    ];
    let runner = codehands::build_runner(setup).map_err(|e| e.to_string())?;
    let options = StartOptions::new(
        id,
        &repo,
        runner_fake::demo_repo::PROMPT,
        AgentName::parse(agent_claude::NAME).expect("a valid name"),
    );
    let events: Vec<_> = runner
        .start(options)
        .await
        .map_err(|e| e.to_string())?
        .collect()
        .await;
    for event in &events {
        println!(
            "{:>3} {}",
            event.seq,
            serde_json::to_string(&event.body).unwrap_or_default()
        );
    }
    if !matches!(
        events.last().map(|e| &e.body),
        Some(EventBody::ApprovalRequested(_))
    ) {
        return Err("the run did not end in approval.requested: nothing recorded".into());
    }
    let transcript = home.run_dir(&id).join("transcript.jsonl");
    let target = crate::workspace_root().join("runner-fake/recordings/date-bug.jsonl");
    std::fs::copy(&transcript, &target).map_err(|e| format!("{}: {e}", transcript.display()))?;
    println!(
        "wrote {} — read every line before committing it",
        target.display()
    );
    Ok(())
}
