//! An implementation of `runner_contract::MemoryStore` for repo memory kept as files: per-repo
//! notes the agent gets as context, and the repo profile the sandbox tests by.
//!
//! - [`FileMemory`]: `<memory root>/<repoKey>/{notes.md,profile.json}`, where the memory
//!   root is `$CODEHANDS_HOME/memory` ([`FileMemory::in_home`]) or any folder
//!   ([`FileMemory::new`]).
//! - [`InMemory`]: the same behaviour in a map, for tests and the fake runner.
//! - The pure parts, usable on their own: how a note is written ([`format_note`]) and built
//!   from a run ([`run_note`]), trimmed ([`trim_notes`]) and capped for the prompt
//!   ([`notes_for_prompt`]), what a repo is ([`detect_repo_profile`]), and the repo key
//!   check ([`validate_repo_key`]).
//!
//! Repo keys name folders, so every method refuses a key that is not 12 lowercase hex
//! characters with `ErrorKind::InvalidInput` before any path is built.

mod file_store;
mod in_memory;
mod key;
mod lock;
mod notes;
mod profile;

pub use file_store::FileMemory;
pub use in_memory::InMemory;
pub use key::{REPO_KEY_LEN, validate_repo_key};
pub use notes::{
    MAX_NOTE_CHARS, MAX_NOTE_LINES, PROMPT_CAP_CHARS, format_note, notes_for_prompt, run_note,
    set_outcome, trim_notes,
};
pub use profile::{MAX_FILE_BYTES, detect_repo_profile};
