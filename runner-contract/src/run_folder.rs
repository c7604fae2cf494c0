//! The names of every file in a session's run folder, `runs/<sessionId>/`, spelled once
//! (ARCHITECTURE.md, "The run folder"). Processes talk through these files: the command
//! that started a run, its supervisor, the agent, the box and whoever looks later. A name is
//! written here and nowhere else in product code (the tidy test checks it), so the folder's
//! whole layout reads in one place.

/// Every event of the session, in seq order, as the contract's JSON (one per line).
pub const EVENTS: &str = "events.jsonl";
/// Every line the agent printed, redacted.
pub const TRANSCRIPT: &str = "transcript.jsonl";
/// What a supervisor process started for the run writes of itself.
pub const SUPERVISOR_LOG: &str = "supervisor.log";
/// The lock of the run's one supervisor.
pub const SUPERVISOR_LOCK: &str = "supervisor.lock";
/// The lock a decision (approve, reject) and a follow-up take on the session.
pub const SESSION_LOCK: &str = "session.lock";
/// The turn planned: its number, prompt, phase and first seq.
pub const TURN: &str = "turn.json";
/// Which agent process runs the turn (pid with its start time).
pub const AGENT: &str = "agent.json";
/// How the turn's agent exited.
pub const EXIT: &str = "exit.json";
/// The agent program's version, probed once per session.
pub const AGENT_VERSION: &str = "agent-version.json";
/// Which of the agent's environment values are secret (cut out of every line it prints).
pub const SECRETS: &str = "secrets.json";
/// Which process started the run.
pub const RUNNER: &str = "runner.json";
/// Present when a stop was asked for.
pub const STOP_REQUESTED: &str = "stop-requested";
/// The room a turn keeps for writing its end on a full disk.
pub const RESERVE: &str = "reserve";
/// The repo notes handed to the agent for this turn.
pub const NOTES: &str = "notes.md";
/// Input for the running agent (messages, permission answers), one JSON line each.
pub const INBOX: &str = "inbox.jsonl";
/// Where a workflow's driver is (its phases, rounds and whether it is done).
pub const WORKFLOW: &str = "workflow.json";
/// The lock of a workflow's one driver.
pub const DRIVER_LOCK: &str = "driver.lock";
/// The worktree's fingerprint before a read-only phase (a write shows after it).
pub const PHASE_BEFORE: &str = "phase-before.json";
/// The locked test box's verdict on the change.
pub const VERDICT: &str = "verdict.json";
/// The box's plan for the turn (what it binds, allows and hides).
pub const BOX_PLAN: &str = "box.json";
/// The plan of a box on a remote engine.
pub const REMOTE: &str = "remote.json";
/// How long each phase of a remote turn took (create, schedule, start, first output, result,
/// cleanup), for `report` and `bench scale`.
pub const REMOTE_PHASES: &str = "remote-phases.json";
/// The agent's home kept from a remote turn for the next one.
pub const REMOTE_HOME: &str = "remote-home.tar";
/// The command line's own log of the run.
pub const RUN_LOG: &str = "codehands.log";
/// The folder where planted repositories and gitlinks go at a boxed turn's end.
pub const QUARANTINE: &str = "quarantine";
/// The prefix of the empty folders a version probe runs in.
pub const PROBE_PREFIX: &str = "probe-";

/// What the agent of turn `turn` prints on stdout (written by the agent itself).
pub fn agent_stdout(turn: u64) -> String {
    format!("turn-{turn}.stdout")
}

/// What the agent of turn `turn` prints on stderr.
pub fn agent_stderr(turn: u64) -> String {
    format!("turn-{turn}.stderr")
}

/// The agent's standard input for turn `turn`.
pub fn agent_stdin(turn: u64) -> String {
    format!("turn-{turn}.stdin")
}

/// The result of the locked test box's `n`th run for the session.
pub fn sandbox_result(n: u64) -> String {
    format!("{SANDBOX_RESULT_PREFIX}{n}.json")
}

/// What every [`sandbox_result`] name begins with.
pub const SANDBOX_RESULT_PREFIX: &str = "test-";

/// The quarantine folder of turn `turn` (under [`QUARANTINE`]).
pub fn quarantined(turn: u64) -> String {
    format!("turn-{turn}")
}
