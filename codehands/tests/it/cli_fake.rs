//! `codehands fake` prints the contract JSON a daemon receives, valid against `schemas/`.

use std::process::Command;

fn codehands(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_codehands"))
        .args(args)
        .output()
        .expect("run codehands")
}

fn event_validator() -> jsonschema::Validator {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/event.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
}

#[test]
fn fake_prints_thirteen_valid_events_ending_in_approval() {
    let out = codehands(&["fake", "--delay-ms", "0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 13, "{text}");
    let validator = event_validator();
    for (i, line) in lines.iter().enumerate() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "line {}: {errors:?}\n{line}", i + 1);
        assert_eq!(value["seq"], (i + 1) as u64);
    }
    let last: serde_json::Value = serde_json::from_str(lines[12]).unwrap();
    assert_eq!(last["type"], "approval.requested");
}

#[test]
fn the_schema_validator_rejects_a_broken_event() {
    // Proves the check above can fail: an event with a string seq and an unknown type.
    let validator = event_validator();
    let bad = serde_json::json!({
        "sessionId": "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42", "seq": "1", "ts": "x",
        "type": "task.exploded", "payload": {}, "raw": null
    });
    assert!(!validator.is_valid(&bad));
}

#[test]
fn schema_prints_every_schema_and_refuses_unknown_names() {
    let out = codehands(&["schema"]);
    assert!(out.status.success());
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(all.get("event.schema.json").is_some());
    let one = codehands(&["schema", "event"]);
    assert!(one.status.success());
    let bad = codehands(&["schema", "nope"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("pick one of"));
}

#[test]
fn every_command_has_help() {
    for args in [&["--help"][..], &["fake", "--help"], &["schema", "--help"]] {
        let out = codehands(args);
        assert!(out.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{args:?}"
        );
    }
}
