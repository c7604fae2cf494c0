//! What went wrong moving a tree, said so a person can act on it.

use std::path::PathBuf;

/// Why a tree could not be packed, or a result was refused (nothing was applied).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransferError {
    /// A path names something outside the tree (`..`, absolute, or under `.git`).
    #[error("the result names {0:?}, which is outside the run's tree: refused, nothing applied")]
    OutsideTree(PathBuf),
    /// A link points outside the tree, or through a chain of links that loops.
    #[error("the result's link {path:?} -> {target:?} {why}: refused, nothing applied")]
    BadLink {
        /// The link.
        path: PathBuf,
        /// What it points at.
        target: PathBuf,
        /// "leaves the tree" or "loops".
        why: &'static str,
    },
    /// A device, fifo, hard link or other entry a source tree has no use for.
    #[error(
        "the result holds {path:?}, a {kind} entry: only files, folders and links are taken; refused, nothing applied"
    )]
    Special {
        /// The entry.
        path: PathBuf,
        /// Its tar type.
        kind: String,
    },
    /// More bytes or entries than the caps allow.
    #[error(
        "the {what} is over its cap ({limit}): refused, nothing applied; raise the cap if the tree is really that big"
    )]
    TooBig {
        /// "result's size", "result's entry count" …
        what: &'static str,
        /// The cap.
        limit: u64,
    },
    /// A bundle naming refs other than the run's own.
    #[error("the result's bundle holds {found:?}, not only {expected}: refused, nothing applied")]
    BundleRefs {
        /// The ref the run asked for.
        expected: String,
        /// The refs the bundle holds.
        found: Vec<String>,
    },
    /// The tar itself is malformed.
    #[error("the result is not a readable tar: {0}; nothing applied")]
    Malformed(String),
    /// Reading or writing on this machine failed.
    #[error("{what} {path:?}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl TransferError {
    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            what,
            path: path.into(),
            source,
        }
    }
}
