//! Both stores pass runner-testkit's `MemoryStore` conformance suite.

use memory_fs::{FileMemory, InMemory};
use runner_testkit::memory;

#[tokio::test]
async fn in_memory_passes_the_suite() {
    memory::all(&InMemory::new()).await;
}

#[tokio::test]
async fn file_memory_passes_the_suite() {
    let home = tempfile::tempdir().expect("a temp folder");
    memory::all(&FileMemory::in_home(home.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_memory_keeps_every_note_of_60_concurrent_writers() {
    let home = tempfile::tempdir().expect("a temp folder");
    memory::concurrent_writers_lose_nothing(&FileMemory::in_home(home.path()), 60).await;
}
