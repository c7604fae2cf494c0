//! The `Confinement` suite: promises every box keeps (runner-contract's `traits/confine.rs`,
//! docs/agent-box.md, docs/remote-box.md), one body for the local box (agent-box), the box on
//! a Docker engine or swarm (engine-docker) and the facade's pair of them (codehands).
//!
//! What differs between them is passed in as [`Capabilities`]: the engines a confinement
//! boxes on, and those whose box this suite may start with `sh` in it (the local box: the
//! host's programs; a remote box's image holds no shell). [`all`] runs every check that
//! applies; each failure says which promise broke:
//! - a wrap is the agent's invocation in a box: a program of the box's own, the same stdin,
//!   stdin policy and variables, neither the prompt nor a secret on its argv;
//! - a wrap writes only in the run folder, every file and folder private (no group or
//!   other bits), no secret value in any of them, nothing in the worktree;
//! - an engine the confinement has not is refused by `available_on` and by `wrap`, which
//!   then writes nothing;
//! - `cleanup` and `discard` of a run folder without a box do nothing; `discard` after a wrap
//!   leaves the run folder as it was before the box;
//! - started (where it may be), the box is the agent to the runner: the stdin lines reach the
//!   agent, its output comes out, its exit code is the box's, and a stop to the box's process
//!   group ends everything in the box;
//! - [`refuses_when_unavailable`], for a confinement missing its parts: `available` says why
//!   (an `Unsupported` error with a message), and no engine's wrap makes a box.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use runner_contract::{
    BoxNeeds, ConfineRequest, Confinement, Engine, ErrorKind, Invocation, SessionId, StdinClose,
};

/// A secret the agent is given in its environment: never on a box's argv or in its files.
pub const CANARY_SECRET: &str = "sk-confine-canary-7c1e";

/// The variable that holds [`CANARY_SECRET`].
pub const SECRET_VAR: &str = "PROVIDER_KEY_FOR_TESTS";

/// A prompt line: it reaches the agent on stdin, never on the box's argv.
pub const PROMPT: &str = "--fix the failing test";

/// What a confinement under the suite can do.
#[derive(Debug, Clone, Default)]
pub struct Capabilities {
    /// The engines it boxes on; every other is refused.
    pub engines: Vec<Engine>,
    /// The engines whose box the suite may start here, with `sh` in it; empty: no box is
    /// started (the checks of a wrap still run).
    pub runs_shell: Vec<Engine>,
}

/// Every check of the suite that `capabilities` make apply.
pub fn all(confinement: &dyn Confinement, capabilities: &Capabilities) {
    assert!(
        !capabilities.engines.is_empty(),
        "a confinement boxes on at least one engine"
    );
    for &engine in &capabilities.engines {
        wrap_keeps_the_agents_input(confinement, engine);
        wrap_writes_only_private_files_in_the_run_folder(confinement, engine);
        discard_leaves_the_run_folder_as_before(confinement, engine);
    }
    refuses_engines_it_has_not(confinement, &capabilities.engines);
    cleanup_and_discard_without_a_box_do_nothing(confinement);
    for &engine in &capabilities.runs_shell {
        the_box_is_the_agent(confinement, engine);
        a_stop_ends_everything_in_the_box(confinement, engine);
    }
}

/// A session's places: the caller's home, a worktree with a file, an empty run folder.
pub struct Scene {
    _dir: tempfile::TempDir,
    /// The session.
    pub session: SessionId,
    /// The worktree the agent works in.
    pub worktree: PathBuf,
    /// The run folder, `runs/<id>/`, made and empty.
    pub run_dir: PathBuf,
    /// The agent's environment as the runner builds it.
    pub env: Vec<(String, String)>,
}

impl Scene {
    /// Fresh places in a temp folder.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        // The box's user may be another than the test's: the places are the caller's, as a
        // person's repo and home are, readable but not writable by others.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod the temp dir");
        let caller = dir.path().join("caller");
        let worktree = dir.path().join("worktree");
        let run_dir = dir.path().join("home/runs/session");
        for folder in [&caller, &worktree, &run_dir] {
            std::fs::create_dir_all(folder).expect("a folder of the scene");
        }
        std::fs::write(worktree.join("README.md"), "hello\n").expect("a worktree file");
        let env = vec![
            ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
            ("HOME".to_owned(), caller.display().to_string()),
            (SECRET_VAR.to_owned(), CANARY_SECRET.to_owned()),
        ];
        Self {
            _dir: dir,
            session: SessionId::new_random(),
            worktree,
            run_dir,
            env,
        }
    }

    /// The request to wrap `invocation` on `engine` here.
    pub fn request<'a>(
        &'a self,
        invocation: &'a Invocation,
        needs: &'a BoxNeeds,
        engine: Engine,
    ) -> ConfineRequest<'a> {
        ConfineRequest {
            session_id: &self.session,
            run_dir: &self.run_dir,
            worktree: &self.worktree,
            worktree_read_only: false,
            invocation,
            env: &self.env,
            needs,
            files: &[],
            git: None,
            engine,
            image: None,
        }
    }
}

impl Default for Scene {
    fn default() -> Self {
        Self::new()
    }
}

/// An agent that is `sh -c script`, given the prompt as its stdin and the secret in its env.
pub fn shell_agent(script: &str, close_stdin: StdinClose) -> Invocation {
    Invocation {
        program: PathBuf::from("sh"),
        args: vec![OsString::from("-c"), OsString::from(script)],
        env: vec![(SECRET_VAR.to_owned(), CANARY_SECRET.to_owned())],
        stdin: vec![PROMPT.to_owned()],
        close_stdin,
    }
}

fn wrapped(
    confinement: &dyn Confinement,
    scene: &Scene,
    agent: &Invocation,
    engine: Engine,
) -> Invocation {
    confinement
        .wrap(&scene.request(agent, &BoxNeeds::default(), engine))
        .unwrap_or_else(|e| panic!("a plain agent's wrap on {engine:?} is refused: {e}"))
}

/// The wrap is the agent's invocation in a box: the box's own program, the same stdin, stdin
/// policy and variables; neither the prompt nor the secret on its argv.
pub fn wrap_keeps_the_agents_input(confinement: &dyn Confinement, engine: Engine) {
    let scene = Scene::new();
    for close in [
        StdinClose::AfterWrite,
        StdinClose::AfterResult,
        StdinClose::Conversation,
    ] {
        let agent = shell_agent("cat", close);
        let boxed = wrapped(confinement, &scene, &agent, engine);
        assert_ne!(
            boxed.program, agent.program,
            "{engine:?}: the wrap runs the agent's program itself: the runner must spawn the \
             box's own program, which starts the agent inside"
        );
        assert_eq!(
            boxed.stdin, agent.stdin,
            "{engine:?}: the wrap changed the stdin lines: the box passes the agent's input as it is"
        );
        assert_eq!(
            boxed.close_stdin, agent.close_stdin,
            "{engine:?}: the wrap changed when stdin closes: keep the agent's `close_stdin`"
        );
        assert_eq!(
            boxed.env, agent.env,
            "{engine:?}: the wrap changed the invocation's variables: keep the agent's `env`"
        );
        for arg in &boxed.args {
            let arg = arg.to_string_lossy();
            assert!(
                !arg.contains(CANARY_SECRET),
                "{engine:?}: a secret is on the box's argv ({arg}), where every local user reads \
                 it: the agent's env reaches it through the environment only"
            );
            assert!(
                !arg.contains(PROMPT),
                "{engine:?}: the prompt is on the box's argv ({arg}): it reaches the agent on stdin"
            );
        }
        confinement.discard(&scene.run_dir);
    }
}

/// Every file under `dir` (a link as itself), with its mode and its bytes when it is a file.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (u32, Option<Vec<u8>>)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(folder) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let bytes = meta.is_file().then(|| std::fs::read(&path).ok()).flatten();
            if meta.is_dir() {
                todo.push(path.clone());
            }
            out.insert(path, (meta.permissions().mode(), bytes));
        }
    }
    out
}

/// A wrap writes only under the run folder, privately, and no secret in what it writes; the
/// worktree is as it was.
pub fn wrap_writes_only_private_files_in_the_run_folder(
    confinement: &dyn Confinement,
    engine: Engine,
) {
    let scene = Scene::new();
    let worktree_before = tree(&scene.worktree);
    let agent = shell_agent("cat", StdinClose::AfterWrite);
    wrapped(confinement, &scene, &agent, engine);
    assert_eq!(
        tree(&scene.worktree),
        worktree_before,
        "{engine:?}: the wrap changed the worktree: a box keeps its plan and files in the run \
         folder only"
    );
    let made = tree(&scene.run_dir);
    for (path, (mode, bytes)) in &made {
        let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        assert!(
            link || mode & 0o077 == 0,
            "{engine:?}: {} is {:o}, open to others: write the box's files 0600 and folders \
             0700 (runner_contract::private)",
            path.display(),
            mode & 0o7777
        );
        let secret = CANARY_SECRET.as_bytes();
        assert!(
            !bytes
                .as_deref()
                .is_some_and(|b| b.windows(secret.len()).any(|w| w == secret)),
            "{engine:?}: {} holds a secret value: a box's plan is paths, names and numbers; \
             the agent's variables reach it through its environment",
            path.display()
        );
    }
    confinement.discard(&scene.run_dir);
}

/// `discard` after a wrap (two turns' wraps) leaves the run folder as it was before the box.
pub fn discard_leaves_the_run_folder_as_before(confinement: &dyn Confinement, engine: Engine) {
    let scene = Scene::new();
    std::fs::write(scene.run_dir.join("events.jsonl"), "").expect("a run file");
    let before = tree(&scene.run_dir);
    let agent = shell_agent("cat", StdinClose::AfterWrite);
    wrapped(confinement, &scene, &agent, engine);
    confinement.cleanup(&scene.run_dir);
    wrapped(confinement, &scene, &agent, engine);
    confinement.cleanup(&scene.run_dir);
    confinement.discard(&scene.run_dir);
    let left: Vec<_> = tree(&scene.run_dir)
        .into_keys()
        .filter(|path| !before.contains_key(path))
        .collect();
    assert!(
        left.is_empty(),
        "{engine:?}: after `discard` the box's files are still in the run folder: {left:?}: \
         remove everything the box kept for the session"
    );
    assert!(
        scene.run_dir.join("events.jsonl").is_file(),
        "{engine:?}: `discard` removed a file of the run that is not the box's"
    );
    // A second discard, as `recover` may do after a crash, finds nothing and is fine.
    confinement.discard(&scene.run_dir);
}

/// An engine the confinement has not is refused, before anything is written.
pub fn refuses_engines_it_has_not(confinement: &dyn Confinement, engines: &[Engine]) {
    for engine in [Engine::Local, Engine::Docker, Engine::Swarm] {
        if engines.contains(&engine) {
            continue;
        }
        let scene = Scene::new();
        let agent = shell_agent("cat", StdinClose::AfterWrite);
        assert!(
            confinement.available_on(engine).is_err(),
            "`available_on({engine:?})` says yes for an engine this confinement has not: \
             answer for the engine asked about"
        );
        let refused = confinement.wrap(&scene.request(&agent, &BoxNeeds::default(), engine));
        assert!(
            refused.is_err(),
            "a wrap for {engine:?}, an engine this confinement has not, was made: refuse it \
             (`ConfineRequest::engine`), so a session never runs somewhere it did not ask for"
        );
        assert!(
            tree(&scene.run_dir).is_empty(),
            "a refused wrap for {engine:?} wrote in the run folder"
        );
    }
}

/// `cleanup` and `discard` of a run folder that never had a box, or of none, do nothing.
pub fn cleanup_and_discard_without_a_box_do_nothing(confinement: &dyn Confinement) {
    let scene = Scene::new();
    std::fs::write(scene.run_dir.join("events.jsonl"), "{}\n").expect("a run file");
    let before = tree(&scene.run_dir);
    confinement.cleanup(&scene.run_dir);
    confinement.discard(&scene.run_dir);
    assert_eq!(
        tree(&scene.run_dir),
        before,
        "`cleanup` or `discard` of a run without a box changed its folder"
    );
    let missing = scene.run_dir.join("no-such-run");
    confinement.cleanup(&missing);
    confinement.discard(&missing);
    assert!(
        !missing.exists(),
        "`discard` made the folder of a run it was given"
    );
}

/// A confinement missing its parts says why, and no engine's wrap makes a box.
pub fn refuses_when_unavailable(confinement: &dyn Confinement) {
    let error = confinement
        .available()
        .expect_err("a confinement without its parts says it is available");
    assert_eq!(
        error.kind(),
        ErrorKind::Unsupported,
        "an unavailable box is `Unsupported` (what to install is in the message): {error}"
    );
    assert!(
        error.to_string().len() > 20,
        "`available` gives no reason: say what is missing and what to install: {error}"
    );
    for engine in [Engine::Local, Engine::Docker, Engine::Swarm] {
        let scene = Scene::new();
        let agent = shell_agent("cat", StdinClose::AfterWrite);
        assert!(
            confinement
                .wrap(&scene.request(&agent, &BoxNeeds::default(), engine))
                .is_err(),
            "a confinement without its parts wrapped a turn on {engine:?}: refuse it, or the \
             agent would run in no box"
        );
    }
}

/// Starts `boxed` as the runner does: its own process group, in the worktree, the agent's
/// environment only, the stdin lines written.
fn spawn(scene: &Scene, boxed: &Invocation) -> std::process::Child {
    let mut child = Command::new(&boxed.program)
        .args(&boxed.args)
        .current_dir(&scene.worktree)
        .env_clear()
        .envs(scene.env.iter().cloned())
        .envs(boxed.env.iter().cloned())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("the box's program {:?} starts: {e}", boxed.program));
    let mut stdin = child.stdin.take().expect("a stdin pipe");
    for line in &boxed.stdin {
        writeln!(stdin, "{line}").expect("the box takes its stdin");
    }
    drop(stdin);
    child
}

/// How long a box may take to start, run a shell line and end, on a loaded machine.
const BOX_LIMIT: Duration = Duration::from_secs(60);

/// Waits for `child` to exit, at most [`BOX_LIMIT`]; its exit code and output.
fn finish(mut child: std::process::Child, what: &str) -> (Option<i32>, String, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for the box") {
            let mut out = String::new();
            let mut err = String::new();
            if let Some(mut s) = child.stdout.take() {
                let _ = s.read_to_string(&mut out);
            }
            if let Some(mut s) = child.stderr.take() {
                let _ = s.read_to_string(&mut err);
            }
            return (status.code(), out, err);
        }
        if start.elapsed() > BOX_LIMIT {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("{what}: the box did not end within {BOX_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Started, the box is the agent: its stdin reaches the agent, the agent's output comes out,
/// the agent's exit code is the box's.
pub fn the_box_is_the_agent(confinement: &dyn Confinement, engine: Engine) {
    let scene = Scene::new();
    let agent = shell_agent(
        "read line; printf 'got:%s\\n' \"$line\"; printf 'key:%s\\n' \"${PROVIDER_KEY_FOR_TESTS:-none}\"; exit 7",
        StdinClose::AfterWrite,
    );
    let boxed = wrapped(confinement, &scene, &agent, engine);
    let (code, out, err) = finish(spawn(&scene, &boxed), "a shell line in the box");
    confinement.cleanup(&scene.run_dir);
    assert!(
        out.contains(&format!("got:{PROMPT}")),
        "{engine:?}: the agent did not get its stdin line, or its output did not come out: \
         stdout {out:?}, stderr {err:?}"
    );
    assert!(
        out.contains(&format!("key:{CANARY_SECRET}")),
        "{engine:?}: the agent's environment did not reach it in the box: stdout {out:?}, \
         stderr {err:?}"
    );
    assert_eq!(
        code,
        Some(7),
        "{engine:?}: the box's exit code is not the agent's: stdout {out:?}, stderr {err:?}"
    );
    confinement.discard(&scene.run_dir);
}

/// A stop ends the box and nothing in it runs after: SIGTERM to the box's process group
/// (the runner's stop), and SIGKILL (its end of a stop's grace) for an agent that ignores
/// SIGTERM.
pub fn a_stop_ends_everything_in_the_box(confinement: &dyn Confinement, engine: Engine) {
    for (trap, signal) in [
        ("", nix::sys::signal::Signal::SIGTERM),
        ("trap '' TERM; ", nix::sys::signal::Signal::SIGKILL),
    ] {
        let scene = Scene::new();
        // Ticks a file in the worktree every 50 ms until something ends it.
        let agent = shell_agent(
            &format!("{trap}while :; do date +%s%N > tick; sleep 0.05; done"),
            StdinClose::AfterWrite,
        );
        let boxed = wrapped(confinement, &scene, &agent, engine);
        let mut child = spawn(&scene, &boxed);
        let tick = scene.worktree.join("tick");
        let start = Instant::now();
        while !tick.exists() {
            assert!(
                start.elapsed() < BOX_LIMIT,
                "{engine:?}: the agent never started in the box"
            );
            if let Some(status) = child.try_wait().expect("wait for the box") {
                let mut err = String::new();
                let _ = child.stderr.take().map(|mut s| s.read_to_string(&mut err));
                panic!("{engine:?}: the box ended ({status}) before its agent ran: {err}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(child.id() as i32), signal)
            .expect("signal the box's group");
        let (_, _, err) = finish(child, &format!("a box sent {signal}"));
        confinement.cleanup(&scene.run_dir);
        let last = std::fs::read(&tick).expect("the tick file");
        // Ten ticks' time without one: nothing of the agent runs.
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(
            std::fs::read(&tick).expect("the tick file"),
            last,
            "{engine:?}: the agent still runs after its box ended on {signal}: ending the \
             box's program must end everything in the box (stderr {err:?})"
        );
        confinement.discard(&scene.run_dir);
    }
}
