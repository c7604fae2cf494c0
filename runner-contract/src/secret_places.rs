//! The places of a home where secrets live: never read into an agent's box, whatever a
//! setting or a toolchain's layout would bring in (the settings refuse them, the box's
//! toolchain discovery skips them).

use std::path::Path;

/// Files and folders of a home (relative to it) that hold secrets or a person's history.
pub const SECRET_PLACES: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".docker",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".password-store",
    ".local/share/keyrings",
    ".pki",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".npmrc",
    ".pypirc",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".lesshst",
];

/// The secret place of `home` that `path` is in or holds, if any.
pub fn secret_in(home: &Path, path: &Path) -> Option<std::path::PathBuf> {
    SECRET_PLACES
        .iter()
        .map(|s| home.join(s))
        .find(|s| path.starts_with(s) || s.starts_with(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_in_or_above_a_secret_place_is_one() {
        let home = Path::new("/home/me");
        assert!(secret_in(home, Path::new("/home/me/.ssh/id_rsa")).is_some());
        assert!(secret_in(home, Path::new("/home/me/.local/share")).is_some());
        assert!(secret_in(home, Path::new("/home/me/.cargo/credentials.toml")).is_some());
        assert!(secret_in(home, Path::new("/home/me/.cargo/registry")).is_none());
        assert!(secret_in(home, Path::new("/home/me/.local/bin")).is_none());
    }
}
