//! The session store: round trips, strict reading, ids that never reach the disk, atomic writes.

use std::fs;
use std::path::Path;

use runner_contract::{
    AgentName, ErrorKind, SessionId, SessionRecord, SessionState, StartOptions, WorktreeSpec,
};
use runner_core::SessionStore;

fn record(id: SessionId) -> SessionRecord {
    let mut options = StartOptions::new(
        id,
        "/home/me/repo",
        "Fix it",
        AgentName::parse("some-agent").unwrap(),
    );
    options.model = Some("sonnet".into());
    options.budget_usd = Some(0.5);
    let worktree = WorktreeSpec {
        repo: "/home/me/repo".into(),
        base: "a".repeat(40),
        branch: "codehands/fix-it-3f2a9c1e".into(),
        path: "/home/me/.codehands/worktrees/0123456789ab/3f2a9c1e".into(),
    };
    SessionRecord::queued(&options, "0123456789ab".into(), worktree)
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            found.push(entry.file_name().to_string_lossy().into_owned());
            found.extend(files_under(&entry.path()));
        }
    }
    found
}

#[test]
fn a_new_store_finds_what_the_old_one_saved() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions");
    let id = SessionId::new_random();
    let store = SessionStore::on_disk(&dir);
    store.create(&record(id)).unwrap();
    store.move_to(&id, SessionState::Running, "start").unwrap();

    let reloaded = SessionStore::on_disk(&dir).get(&id).unwrap();
    assert_eq!(reloaded.state, SessionState::Running);
    assert_eq!(reloaded.branch, "codehands/fix-it-3f2a9c1e");
    assert!(dir.join(format!("{id}.json")).is_file());
    assert_eq!(SessionStore::on_disk(&dir).list().unwrap().records.len(), 1);
}

#[test]
fn moves_are_still_checked_after_loading() {
    let home = tempfile::tempdir().unwrap();
    let id = SessionId::new_random();
    SessionStore::on_disk(home.path())
        .create(&record(id))
        .unwrap();
    let store = SessionStore::on_disk(home.path());
    let err = store
        .move_to(&id, SessionState::Approved, "approve")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::IllegalMove);
    assert_eq!(err.current_state(), Some(SessionState::Queued));
    assert!(err.to_string().contains("queued"), "{err}");
    assert_eq!(
        store.get(&id).unwrap().state,
        SessionState::Queued,
        "a refused move changes nothing"
    );
}

#[test]
fn the_pid_is_never_saved() {
    let home = tempfile::tempdir().unwrap();
    let id = SessionId::new_random();
    SessionStore::on_disk(home.path())
        .create(&record(id))
        .unwrap();
    let text = fs::read_to_string(home.path().join(format!("{id}.json"))).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<_> = value
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.to_lowercase())
        .collect();
    assert!(keys.iter().all(|k| !k.contains("pid")), "{keys:?}");
}

#[test]
fn reading_is_strict() {
    let home = tempfile::tempdir().unwrap();
    let id = SessionId::new_random();
    let store = SessionStore::on_disk(home.path());
    store.create(&record(id)).unwrap();
    let path = home.path().join(format!("{id}.json"));
    let good: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();

    let mut cases: Vec<(&str, serde_json::Value)> = Vec::new();
    let mut unknown = good.clone();
    unknown["pid"] = 1234.into();
    cases.push(("an unknown field", unknown));
    let mut bad_state = good.clone();
    bad_state["state"] = "exploded".into();
    cases.push(("an unknown state", bad_state));
    let mut wrong_type = good.clone();
    wrong_type["lastSeq"] = "seven".into();
    cases.push(("a wrong type", wrong_type));
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("branch");
    cases.push(("a missing field", missing));
    let mut other_id = good.clone();
    other_id["sessionId"] = SessionId::new_random().to_string().into();
    cases.push(("another session's id", other_id));

    for (what, value) in cases {
        fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
        let err = store.get(&id).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::CorruptRecord, "{what}: {err}");
        assert_eq!(
            store.list().unwrap().unreadable.len(),
            1,
            "{what} is listed as unreadable"
        );
    }
    fs::write(&path, b"{ not json").unwrap();
    assert_eq!(store.get(&id).unwrap_err().kind(), ErrorKind::CorruptRecord);
}

#[test]
fn ids_that_are_not_uuids_never_reach_the_disk() {
    let home = tempfile::tempdir().unwrap();
    let long = "x".repeat(300);
    for bad in [
        "../x",
        "a/b",
        "",
        "\0",
        long.as_str(),
        "not-a-uuid",
        "../../etc/passwd",
    ] {
        assert_eq!(
            SessionId::parse(bad).unwrap_err().kind(),
            ErrorKind::InvalidInput,
            "{bad:?}"
        );
        // The only way to name a record is a parsed id, so the store cannot even be asked;
        // a record arriving as JSON with a bad id is refused while parsing, too.
        let mut value = serde_json::to_value(record(SessionId::new_random())).unwrap();
        value["sessionId"] = bad.into();
        assert!(
            serde_json::from_value::<SessionRecord>(value).is_err(),
            "{bad:?}"
        );
    }
    assert!(
        files_under(home.path()).is_empty(),
        "nothing written anywhere"
    );
}

#[test]
fn a_crash_between_temp_write_and_rename_keeps_the_old_record() {
    let home = tempfile::tempdir().unwrap();
    let id = SessionId::new_random();
    let store = SessionStore::on_disk(home.path());
    store.create(&record(id)).unwrap();
    // What a crash leaves: a half-written temp file beside the record, never renamed.
    fs::write(
        home.path().join(".tmp-crash.partial"),
        b"{\"sessionId\": \"3f2a",
    )
    .unwrap();
    let reloaded = SessionStore::on_disk(home.path());
    assert_eq!(reloaded.get(&id).unwrap().state, SessionState::Queued);
    let listing = reloaded.list().unwrap();
    assert_eq!(listing.records.len(), 1);
    assert!(
        listing.unreadable.is_empty(),
        "temp files are not records: {:?}",
        listing.unreadable
    );
    // And a write after the crash still works and replaces the record whole.
    reloaded
        .move_to(&id, SessionState::Running, "start")
        .unwrap();
    assert_eq!(
        SessionStore::on_disk(home.path()).get(&id).unwrap().state,
        SessionState::Running
    );
}

#[test]
fn no_root_means_memory_only() {
    let store = SessionStore::in_memory();
    let id = SessionId::new_random();
    store.create(&record(id)).unwrap();
    assert!(store.dir().is_none());
    assert_eq!(store.get(&id).unwrap().session_id, id);
    assert_eq!(
        store.create(&record(id)).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        store.get(&SessionId::new_random()).unwrap_err().kind(),
        ErrorKind::NotFound
    );
}
