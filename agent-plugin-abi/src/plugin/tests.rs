//! The plugin's side called in-process through its own table, as a host would.

use runner_contract::text_lines::TextLinesParser;
use runner_contract::{
    AgentCapabilities, AgentName, AgentRequest, Invocation, Result, SessionId, StdinClose,
};

use super::*;

/// A working agent.
struct Tee;

impl Agent for Tee {
    fn name(&self) -> AgentName {
        AgentName::parse("tee-notes").unwrap()
    }
    fn capabilities(&self) -> AgentCapabilities {
        AgentCapabilities {
            resume: false,
            budget: true,
            ..AgentCapabilities::default()
        }
    }
    fn provider_env(&self) -> Vec<String> {
        vec!["OPENAI_BASE_URL".into(), "TEE_AUTH".into()]
    }
    fn secret_envs(&self) -> Vec<String> {
        vec!["TEE_AUTH".into()]
    }
    fn description(&self) -> Option<String> {
        Some("Writes the prompt to NOTES.md".into())
    }
    fn invocation(&self, request: &AgentRequest) -> Result<Invocation> {
        Ok(Invocation {
            program: "tee".into(),
            args: vec![request.worktree.join("NOTES.md").into()],
            env: Vec::new(),
            stdin: vec![request.prompt.clone()],
            close_stdin: StdinClose::AfterWrite,
        })
    }
    fn parser(&self) -> Box<dyn AgentParser> {
        Box::new(TextLinesParser::default())
    }
}

/// An agent whose every call past its name panics.
struct Panicky;

struct PanickyParser;

impl AgentParser for PanickyParser {
    fn parse_line(&mut self, _line: &str) -> Vec<runner_contract::EventBody> {
        panic!("parse_line of a test");
    }
}

impl Agent for Panicky {
    fn name(&self) -> AgentName {
        AgentName::parse("panicky").unwrap()
    }
    fn capabilities(&self) -> AgentCapabilities {
        AgentCapabilities::default()
    }
    fn invocation(&self, _request: &AgentRequest) -> Result<Invocation> {
        panic!("invocation of a test");
    }
    fn parser(&self) -> Box<dyn AgentParser> {
        Box::new(PanickyParser)
    }
}

fn the_table() -> &'static PluginTable {
    fn build() -> Vec<Arc<dyn Agent>> {
        vec![Arc::new(Tee), Arc::new(Panicky)]
    }
    // SAFETY: `table` points at the static table, whose first field is the header.
    unsafe { &*table(build).cast::<PluginTable>() }
}

/// Reads an answer as JSON and gives it back.
fn read(answer: Answer) -> serde_json::Value {
    // SAFETY: the answer came from this table and is given back once, right after.
    let bytes = unsafe { std::slice::from_raw_parts(answer.ptr, answer.len) }.to_vec();
    // SAFETY: as above.
    unsafe { (the_table().answer_free)(answer) };
    serde_json::from_slice(&bytes).unwrap()
}

fn request() -> String {
    let request = AgentRequest {
        permissions: Default::default(),
        session_id: SessionId::parse("3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42").unwrap(),
        worktree: "/tmp/wt".into(),
        prompt: "Write the notes.".into(),
        model: None,
        budget_usd: 1.0,
        notes: None,
        notes_file: None,
        test_command: None,
        resume: None,
        provider_env: Vec::new(),
        read_only: false,
        tools: Default::default(),
    };
    serde_json::to_string(&RequestWire::try_from(&request).unwrap()).unwrap()
}

#[test]
fn the_header_says_version_and_size() {
    let header = the_table().header;
    assert_eq!(header.abi_version, ABI_VERSION);
    assert_eq!(header.table_size as usize, size_of::<PluginTable>());
}

#[test]
fn describe_lists_every_agent() {
    // SAFETY: a table call without arguments.
    let reply = read(unsafe { (the_table().describe)() });
    assert_eq!(
        reply,
        serde_json::json!({"ok": [
            {"name": "tee-notes", "capabilities": {"resume": false, "budget": true},
             "providerEnv": ["OPENAI_BASE_URL", "TEE_AUTH"], "secretEnvs": ["TEE_AUTH"],
             "description": "Writes the prompt to NOTES.md", "versionProbe": null},
            {"name": "panicky", "capabilities": {"resume": false, "budget": false},
             "providerEnv": [], "versionProbe": null},
        ]})
    );
}

#[test]
fn invocation_answers_the_agents_program() {
    let request = request();
    // SAFETY: the request is lent for the call.
    let reply = read(unsafe { (the_table().invocation)(0, Bytes::of(&request)) });
    assert_eq!(
        reply,
        serde_json::json!({"ok": {"program": "tee", "args": ["/tmp/wt/NOTES.md"], "env": [],
            "stdin": ["Write the notes."], "closeStdin": "after-write"}})
    );
}

#[test]
fn a_panic_becomes_an_error_answer() {
    let request = request();
    // SAFETY: the request is lent for the call.
    let reply = read(unsafe { (the_table().invocation)(1, Bytes::of(&request)) });
    assert_eq!(reply["error"]["kind"], "panicked");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("invocation of a test"), "{message}");
}

#[test]
fn bad_calls_are_error_answers() {
    let table = the_table();
    // SAFETY: lent bytes, valid for the call.
    let unknown = read(unsafe { (table.invocation)(7, Bytes::of(&request())) });
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("asked for agent 7, and this plugin has 2")
    );
    // SAFETY: as above.
    let garbage = read(unsafe { (table.invocation)(0, Bytes::of("{")) });
    assert_eq!(garbage["error"]["kind"], "internal");
    let not_utf8 = [0xffu8, 0xfe];
    let bytes = Bytes {
        ptr: not_utf8.as_ptr(),
        len: 2,
    };
    // SAFETY: as above.
    let reply = read(unsafe { (table.invocation)(0, bytes) });
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not UTF-8")
    );
    // SAFETY: an index out of range is a null handle, not a call into nothing.
    assert!(unsafe { (table.parser_new)(9) }.is_null());
}

#[test]
fn a_parser_crosses_as_a_handle() {
    let table = the_table();
    // SAFETY: each call passes the live handle from `parser_new` and lends its text.
    unsafe {
        let parser = (table.parser_new)(0);
        assert!(!parser.is_null());
        let events = read((table.parse_line)(parser, Bytes::of("Wrote NOTES.md")));
        assert_eq!(
            events,
            serde_json::json!({"ok": [{"type": "message",
                "payload": {"text": "Wrote NOTES.md", "role": "assistant"}}]})
        );
        let end = read((table.parser_finish)(parser, Bytes::of("0")));
        assert_eq!(end["ok"][0]["type"], "task.finished");
        let bad = read((table.parser_finish)(parser, Bytes::of("\"zero\"")));
        assert_eq!(bad["error"]["kind"], "internal");
        (table.parser_free)(parser);
    }
}

#[test]
fn a_panicking_parser_answers_an_error_and_can_be_freed() {
    let table = the_table();
    // SAFETY: as in `a_parser_crosses_as_a_handle`.
    unsafe {
        let parser = (table.parser_new)(1);
        let reply = read((table.parse_line)(parser, Bytes::of("x")));
        assert_eq!(reply["error"]["kind"], "panicked");
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .contains("parse_line of a test")
        );
        (table.parser_free)(parser);
    }
}
