//! What only the file store does: where files go, reading back after a restart, strict
//! reading, bad keys making nothing, writers on many threads.

use std::fs;
use std::path::Path;

use memory_fs::FileMemory;
use runner_contract::{ErrorKind, Language, MemoryStore, PackageManager, RepoProfile};
use runner_testkit::{expect_error, memory::BAD_REPO_KEYS};

const KEY: &str = "3f2a9c1e0b7d";

fn node_profile() -> RepoProfile {
    RepoProfile {
        language: Language::Node,
        package_manager: Some(PackageManager::Npm),
        test_command: Some("npm test".into()),
        node_version: Some("20".into()),
        needs_install: true,
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn files_go_under_home_memory_repo_key() {
    let home = tempfile::tempdir().expect("a temp folder");
    let store = FileMemory::in_home(home.path());
    assert_eq!(store.root(), home.path().join("memory"));
    store.add_note(KEY, "remember this").await.expect("add");
    store
        .save_profile(KEY, &node_profile())
        .await
        .expect("save");
    let repo = home.path().join("memory").join(KEY);
    assert_eq!(entries(&repo), [".lock", "notes.md", "profile.json"]);
    let notes = fs::read_to_string(repo.join("notes.md")).expect("notes.md");
    assert!(
        notes.starts_with("## ") && notes.ends_with("\nremember this\n"),
        "{notes:?}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(repo.join("profile.json")).expect("profile"))
            .expect("profile.json is JSON");
    assert_eq!(
        json,
        serde_json::json!({
            "language": "node", "packageManager": "npm", "testCommand": "npm test",
            "nodeVersion": "20", "needsInstall": true
        })
    );
}

#[tokio::test]
async fn new_takes_the_memory_root_itself() {
    let root = tempfile::tempdir().expect("a temp folder");
    let store = FileMemory::new(root.path());
    store.add_note(KEY, "x").await.expect("add");
    assert!(root.path().join(KEY).join("notes.md").is_file());
    assert!(!root.path().join("memory").exists());
}

#[tokio::test]
async fn a_new_store_reads_back_what_the_old_one_wrote() {
    let home = tempfile::tempdir().expect("a temp folder");
    {
        let store = FileMemory::in_home(home.path());
        store.add_note(KEY, "first").await.expect("add");
        store.add_note(KEY, "second").await.expect("add");
        store
            .save_profile(KEY, &node_profile())
            .await
            .expect("save");
    }
    let store = FileMemory::in_home(home.path());
    let notes = store.notes(KEY).await.expect("notes");
    let (first, second) = (notes.find("\nfirst\n"), notes.find("\nsecond\n"));
    assert!(
        first.is_some() && first < second,
        "both notes, in order: {notes:?}"
    );
    assert_eq!(
        store.profile(KEY).await.expect("profile"),
        Some(node_profile())
    );
}

#[tokio::test]
async fn reading_a_repo_with_nothing_stored_makes_nothing() {
    let home = tempfile::tempdir().expect("a temp folder");
    let store = FileMemory::in_home(home.path());
    assert_eq!(store.notes(KEY).await.expect("notes"), "");
    assert_eq!(store.notes_for_prompt(KEY).await.expect("prompt"), "");
    assert_eq!(store.profile(KEY).await.expect("profile"), None);
    assert!(entries(home.path()).is_empty(), "reads create no folder");
}

#[tokio::test]
async fn bad_repo_keys_make_no_folder() {
    let home = tempfile::tempdir().expect("a temp folder");
    let store = FileMemory::in_home(home.path());
    for key in BAD_REPO_KEYS {
        let _ = store.add_note(key, "x").await;
        let _ = store.save_profile(key, &node_profile()).await;
    }
    runner_testkit::memory::bad_repo_keys_are_refused(&store).await;
    assert!(
        entries(home.path()).is_empty(),
        "{:?}",
        entries(home.path())
    );
}

#[tokio::test]
async fn a_corrupt_profile_is_an_error_naming_the_file() {
    let home = tempfile::tempdir().expect("a temp folder");
    let store = FileMemory::in_home(home.path());
    let repo = home.path().join("memory").join(KEY);
    fs::create_dir_all(&repo).expect("repo folder");
    let cases = [
        "{ not json",
        r#"{"language":"cobol"}"#,
        r#"{"language":"node","needsInstall":false,"extra":1}"#,
        r#"{"language":"node","needsInstall":"yes"}"#,
    ];
    for text in cases {
        fs::write(repo.join("profile.json"), text).expect("write");
        let message = expect_error(store.profile(KEY).await, ErrorKind::CorruptRecord, text);
        assert!(
            message.contains("profile.json") && message.contains("delete it"),
            "{message}"
        );
    }
    // Saving replaces a corrupt profile.
    store
        .save_profile(KEY, &node_profile())
        .await
        .expect("save");
    assert_eq!(
        store.profile(KEY).await.expect("profile"),
        Some(node_profile())
    );
}

#[tokio::test]
async fn notes_that_are_not_text_are_reported_and_left_alone() {
    let home = tempfile::tempdir().expect("a temp folder");
    let store = FileMemory::in_home(home.path());
    let notes_file = home.path().join("memory").join(KEY).join("notes.md");
    fs::create_dir_all(notes_file.parent().expect("parent")).expect("folder");
    fs::write(&notes_file, b"## t\n\xff\xfe\n").expect("write");
    let message = expect_error(store.notes(KEY).await, ErrorKind::CorruptRecord, "notes");
    assert!(message.contains("notes.md"), "{message}");
    expect_error(
        store.add_note(KEY, "x").await,
        ErrorKind::CorruptRecord,
        "add_note",
    );
    assert_eq!(fs::read(&notes_file).expect("read"), b"## t\n\xff\xfe\n");
}

#[tokio::test]
async fn hand_written_notes_are_kept_and_added_to() {
    let home = tempfile::tempdir().expect("a temp folder");
    let store = FileMemory::in_home(home.path());
    let notes_file = home.path().join("memory").join(KEY).join("notes.md");
    fs::create_dir_all(notes_file.parent().expect("parent")).expect("folder");
    fs::write(&notes_file, "Tests need TZ=UTC.").expect("write");
    store.add_note(KEY, "added").await.expect("add");
    let notes = store.notes(KEY).await.expect("notes");
    assert!(notes.starts_with("Tests need TZ=UTC.\n\n## "), "{notes:?}");
    assert!(notes.ends_with("\nadded\n"), "{notes:?}");
}

#[tokio::test]
async fn a_crash_leftover_is_ignored_then_cleared() {
    let home = tempfile::tempdir().expect("a temp folder");
    let store = FileMemory::in_home(home.path());
    store.add_note(KEY, "before").await.expect("add");
    let repo = home.path().join("memory").join(KEY);
    fs::write(repo.join(".tmp-dead01.partial"), "## half a no").expect("leftover");
    let notes = store.notes(KEY).await.expect("notes");
    assert!(
        notes.ends_with("\nbefore\n") && !notes.contains("half"),
        "{notes:?}"
    );
    store.add_note(KEY, "after").await.expect("add");
    assert_eq!(entries(&repo), [".lock", "notes.md"]);
}

#[tokio::test]
async fn an_unwritable_memory_root_is_an_io_error_naming_it() {
    let home = tempfile::tempdir().expect("a temp folder");
    let root = home.path().join("memory");
    fs::write(&root, "a file where the folder should be").expect("write");
    let store = FileMemory::new(&root);
    let message = expect_error(store.add_note(KEY, "x").await, ErrorKind::Io, "add_note");
    assert!(message.contains(&root.display().to_string()), "{message}");
    expect_error(
        store.save_profile(KEY, &node_profile()).await,
        ErrorKind::Io,
        "save_profile",
    );
}

#[test]
fn writers_on_many_threads_with_their_own_stores_lose_nothing() {
    let home = tempfile::tempdir().expect("a temp folder");
    let (threads, each) = (8, 6);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let home = home.path();
            scope.spawn(move || {
                let store = FileMemory::in_home(home);
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .expect("a runtime");
                for i in 0..each {
                    let note = format!("thread {t} note {i}");
                    runtime.block_on(store.add_note(KEY, &note)).expect("add");
                }
            });
        }
    });
    let store = FileMemory::in_home(home.path());
    let notes = futures::executor::block_on(store.notes(KEY)).expect("notes");
    for t in 0..threads {
        for i in 0..each {
            assert!(
                notes.contains(&format!("\nthread {t} note {i}\n")),
                "{t}/{i} lost"
            );
        }
    }
}

#[test]
fn works_outside_a_tokio_runtime() {
    let home = tempfile::tempdir().expect("a temp folder");
    let store = FileMemory::in_home(home.path());
    futures::executor::block_on(store.add_note(KEY, "no runtime")).expect("add");
    let notes = futures::executor::block_on(store.notes(KEY)).expect("notes");
    assert!(notes.ends_with("\nno runtime\n"));
}
