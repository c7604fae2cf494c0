//! The parser and the framing on hostile input: arbitrary bytes, broken real lines,
//! a 64 MiB line, a line over the cap.

use agent_claude::{ClaudeCode, JsonlDecoder};
use proptest::prelude::*;
use runner_contract::{Agent, EventBody};

const REAL_LINES: &str = include_str!("../fixtures/edit-files.jsonl");

fn run_bytes(bytes: &[u8], chunk: usize, max_line: usize) -> Vec<EventBody> {
    let mut decoder = JsonlDecoder::with_max_line(max_line);
    let mut parser = ClaudeCode::with_program("claude").parser();
    let mut frames = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        decoder.push(piece, &mut frames);
    }
    decoder.finish(&mut frames);
    let mut events: Vec<EventBody> = frames
        .iter()
        .flat_map(|f| parser.parse_line(&f.text()))
        .collect();
    events.extend(parser.finish(Some(0)));
    events
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048), chunk in 1usize..64) {
        run_bytes(&bytes, chunk, 512);
    }

    #[test]
    fn cut_and_spliced_real_lines_never_panic(cuts in proptest::collection::vec((0usize..REAL_LINES.len(), 0usize..REAL_LINES.len()), 1..8)) {
        let bytes = REAL_LINES.as_bytes();
        let mut mangled = Vec::new();
        for (a, b) in cuts {
            let (start, end) = (a.min(b), a.max(b));
            mangled.extend_from_slice(&bytes[start..end]);
        }
        run_bytes(&mangled, 7, 1 << 20);
    }
}

#[test]
fn a_64_mib_tool_result_parses() {
    let huge = "x".repeat(64 << 20);
    let tool_use = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"cat big.log"}}]}}"#;
    let result = serde_json::json!({
        "type": "user",
        "message": { "content": [{ "type": "tool_result", "tool_use_id": "t", "content": huge }] },
    })
    .to_string();
    let stream = format!("{tool_use}\n{result}\n");
    let events = run_bytes(stream.as_bytes(), 1 << 16, agent_claude::DEFAULT_MAX_LINE);
    let types: Vec<&str> = events.iter().map(EventBody::type_name).collect();
    assert_eq!(types, ["command.started", "command.finished"]);
}

#[test]
fn a_line_over_the_cap_is_reported_and_the_run_goes_on() {
    let stream = format!(
        "{}\n{}\n{}",
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"before"}]}}"#,
        "y".repeat(4096),
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"after"}]}}"#,
    );
    let events = run_bytes(stream.as_bytes(), 100, 1024);
    let texts: Vec<String> = events
        .iter()
        .map(|e| match e {
            EventBody::Message(m) => m.text.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(texts.len(), 3);
    assert_eq!(texts[0], "before");
    assert!(
        texts[1].contains("4096 bytes") && texts[1].contains("cap"),
        "{}",
        texts[1]
    );
    assert_eq!(
        texts[2], "after",
        "the unterminated last line is parsed too"
    );
}
