//! Runs a scenario against the real mini-swe-agent: a temp git repo, the scripted
//! model server (OpenAI Chat Completions), the `Invocation` the adapter builds, and
//! an environment built from scratch (nothing of the caller's leaks in but PATH).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use agent_mini_swe::MiniSweAgent;
use runner_core::{Agent, AgentRequest, SessionId, StdinClose};
use runner_fake::model_server::{ModelServer, RecordedRequest};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use super::Scenario;

/// The key the recordings use; the server accepts any.
pub const DUMMY_KEY: &str = "sk-dummy-for-recordings";

/// What one run printed and sent.
pub struct RunOutput {
    /// Every stdout line, in order, without newlines.
    pub lines: Vec<String>,
    /// Stderr, whole.
    pub stderr: String,
    /// The exit code (None when killed by a signal).
    pub exit_code: Option<i32>,
    /// Every request the model server received.
    pub requests: Vec<RecordedRequest>,
    /// The repo the agent worked in (removed with `_dir`).
    pub repo: PathBuf,
    /// Keeps the temp folder alive until the output is read.
    pub _dir: tempfile::TempDir,
}

/// The longest a scenario may run before it is killed.
const RUN_LIMIT: Duration = Duration::from_secs(240);

fn git(repo: &Path, args: &[&str]) -> Result<(), String> {
    let status = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=codehands",
            "-c",
            "user.email=codehands@example.invalid",
        ])
        .args(args)
        .current_dir(repo)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("git {args:?}: {e}"))?;
    status
        .success()
        .then_some(())
        .ok_or_else(|| format!("git {args:?} failed: {status}"))
}

/// A git repo of `files`, one commit on `main`.
pub fn make_repo(root: &Path, files: &[(&str, &str)]) -> Result<PathBuf, String> {
    let repo = root.join("repo");
    for (file, text) in files {
        let target = repo.join(file);
        std::fs::create_dir_all(target.parent().expect("files sit in folders"))
            .and_then(|()| std::fs::write(&target, text))
            .map_err(|e| format!("writing {}: {e}", target.display()))?;
    }
    git(&repo, &["init", "-q", "-b", "main"])?;
    git(&repo, &["add", "-A"])?;
    git(&repo, &["commit", "-q", "-m", "fixture"])?;
    repo.canonicalize()
        .map_err(|e| format!("{}: {e}", repo.display()))
}

/// Runs `scenario` with `agent` (the real program) and returns what it printed.
pub async fn run(agent: &MiniSweAgent, scenario: &Scenario) -> Result<RunOutput, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
    let repo = make_repo(dir.path(), scenario.files)?;
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).map_err(|e| format!("home: {e}"))?;

    let server = ModelServer::start((scenario.script)(&repo))
        .await
        .map_err(|e| format!("model server: {e}"))?;
    let request = AgentRequest {
        session_id: SessionId::new_random(),
        worktree: repo.clone(),
        prompt: scenario.prompt.to_owned(),
        model: Some(scenario.model.to_owned()),
        budget_usd: scenario.budget_usd,
        notes: scenario.notes.map(str::to_owned),
        notes_file: None,
        test_command: Some("npm test".to_owned()),
        resume: None,
        provider_env: vec![
            ("OPENAI_BASE_URL".into(), server.openai_base_url()),
            ("OPENAI_API_KEY".into(), DUMMY_KEY.into()),
        ],
    };
    let invocation = agent
        .invocation(&request)
        .map_err(|e| format!("invocation: {e}"))?;

    let mut child = tokio::process::Command::new(&invocation.program)
        .args(&invocation.args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .envs(scenario.extra_env.iter().copied())
        .envs(invocation.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("spawning {}: {e}", invocation.program.display()))?;

    let mut stdin = child.stdin.take();
    if let Some(pipe) = stdin.as_mut() {
        for line in &invocation.stdin {
            pipe.write_all(format!("{line}\n").as_bytes())
                .await
                .map_err(|e| format!("stdin: {e}"))?;
        }
    }
    if invocation.close_stdin == StdinClose::AfterWrite {
        stdin = None;
    }
    let mut stderr_pipe = child.stderr.take().expect("stderr is piped");
    let stderr_task = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text).await;
        text
    });
    let mut reader = BufReader::new(child.stdout.take().expect("stdout is piped"));
    let read_all = async {
        let mut lines = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line).await {
                Ok(0) => break,
                Ok(_) => lines.push(line.strip_suffix('\n').unwrap_or(&line).to_owned()),
                Err(e) => return Err(format!("stdout: {e}")),
            }
        }
        Ok(lines)
    };
    let lines = match tokio::time::timeout(RUN_LIMIT, read_all).await {
        Ok(lines) => lines?,
        Err(_) => {
            let _ = child.kill().await;
            return Err(format!("{} ran over {RUN_LIMIT:?}", scenario.name));
        }
    };
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .map_err(|_| "mini did not exit after its output ended".to_owned())?
        .map_err(|e| format!("wait: {e}"))?;
    let stderr = stderr_task.await.unwrap_or_default();
    Ok(RunOutput {
        lines,
        stderr,
        exit_code: status.code(),
        requests: server.requests(),
        repo,
        _dir: dir,
    })
}
