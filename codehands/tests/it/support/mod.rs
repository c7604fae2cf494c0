//! Shared set-up for the runner tests: real repos in temp folders, a runner
//! over a temp `$CODEHANDS_HOME`, the fake agent program, the real Claude Code.

#![allow(dead_code)] // each test file uses part of it

pub mod plugins;
pub mod remote;
pub mod terminal;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use codehands::{FakeAgentSetup, Setup};
use runner_contract::{Event, Home, SessionId};
use runner_core::{LocalRunner, RunnerSettings};

/// A temp folder with a repo and a codehands home in it.
pub struct World {
    pub dir: tempfile::TempDir,
    pub repo: PathBuf,
    pub home: Home,
    /// HOME for the agent (Claude Code writes its settings there).
    pub agent_home: PathBuf,
}

impl World {
    /// A repo holding `files` in one commit on `main`.
    pub fn new(files: &[(&str, &str)]) -> Self {
        // Outside the system's temp folder, as a person's home and repos are: an agent's
        // box gets a fresh /tmp of its own, and Codex refuses some of its set-up under it.
        let dir = tempfile::Builder::new()
            .prefix("world-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let repo = dir.path().join("repo");
        for (path, content) in files {
            let path = repo.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        git(&repo, &["init", "--quiet", "--initial-branch=main"]);
        git(&repo, &["add", "--all"]);
        git(
            &repo,
            &[
                "-c",
                "user.name=Test",
                "-c",
                "user.email=test@example.invalid",
                "commit",
                "--quiet",
                "-m",
                "base",
            ],
        );
        let home = Home::new(dir.path().join("home"));
        let agent_home = dir.path().join("agent-home");
        std::fs::create_dir_all(&agent_home).unwrap();
        Self {
            dir,
            repo,
            home,
            agent_home,
        }
    }

    /// The demo repo (a failing date test).
    pub fn demo() -> Self {
        Self::new(runner_fake::demo_repo::FILES)
    }

    /// Settings with a short watchdog and grace, and a caller env of PATH and HOME only.
    pub fn settings(&self) -> RunnerSettings {
        RunnerSettings {
            stop_grace: Duration::from_millis(500),
            caller_env: vec![
                ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
                ("HOME".into(), self.agent_home.display().to_string()),
            ],
            ..RunnerSettings::default()
        }
    }

    /// A runner whose fake agent runs in `mode` with `delay_ms` between lines.
    pub fn fake_runner(&self, mode: &str, delay_ms: u64) -> LocalRunner {
        self.runner_with(self.settings(), |setup| {
            setup.fake = FakeAgentSetup {
                program: Some(env!("CARGO_BIN_EXE_codehands").into()),
                mode: Some(mode.into()),
                script: None,
                delay_ms: Some(delay_ms),
            };
        })
    }

    /// A runner built from `settings`, adjusted by `change`.
    pub fn runner_with(
        &self,
        settings: RunnerSettings,
        change: impl FnOnce(&mut Setup),
    ) -> LocalRunner {
        let mut setup = self.setup(settings);
        change(&mut setup);
        codehands::build_runner(setup).unwrap()
    }

    /// The facade's setup over this world's home, with `settings`.
    pub fn setup(&self, settings: RunnerSettings) -> Setup {
        Setup {
            home: self.home.clone(),
            settings,
            claude_bin: "claude".into(),
            codex_bin: "codex".into(),
            vibe_bin: "vibe-acp".into(),
            fake: FakeAgentSetup {
                program: Some(env!("CARGO_BIN_EXE_codehands").into()),
                ..FakeAgentSetup::default()
            },
            sandbox_images: codehands::SandboxImages::Local,
            box_helper: Some(env!("CARGO_BIN_EXE_codehands").into()),
        }
    }

    /// `git <args>` in the repo, its stdout.
    pub fn git(&self, args: &[&str]) -> String {
        git(&self.repo, args)
    }

    /// The branches of the repo.
    pub fn branches(&self) -> Vec<String> {
        self.git(&["branch", "--format=%(refname:short)"])
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The worktree folders under the home.
    pub fn worktree_dirs(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        if let Ok(keys) = std::fs::read_dir(self.home.worktrees_dir()) {
            for key in keys.flatten() {
                found.extend(
                    std::fs::read_dir(key.path())
                        .unwrap()
                        .flatten()
                        .map(|e| e.path()),
                );
            }
        }
        found
    }
}

/// Runs git and returns stdout; panics with stderr on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The pinned Claude Code, or a skip (a failure under CI=true).
pub fn claude() -> Option<PathBuf> {
    let found = runner_testkit::agents::find_pinned("CLAUDE_BIN", agent_claude::pinned::path_in);
    if found.is_none() {
        runner_testkit::skip("Claude Code is not installed: run `cargo xtask agents`");
    }
    found
}

impl World {
    /// The `codehands` binary with an environment of its own: PATH, a temp HOME and this
    /// world's `CODEHANDS_HOME`, nothing else of the caller's.
    pub fn codehands(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_codehands"));
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.agent_home)
            .env("CODEHANDS_HOME", self.home.root());
        cmd
    }
}

/// Runs `cmd` to its end with no stdin.
pub fn run(cmd: &mut Command) -> std::process::Output {
    cmd.stdin(std::process::Stdio::null()).output().unwrap()
}

/// Bytes a command printed, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts that the command succeeded (showing what it printed if not); its stdout.
pub fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Each line of `out`'s stdout as JSON.
pub fn json_lines(out: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The pinned Codex, or a skip (a failure under CI=true).
pub fn codex() -> Option<PathBuf> {
    let found = runner_testkit::agents::find_pinned("CODEX_BIN", agent_codex::pinned::path_in);
    if found.is_none() {
        runner_testkit::skip("Codex is not installed: run `cargo xtask agents`");
    }
    found
}

/// The key a Claude Code runner of these tests is given.
pub const CLAUDE_TEST_KEY: &str = "sk-ant-dummy-for-tests";

/// The key a Codex runner of these tests is given.
pub const CODEX_TEST_KEY: &str = "sk-dummy-for-codex-tests";

/// A lifecycle suite's stage over `world`, its `runner` and the `server` its agent talks to.
pub fn stage(
    world: World,
    runner: LocalRunner,
    server: std::sync::Arc<model_server::ModelServer>,
) -> runner_testkit::lifecycle::Stage {
    let seen = server.clone();
    runner_testkit::lifecycle::Stage {
        runner: Box::new(runner),
        repo: world.repo.clone(),
        home: world.home.clone(),
        requests: Box::new(move || {
            seen.requests()
                .into_iter()
                .map(|r| runner_testkit::lifecycle::SeenRequest {
                    path: r.path,
                    headers: r.headers,
                    body: r.body,
                })
                .collect()
        }),
        keep: Box::new((world, server)),
    }
}

/// A runner for Claude Code at `claude`, talking to `server`, with `extra` caller variables.
pub fn claude_runner(
    world: &World,
    claude: &Path,
    server: &model_server::ModelServer,
    extra: &[(&str, &str)],
) -> LocalRunner {
    let mut settings = world.settings();
    settings
        .caller_env
        .push(("ANTHROPIC_BASE_URL".into(), server.base_url()));
    settings
        .caller_env
        .push(("ANTHROPIC_API_KEY".into(), CLAUDE_TEST_KEY.into()));
    settings
        .caller_env
        .extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    world.runner_with(settings, |s| s.claude_bin = claude.to_path_buf())
}

/// A runner for Codex at `codex` whose caller environment is exactly PATH, HOME
/// (a temp folder), the server's URL and a dummy key.
pub fn codex_runner(
    world: &World,
    codex: &Path,
    server: &model_server::ModelServer,
) -> LocalRunner {
    codex_runner_with(world, codex, server, &[])
}

/// [`codex_runner`] with `extra` caller variables.
pub fn codex_runner_with(
    world: &World,
    codex: &Path,
    server: &model_server::ModelServer,
    extra: &[(&str, &str)],
) -> LocalRunner {
    let mut settings = world.settings();
    settings
        .caller_env
        .push(("OPENAI_BASE_URL".into(), server.openai_base_url()));
    settings
        .caller_env
        .push(("OPENAI_API_KEY".into(), CODEX_TEST_KEY.into()));
    settings
        .caller_env
        .extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    world.runner_with(settings, |s| s.codex_bin = codex.to_path_buf())
}

/// The worktree a session of `world` gets (a scripted model names files by absolute path).
pub async fn worktree_for(world: &World, id: &SessionId) -> PathBuf {
    let key = runner_contract::Vcs::repo_key(&vcs_git::GitVcs::new(), &world.repo)
        .await
        .unwrap();
    world.home.worktree_path(&key, id).unwrap()
}

/// Every `tool_result` the server was sent, as JSON text, in order.
pub fn tool_results(server: &model_server::ModelServer) -> Vec<String> {
    let mut out = Vec::new();
    for request in server.message_requests() {
        for message in request["messages"].as_array().into_iter().flatten() {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" {
                    out.push(block["content"].to_string());
                }
            }
        }
    }
    out
}

/// Asserts that the events are numbered 1..N, with no gap and no repeat.
pub fn assert_contiguous(events: &[Event]) {
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "seq 1..N, no gap, no repeat: {:?}",
        types(events)
    );
}

/// The `type` of each event.
pub fn types(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.body.type_name()).collect()
}

/// Whether any live process has `needle` in its command line.
pub fn process_running(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            return false;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'));
        !zombie
            && String::from_utf8_lossy(&cmd)
                .replace('\0', " ")
                .contains(needle)
    })
}

/// The pid of the detached supervisor of session `id`, if one runs.
pub fn supervisor_of(id: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        let text = String::from_utf8_lossy(&cmdline);
        (text.contains("__supervise") && text.contains(id)).then_some(pid)
    })
}

/// A fresh id.
pub fn new_id() -> SessionId {
    SessionId::new_random()
}

/// What an approved fix of the demo repo leaves: one commit on top of base on
/// `codehands/…-<id8>` holding the fixed month, the user's branch unmoved, the worktree gone.
pub fn assert_approved_demo_fix(
    world: &World,
    record: &runner_contract::SessionRecord,
    approved: &runner_contract::ApproveResult,
) {
    assert!(
        approved.branch.starts_with("codehands/")
            && approved.branch.ends_with(&record.session_id.short())
    );
    assert_eq!(
        world
            .git(&[
                "rev-list",
                "--count",
                &format!("{}..{}", record.base_commit, approved.branch)
            ])
            .trim(),
        "1"
    );
    assert_eq!(
        world.git(&["rev-parse", "main"]).trim(),
        record.base_commit,
        "the user's branch did not move"
    );
    assert!(!record.worktree_path.exists(), "the worktree is gone");
    assert!(
        world
            .git(&["show", &approved.branch])
            .contains("getMonth() + 1")
    );
}

/// The argv of a session's agent, read from /proc while it runs (waits for it to start).
pub fn agent_argv(home: &Home, id: &SessionId) -> Vec<String> {
    let agent = home.run_dir(id).join("agent.json");
    for _ in 0..500 {
        if let Ok(text) = std::fs::read_to_string(&agent) {
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            // `process` is null while the agent is being spawned.
            let Some(pid) = value["process"]["pid"].as_u64() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
            let argv: Vec<String> = cmdline
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            if argv.get(1).map(String::as_str) != Some("__box") {
                return argv;
            }
            // A boxed agent: the recorded process is the box's; the agent's own argv is
            // the plan's command (the box's init and the agent carry exactly that).
            let plan: serde_json::Value =
                serde_json::from_slice(&std::fs::read(plan_path(&argv)).unwrap()).unwrap();
            let command = &plan["command"];
            return std::iter::once(command["argv0"].as_str().unwrap().to_owned())
                .chain(
                    command["args"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| a.as_str().unwrap().to_owned()),
                )
                .collect();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the agent of {id} never started");
}

/// Settings whose fake agent plays `script` (written to a file) in `mode`.
pub fn scripted_runner(world: &World, mode: &str, script: &str) -> LocalRunner {
    let path = world
        .dir
        .path()
        .join(format!("script-{}.jsonl", SessionId::new_random().short()));
    std::fs::write(&path, script).unwrap();
    world.runner_with(world.settings(), |s| {
        s.fake.mode = Some(mode.into());
        s.fake.script = Some(path);
    })
}

/// The plan path in a box's argv (`codehands __box [--runner-cleans] PLAN`): its last word.
fn plan_path(argv: &[String]) -> &str {
    argv.last().map(String::as_str).unwrap_or_default()
}

/// A runner whose one extra agent, `name`, is a plain-text profile running the shell script
/// `script` (written to `file` in the world's folder) with the prompt on stdin.
pub fn shell_agent_runner(world: &World, file: &str, name: &str, script: &str) -> LocalRunner {
    use std::os::unix::fs::PermissionsExt;
    let path = world.dir.path().join(file);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let profile = path.with_extension("toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"{name}\"\nprogram = \"{}\"\nprompt = \"stdin\"\nparser = \"text\"\n",
            path.display()
        ),
    )
    .unwrap();
    codehands::RunnerBuilder::new(world.setup(world.settings()))
        .load_home(false)
        .agent_file(&profile)
        .build()
        .unwrap()
}

/// The tester's own rustup under their home (`~/.cargo` with cargo and a registry cache), as
/// developers have it; `None` (a skip) without one.
pub fn callers_cargo_home() -> Option<PathBuf> {
    let found = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cargo"))
        .filter(|c| c.join("bin/cargo").is_file() && c.join("registry").is_dir());
    if found.is_none() {
        runner_testkit::skip("no rustup under this user's home (~/.cargo/bin/cargo)");
    }
    found
}

/// A crate with one dependency (`itoa`) and a test, `target/` ignored, its lock file made by
/// the caller's cargo offline and committed, so a box builds it from the caller's registry.
pub fn offline_crate(cargo_home: &Path) -> World {
    let world = World::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"livable\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"1\"\n\n[workspace]\n",
        ),
        (
            "src/lib.rs",
            "pub fn five() -> String { itoa::Buffer::new().format(5).to_string() }\n\n#[test]\nfn it_is_five() { assert_eq!(five(), \"5\"); }\n",
        ),
        (".gitignore", "target/\n"),
    ]);
    let lock = Command::new(cargo_home.join("bin/cargo"))
        .args(["generate-lockfile", "--offline"])
        .current_dir(&world.repo)
        .output()
        .unwrap();
    assert!(lock.status.success(), "{lock:?}");
    world.git(&["add", "Cargo.lock"]);
    world.git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "commit",
        "-qm",
        "lock",
    ]);
    world
}

/// A venv (no pip: quick) in the world's checkout, `.venv`, holding the module `depmod`
/// (`VALUE = 'from-the-venv'`); its site-packages folder.
pub fn checkout_venv(world: &World) -> PathBuf {
    let venv = Command::new("/usr/bin/python3")
        .args(["-m", "venv", "--without-pip", ".venv"])
        .current_dir(&world.repo)
        .output()
        .unwrap();
    assert!(venv.status.success(), "{venv:?}");
    let site = std::fs::read_dir(world.repo.join(".venv/lib"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path()
        .join("site-packages");
    std::fs::write(site.join("depmod.py"), "VALUE = 'from-the-venv'\n").unwrap();
    site
}

/// The files the session's branch (`codehands/…`) changes against `main`.
pub fn session_branch_files(world: &World) -> Vec<String> {
    let branch = world
        .branches()
        .into_iter()
        .find(|b| b.starts_with("codehands/"))
        .expect("the session's branch");
    world
        .git(&["diff", "--name-only", "main", &branch])
        .lines()
        .map(str::to_owned)
        .collect()
}
