//! The bodies of the fuzz targets in `fuzz/`, one function per target, and their seeds.
//!
//! The cargo-fuzz targets (nightly, libFuzzer) call these functions, and so does the
//! stable replay test (`tests/regressions.rs`) for every input kept under
//! `fuzz/regressions/<target>/`: a crash found once stays a test. Each body feeds bytes we
//! do not control to one boundary of codehands and panics only when that boundary breaks a
//! promise (it panicked itself, or a checked invariant failed).

pub mod acp_server;
pub mod patch;
mod seeds;

use std::path::Path;
use std::sync::OnceLock;

use runner_contract::framing::{Frame, JsonlDecoder};
use runner_contract::text_lines::TextLinesParser;
use runner_contract::{Agent, AgentParser, RepoProfile, SessionId, SessionRecord};
use runner_core::SessionStore;

pub use acp_server::acp_server;
pub use patch::patch;
pub use seeds::seeds;

/// The fuzz targets, by name: each is a binary in `fuzz/fuzz_targets/` and a folder under
/// `fuzz/regressions/`.
pub const TARGETS: &[&str] = &[
    "agent_output",
    "records",
    "profiles_and_plugins",
    "patch",
    "acp_server",
];

/// Runs the body of the target `name` over `data`; `false` for an unknown name.
pub fn run(name: &str, data: &[u8]) -> bool {
    match name {
        "agent_output" => agent_output(data),
        "records" => records(data),
        "profiles_and_plugins" => profiles_and_plugins(data),
        "patch" => patch::patch(data),
        "acp_server" => acp_server::acp_server(data),
        _ => return false,
    }
    true
}

/// The JSON-lines parser of a profile with every kind of line mapped, some by dotted paths.
fn json_lines_parser() -> runner_contract::json_lines::JsonLinesParser {
    let map = serde_json::from_value(serde_json::json!({
        "kind": "type",
        "message": {"when": "message", "text": "text"},
        "command-started": {"when": "start", "command": "cmd", "id": "id"},
        "command": {"when": "result", "command": "cmd", "exit-code": "status.code",
                    "output": "out", "id": "id", "test": "is_test"},
        "result": {"when": "done", "text": "text", "cost-usd": "usage.cost",
                   "input-tokens": "usage.in", "output-tokens": "usage.out"},
        "error": {"when": "error", "message": "message"},
    }))
    .expect("a valid map");
    runner_contract::json_lines::JsonLinesParser::new(map)
}

/// An agent's output as it streams in: the first byte picks the chunk sizes and the line
/// cap, the rest is the output. It is framed in those chunks (the frames must be the same
/// as framing it whole), and every line goes to each agent's parser in turn, each parser
/// keeping its state across lines as in a run, then `finish(Some(0))`.
pub fn agent_output(data: &[u8]) {
    let Some((&knob, output)) = data.split_first() else {
        return;
    };
    // A small cap now and then, so over-long lines are exercised too.
    let max_line = if knob & 0x80 != 0 {
        64
    } else {
        runner_contract::framing::DEFAULT_MAX_LINE
    };
    let chunked = frames_in_chunks(output, max_line, knob);
    let whole = frames_in_chunks(output, max_line, 0);
    assert_eq!(chunked, whole, "framing depends on where the chunks end");

    let mut parsers: Vec<Box<dyn AgentParser>> = vec![
        agent_claude::stream_json_parser(),
        agent_codex::jsonl_parser(),
        agent_mini_swe::MiniSweAgent::without_config("mini").parser(),
        Box::new(TextLinesParser::default()),
        Box::new(json_lines_parser()),
        acp_parser(),
    ];
    for frame in &chunked {
        let line = frame.text();
        for parser in &mut parsers {
            parser.parse_line(&line);
            // A protocol's parser owes lines: each must be one line.
            for owed in parser.owed_input() {
                assert!(!owed.contains('\n'), "an owed line is one line: {owed:?}");
            }
        }
    }
    for parser in &mut parsers {
        parser.finish(Some(0));
    }
}

/// The ACP client's parser as the runner makes it: driving a turn (it owes the handshake).
fn acp_parser() -> Box<dyn AgentParser> {
    let agent = agent_acp::AcpAgent::new(
        runner_contract::AgentName::parse("acp").expect("a valid name"),
        "acp-agent",
    );
    let request = runner_contract::AgentRequest {
        session_id: SessionId::new_random(),
        worktree: "/w".into(),
        prompt: "Fix it.".into(),
        model: None,
        budget_usd: 1.0,
        notes: None,
        notes_file: None,
        test_command: None,
        resume: None,
        permissions: Default::default(),
        provider_env: Vec::new(),
        read_only: false,
        tools: Default::default(),
    };
    agent.parser_for(&request)
}

/// Frames `output` in chunks whose sizes come from `knob` (0: one chunk).
fn frames_in_chunks(output: &[u8], max_line: usize, knob: u8) -> Vec<Frame> {
    let mut decoder = JsonlDecoder::with_max_line(max_line);
    let mut frames = Vec::new();
    if knob == 0 {
        decoder.push(output, &mut frames);
    } else {
        // A small linear congruential sequence: sizes 1..=64, varied but repeatable.
        let mut state = u32::from(knob);
        let mut rest = output;
        while !rest.is_empty() {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let size = ((state >> 16) as usize % 64 + 1).min(rest.len());
            let (chunk, tail) = rest.split_at(size);
            decoder.push(chunk, &mut frames);
            rest = tail;
        }
    }
    decoder.finish(&mut frames);
    frames
}

/// Files under the codehands home, read back: a session record (strictly, through the
/// store's on-disk read and listing), a repo profile, and repo notes. A strict read may
/// refuse; what it accepts must write out and read back the same.
pub fn records(data: &[u8]) {
    if let Ok(record) = serde_json::from_slice::<SessionRecord>(data) {
        let json = serde_json::to_vec(&record).expect("an accepted record writes out");
        let back: SessionRecord =
            serde_json::from_slice(&json).expect("a written record reads back");
        assert_eq!(back, record, "a record changed on its way to disk and back");
    }
    read_through_store(data);

    if let Ok(profile) = serde_json::from_slice::<RepoProfile>(data) {
        let json = serde_json::to_vec(&profile).expect("an accepted profile writes out");
        let back: RepoProfile = serde_json::from_slice(&json).expect("a profile reads back");
        assert_eq!(
            back, profile,
            "a repo profile changed on its way to disk and back"
        );
    }

    // memory-fs refuses notes that are not UTF-8 before anything reads them.
    if let Ok(notes) = std::str::from_utf8(data) {
        let for_prompt = memory_fs::notes_for_prompt(notes, 2_000);
        assert!(
            for_prompt.chars().count() <= 2_000,
            "the notes for a prompt are over their cap"
        );
        memory_fs::trim_notes(notes, 10);
        memory_fs::set_outcome(notes, "codehands/fix-3f2a9c1e", "approved");
    }
}

/// A session store on disk with one session, whose file each input overwrites.
struct Store {
    _dir: tempfile::TempDir,
    store: SessionStore,
    id: SessionId,
}

fn read_through_store(data: &[u8]) {
    static STORE: OnceLock<Store> = OnceLock::new();
    let store = STORE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temp folder for the store");
        let store = SessionStore::on_disk(dir.path().join("sessions"));
        let record: SessionRecord =
            serde_json::from_slice(&seeds::session_record()).expect("the seed record reads");
        store.create(&record).expect("the seed record saves");
        Store {
            id: record.session_id,
            _dir: dir,
            store,
        }
    });
    let dir = store.store.dir().expect("an on-disk store");
    std::fs::write(dir.join(format!("{}.json", store.id)), data).expect("the record file writes");
    let _ = store.store.get(&store.id);
    let _ = store.store.list();
}

/// An agent profile file (TOML) as `--agent-file` or the home's `agents/` reads it, and
/// the same bytes as each JSON answer a plugin library may give the host.
pub fn profiles_and_plugins(data: &[u8]) {
    // Profile::read refuses a file that is not UTF-8 before parsing it.
    if let Ok(text) = std::str::from_utf8(data) {
        let path = Path::new("/home/someone/.codehands/agents/ruff-fix.toml");
        let _ = codehands::profile::Profile::parse(text, path, Some("ruff-fix"));
        let _ = codehands::profile::Profile::parse(text, path, None);
    }
    let _ = agent_plugin_abi::host::read_answers(data);
}
