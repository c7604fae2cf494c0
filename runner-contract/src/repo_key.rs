//! Repo keys: the 12 lower-case hex characters that name a repository's worktree and memory
//! folders. Like a [`crate::SessionId`], a key is parsed once, with one message, before it
//! becomes part of a path.

use std::fmt;

use crate::error::{Error, Result};

/// A checked repo key (`3f2a9c1e0b7d`): the first 12 hex characters of a SHA-1, as
/// `Vcs::repo_key` makes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RepoKey(String);

impl RepoKey {
    /// How long a repo key is.
    pub const LEN: usize = 12;

    /// Parses `text`, refusing anything but 12 lower-case hex characters (`../x`, `a/b`,
    /// upper case, the empty string …), so a key never climbs out of its folder.
    pub fn parse(text: &str) -> Result<Self> {
        let ok = text.len() == Self::LEN
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if ok {
            return Ok(Self(text.to_owned()));
        }
        let shown: String = text.chars().take(40).collect();
        Err(Error::invalid_input(format!(
            "repo key {shown:?} is not a repo key: pass the 12 lower-case hex characters that \
             `Vcs::repo_key` returns, like \"3f2a9c1e0b7d\""
        )))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RepoKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::RepoKey;

    #[test]
    fn only_twelve_lower_case_hex_characters_are_a_key() {
        assert_eq!(
            RepoKey::parse("3f2a9c1e0b7d").unwrap().as_str(),
            "3f2a9c1e0b7d"
        );
        for bad in [
            "",
            "../x",
            "3F2A9C1E0B7D",
            "3f2a9c1e0b7",
            "3f2a9c1e0b7d0",
            "a/b",
        ] {
            let e = RepoKey::parse(bad).unwrap_err();
            assert!(e.message().contains("is not a repo key"), "{bad}: {e}");
        }
    }
}
