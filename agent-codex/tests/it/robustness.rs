//! The parser never panics: arbitrary text, and recorded lines cut or with fields
//! of the wrong type.

use agent_codex::Codex;
use proptest::prelude::*;
use runner_contract::Agent;

const SHAPES: &[&str] = &[
    r#"{"type":"thread.started","thread_id":1}"#,
    r#"{"type":"item.started","item":{"id":5,"type":"command_execution","command":null}}"#,
    r#"{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"x","exit_code":"zero"}}"#,
    r#"{"type":"item.completed","item":{"type":"file_change","changes":[{"path":3}]}}"#,
    r#"{"type":"item.completed","item":{"type":"todo_list","items":"none"}}"#,
    r#"{"type":"item.updated","item":{"type":"todo_list","items":[{"text":"a"}]}}"#,
    r#"{"type":"turn.completed","usage":"lots"}"#,
    r#"{"type":"turn.failed","error":"bad"}"#,
    r#"{"type":"error","message":"Reconnecting... 9999999999/5 (status 999999)"}"#,
    r#"{"type":"error","message":"status"}"#,
];

proptest! {
    #[test]
    fn arbitrary_text_never_panics(line in "\\PC{0,300}") {
        let mut parser = Codex::with_program("codex").parser();
        let _ = parser.parse_line(&line);
        let _ = parser.finish(Some(0));
    }

    #[test]
    fn cut_and_mistyped_lines_never_panic(which in 0..SHAPES.len(), cut in 0usize..200) {
        let line = SHAPES[which];
        let mut end = cut.min(line.len());
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        let mut parser = Codex::with_program("codex").parser();
        let _ = parser.parse_line(&line[..end]);
        let _ = parser.parse_line(line);
        let _ = parser.finish(Some(0));
    }
}
