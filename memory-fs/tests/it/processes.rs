//! Separate processes writing one repo's notes: none is lost, and a writer killed
//! mid-write leaves a notes file of whole notes.
//!
//! The writers are copies of this test binary running the test `writer_process` alone with
//! `WRITER_ROOT` set.

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use memory_fs::FileMemory;
use runner_contract::MemoryStore;

const KEY: &str = "5eed5eed5eed";
const WRITER_ROOT: &str = "MEMORY_FS_TEST_WRITER_ROOT";
const WRITER_TAG: &str = "MEMORY_FS_TEST_WRITER_TAG";
const WRITER_NOTES: &str = "MEMORY_FS_TEST_WRITER_NOTES";
const PROCESSES: usize = 6;
const NOTES_EACH: usize = 10;

/// Not a check of its own: the entry the writer processes of the two tests below run in
/// (each is this test binary again, asked for this test alone, with `WRITER_ROOT` set). In
/// the test run itself, without the variable, it returns at once.
#[test]
fn writer_process() {
    if let Ok(root) = std::env::var(WRITER_ROOT) {
        writer(Path::new(&root));
    }
}

/// The body of a long note, so a write takes long enough to be killed in the middle.
fn filler(tag: &str, i: usize) -> String {
    format!("body of {tag}/{i}: {}", "x".repeat(4_000))
}

/// Writer mode: waits for `<root>/go`, then adds `WRITER_NOTES` notes (0: forever).
fn writer(root: &Path) {
    let tag = std::env::var(WRITER_TAG).expect("a writer tag");
    let count: usize = std::env::var(WRITER_NOTES)
        .expect("a note count")
        .parse()
        .expect("a number of notes");
    while !root.join("go").exists() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let store = FileMemory::new(root.join("memory"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut i = 0;
        while count == 0 || i < count {
            let text = if count == 0 {
                format!("process {tag} note {i}\n{}", filler(&tag, i))
            } else {
                format!("process {tag} note {i}")
            };
            store
                .add_note(KEY, &text)
                .await
                .expect("a writer's add_note");
            i += 1;
        }
    });
}

fn spawn_writer(root: &Path, tag: &str, notes: usize) -> Child {
    Command::new(std::env::current_exe().expect("this test's binary"))
        .args([
            "--exact",
            "processes::writer_process",
            "--test-threads=1",
            "--quiet",
        ])
        .env(WRITER_ROOT, root)
        .env(WRITER_TAG, tag)
        .env(WRITER_NOTES, notes.to_string())
        .spawn()
        .expect("start a writer process")
}

fn notes_of(root: &Path) -> String {
    let store = FileMemory::new(root.join("memory"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(store.notes(KEY)).expect("read the notes")
}

#[test]
fn many_processes_lose_no_note() {
    let root = tempfile::tempdir().expect("a temp folder");
    let children: Vec<Child> = (0..PROCESSES)
        .map(|p| spawn_writer(root.path(), &p.to_string(), NOTES_EACH))
        .collect();
    std::fs::write(root.path().join("go"), "").expect("start the writers");
    for mut child in children {
        let status = child.wait().expect("wait for a writer");
        assert!(status.success(), "a writer process failed: {status}");
    }
    let notes = notes_of(root.path());
    for p in 0..PROCESSES {
        for i in 0..NOTES_EACH {
            assert!(
                notes.contains(&format!("process {p} note {i}\n")),
                "note {i} of process {p} is lost:\n{notes}"
            );
        }
    }
}

#[test]
fn a_killed_writer_leaves_whole_notes() {
    let root = tempfile::tempdir().expect("a temp folder");
    let notes_file = root.path().join("memory").join(KEY).join("notes.md");
    let mut child = spawn_writer(root.path(), "k", 0);
    std::fs::write(root.path().join("go"), "").expect("start the writer");
    // Let it write a while, so the kill lands while a long file is being replaced.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(&notes_file).map_or(0, |t| t.matches("\n## ").count()) < 30 {
        assert!(Instant::now() < deadline, "the writer wrote too few notes");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().expect("kill the writer");
    child.wait().expect("reap the writer");

    let notes = notes_of(root.path());
    assert!(notes.ends_with('\n'), "the file ends after a whole note");
    let mut seen = 0;
    for (at, _) in notes.match_indices("process k note ") {
        let heading_line = &notes[at..];
        let i: usize = heading_line["process k note ".len()..]
            .split('\n')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("a note number");
        let whole = format!("process k note {i}\n{}\n", filler("k", i));
        assert!(heading_line.starts_with(&whole), "note {i} is cut short");
        seen += 1;
    }
    assert!(seen >= 1, "the killed writer's notes are readable");

    // The next writer clears what the dead one left half-made and adds its note.
    let store = FileMemory::new(root.path().join("memory"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime
        .block_on(store.add_note(KEY, "after the crash"))
        .expect("add a note after the crash");
    let leftovers: Vec<_> = std::fs::read_dir(notes_file.parent().expect("the repo folder"))
        .expect("list the repo folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".partial"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "half-made files are cleared: {leftovers:?}"
    );
    assert!(notes_of(root.path()).ends_with("after the crash\n"));
}
