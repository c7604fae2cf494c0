//! Turning gix and I/O failures into `runner_contract::Error`s whose messages say what to do.

use std::path::Path;

use runner_contract::{Error, ErrorKind};

/// A `Vcs` error: `what` failed, with gix's chain of causes after it.
pub(crate) fn gix(what: impl std::fmt::Display, err: &gix::Error) -> Error {
    Error::new(kind_of(err), format!("{what}: {}", chain(err)))
}

/// `DiskFull` when a cause in `err`'s chain is a full or read-only disk (the runner then names
/// the disk and what to do), else `Vcs`.
fn kind_of(err: &gix::Error) -> ErrorKind {
    let disk = [
        std::io::ErrorKind::StorageFull,
        std::io::ErrorKind::ReadOnlyFilesystem,
    ];
    if disk.iter().any(|kind| has_io_kind(err, *kind)) {
        ErrorKind::DiskFull
    } else {
        ErrorKind::Vcs
    }
}

/// A `Vcs` error with a message that already says what to do.
pub(crate) fn vcs(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Vcs, message)
}

/// An I/O failure on `path` while doing `what`.
pub(crate) fn io(what: &str, path: &Path, err: &std::io::Error) -> Error {
    let hint = match err.kind() {
        std::io::ErrorKind::PermissionDenied => {
            ": check that this folder and its parents are writable by you"
        }
        std::io::ErrorKind::NotADirectory | std::io::ErrorKind::AlreadyExists => {
            ": a file is in the way; move it, or set CODEHANDS_HOME to another folder"
        }
        _ => "",
    };
    let kind = match err.kind() {
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::ReadOnlyFilesystem => {
            ErrorKind::DiskFull
        }
        _ => ErrorKind::Vcs,
    };
    Error::new(kind, format!("{what} {}: {err}{hint}", path.display()))
}

/// The refusal for a path that cannot give a base commit, in the words every adapter's refusal carries (`runner_testkit::vcs`).
pub(crate) fn not_a_repo(path: &Path, why: &str) -> Error {
    Error::invalid_input(format!(
        "{} is not a git repo or has no commits yet ({why}): pass the top folder of a \
         git checkout that has at least one commit",
        path.display()
    ))
}

/// The messages of every error in gix's chain, outermost first, without repeats.
pub(crate) fn chain(err: &gix::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.iter_errors() {
        let text = cause.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p == &text) {
            parts.push(text);
        }
    }
    if parts.is_empty() {
        err.to_string()
    } else {
        parts.join(": ")
    }
}

/// True when the chain of `err` holds an I/O error of `kind`.
pub(crate) fn has_io_kind(err: &gix::Error, kind: std::io::ErrorKind) -> bool {
    err.iter_errors().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == kind)
    })
}

/// True when another process holds a lock file `err` needed: gix-lock classifies lock
/// contention as retryable, over the `AlreadyExists` of its lock file.
pub(crate) fn is_lock_held(err: &gix::Error) -> bool {
    err.classify().is_retryable() || has_io_kind(err, std::io::ErrorKind::AlreadyExists)
}

/// A lock held by another process ([`ErrorKind::Locked`]), with what to do.
pub(crate) fn locked(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Locked, message)
}
