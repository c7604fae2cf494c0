//! A sample codehands plugin written by hand against the ABI's types (no
//! `export_agent!`), as a plugin with a bug would be: its two agents run `tee` like the
//! `tee` sample, but their parsers answer garbage: `garbage-parser` bytes that are not
//! JSON, `wrong-shape-parser` JSON that is not a list of events.

// A hand-written table is raw pointers throughout; each unsafe block says why it holds.
#![allow(unsafe_code)]

use agent_plugin_abi::{ABI_VERSION, Answer, Bytes, ParserHandle, PluginTable, TableHeader};

static TABLE: PluginTable = PluginTable {
    header: TableHeader {
        abi_version: ABI_VERSION,
        table_size: size_of::<PluginTable>() as u32,
    },
    describe,
    invocation,
    parser_new,
    parse_line,
    parser_finish,
    parser_free,
    answer_free,
};

/// The codehands plugin entry.
#[unsafe(no_mangle)]
pub extern "C" fn codehands_agent_plugin() -> *const TableHeader {
    (&raw const TABLE).cast()
}

fn answer(text: String) -> Answer {
    let bytes = text.into_bytes().into_boxed_slice();
    let len = bytes.len();
    Answer {
        ptr: Box::into_raw(bytes).cast(),
        len,
    }
}

unsafe extern "C" fn describe() -> Answer {
    answer(
        serde_json::json!({"ok": [
            {"name": "garbage-parser", "capabilities": {}},
            {"name": "wrong-shape-parser", "capabilities": {}},
        ]})
        .to_string(),
    )
}

unsafe extern "C" fn invocation(_agent: u32, request: Bytes) -> Answer {
    // SAFETY: the host lends the request for the call.
    let request = unsafe { std::slice::from_raw_parts(request.ptr, request.len) };
    let request: serde_json::Value = serde_json::from_slice(request).unwrap_or_default();
    let worktree = request["worktree"].as_str().unwrap_or_default();
    answer(
        serde_json::json!({"ok": {
            "program": "tee",
            "args": [format!("{worktree}/NOTES.md")],
            "stdin": [request["prompt"]],
            "closeStdin": "after-write",
        }})
        .to_string(),
    )
}

unsafe extern "C" fn parser_new(agent: u32) -> *mut ParserHandle {
    Box::into_raw(Box::new(agent)).cast()
}

unsafe extern "C" fn parse_line(parser: *mut ParserHandle, _line: Bytes) -> Answer {
    // SAFETY: the handle is the `Box<u32>` made by `parser_new`, still live.
    let agent = unsafe { *parser.cast::<u32>() };
    if agent == 0 {
        answer("this is not JSON".to_owned())
    } else {
        answer(r#"{"ok": {"type": "message"}}"#.to_owned())
    }
}

unsafe extern "C" fn parser_finish(_parser: *mut ParserHandle, _exit_code: Bytes) -> Answer {
    answer(r#"{"ok": []}"#.to_owned())
}

unsafe extern "C" fn parser_free(parser: *mut ParserHandle) {
    // SAFETY: the handle is the `Box<u32>` made by `parser_new`, freed once.
    drop(unsafe { Box::from_raw(parser.cast::<u32>()) });
}

unsafe extern "C" fn answer_free(answer: Answer) {
    // SAFETY: every answer is a leaked `Box<[u8]>` of `len` bytes, given back once.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(answer.ptr, answer.len)) });
}
