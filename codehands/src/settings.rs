//! The person's settings: what a session may have beyond the defaults, from their own config
//! file and from the repository's settings file as the checkout's HEAD commit holds it.
//!
//! ```toml
//! [box]
//! read = ["~/.cache/ms-playwright", "/opt/android-sdk"]   # bound read-only in the box
//! image = "registry.example.com/team/dev:3"   # a remote box's image (docs/remote-box.md)
//!
//! [agent]
//! allow = ["Bash(make lint:*)"]    # tool rules, Claude Code's syntax
//! deny = ["Bash(curl:*)"]
//! ```
//!
//! The person's file is `$CODEHANDS_HOME/config.toml`, else `$XDG_CONFIG_HOME/codehands/
//! config.toml` (`~/.config/codehands/config.toml`). The repository's is `.codehands.toml` at
//! its top, read from the HEAD commit of the person's checkout, never from a worktree: the
//! agent writes its worktree, and a file it wrote there must not widen its own box. Both are
//! strict: an unknown key, a wrong type, a path that is relative, holds `..`, is the home or
//! above it, or is one of the places secrets live (`~/.ssh`, `~/.gnupg`, keyrings …), and a
//! tool rule that could smuggle in another (a comma, a parenthesis inside, a control
//! character) are refused with the file, the line and what to do.

use std::path::{Component, Path, PathBuf};

use runner_contract::{Allowances, Error, Result};
use serde::Deserialize;
use toml::Spanned;

/// The repository's settings file, at the top of its tree.
pub const REPO_FILE: &str = ".codehands.toml";

/// The largest settings file read, in bytes.
const MAX_BYTES: u64 = 64 * 1024;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default, rename = "box")]
    boxed: BoxTable,
    #[serde(default)]
    agent: AgentTable,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct BoxTable {
    #[serde(default)]
    read: Vec<Spanned<String>>,
    #[serde(default)]
    image: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentTable {
    #[serde(default)]
    allow: Vec<Spanned<String>>,
    #[serde(default)]
    deny: Vec<Spanned<String>>,
}

/// Where the settings are read from, and the folders they are checked against.
#[derive(Debug, Clone)]
pub struct SettingsFiles {
    /// The person's own file, when they have one.
    pub user_file: Option<PathBuf>,
    /// The person's home (`~` in paths).
    pub home: Option<PathBuf>,
    /// codehands' home, never read into a box.
    pub codehands_home: PathBuf,
}

impl SettingsFiles {
    /// The usual places, from the caller's environment (`HOME`, `XDG_CONFIG_HOME`).
    pub fn new(codehands_home: &Path, env: &[(String, String)]) -> Self {
        let var = |name: &str| {
            env.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| PathBuf::from(v))
                .filter(|p| p.is_absolute())
        };
        let home = var("HOME");
        let xdg = var("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
        let user_file = [
            Some(codehands_home.join("config.toml")),
            xdg.map(|x| x.join("codehands/config.toml")),
        ]
        .into_iter()
        .flatten()
        .find(|p| p.is_file());
        Self {
            user_file,
            home,
            codehands_home: codehands_home.to_owned(),
        }
    }

    /// What the person's file and `repo`'s file at HEAD allow together.
    pub fn load(&self, repo: &Path) -> Result<Allowances> {
        let mut allowances = Allowances::default();
        if let Some(file) = &self.user_file {
            let bytes = read_capped(file)?;
            allowances = self.parse(&bytes, &file.display().to_string())?;
        }
        if let Some(bytes) = repo_file(repo)? {
            let name = format!("{REPO_FILE} (at HEAD in {})", repo.display());
            allowances = allowances.merged(self.parse(&bytes, &name)?);
        }
        Ok(allowances)
    }

    /// Reads one settings file's bytes; `name` says which in errors.
    pub fn parse(&self, bytes: &[u8], name: &str) -> Result<Allowances> {
        let text = std::str::from_utf8(bytes).map_err(|_| {
            Error::invalid_input(format!("{name} is not UTF-8 text: save it as UTF-8"))
        })?;
        let file: File = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            Error::invalid_input(format!(
                "{name}{}: {}; see README.md, \"Settings\"",
                line.map(|l| format!(" line {l}")).unwrap_or_default(),
                e.message()
            ))
        })?;
        let at =
            |span: std::ops::Range<usize>| format!("{name} line {}", line_of(text, span.start));
        let mut allowances = Allowances::default();
        for entry in &file.boxed.read {
            let path = self.read_path(entry.get_ref()).map_err(|why| {
                Error::invalid_input(format!("{}: [box] read {why}", at(entry.span())))
            })?;
            allowances.box_read.push(path);
        }
        if let Some(image) = &file.boxed.image {
            runner_contract::allowances::check_image_name(image.get_ref()).map_err(|why| {
                Error::invalid_input(format!("{}: [box] image {why}", at(image.span())))
            })?;
            allowances.box_image = Some(image.get_ref().clone());
        }
        for (key, rules, into) in [
            ("allow", &file.agent.allow, &mut allowances.agent_allow),
            ("deny", &file.agent.deny, &mut allowances.agent_deny),
        ] {
            for rule in rules {
                check_rule(rule.get_ref()).map_err(|why| {
                    Error::invalid_input(format!("{}: [agent] {key} {why}", at(rule.span())))
                })?;
                into.push(rule.get_ref().clone());
            }
        }
        Ok(allowances)
    }

    /// A `[box] read` entry as an absolute path, or why not.
    fn read_path(&self, entry: &str) -> std::result::Result<PathBuf, String> {
        let path = match entry.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                let home = self.home.as_ref().ok_or_else(|| {
                    format!("{entry:?} starts with ~ but HOME is not set: write the full path")
                })?;
                home.join(rest.trim_start_matches('/'))
            }
            _ => PathBuf::from(entry),
        };
        let plain = path.is_absolute()
            && path
                .components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if !plain {
            return Err(format!(
                "{entry:?} is not an absolute path without `..`: write it like \"/opt/sdk\" or \"~/.cache/tool\""
            ));
        }
        if path == Path::new("/") {
            return Err(format!(
                "{entry:?} is the whole machine: name the folder the work needs"
            ));
        }
        if let Some(home) = &self.home {
            if home.starts_with(&path) {
                return Err(format!(
                    "{entry:?} holds your whole home: name the folder the work needs"
                ));
            }
            if let Some(secret) = runner_contract::secret_places::secret_in(home, &path) {
                return Err(format!(
                    "{entry:?} would bring {} into the box, where secrets live: never",
                    secret.display()
                ));
            }
        }
        if path.starts_with(&self.codehands_home) || self.codehands_home.starts_with(&path) {
            return Err(format!(
                "{entry:?} would bring codehands' own home ({}) into the box: never",
                self.codehands_home.display()
            ));
        }
        Ok(path)
    }
}

/// A tool rule as Claude Code writes one (`Bash`, `Bash(npm test:*)`, `mcp__srv__tool`), or
/// why not: nothing that could end the rule early and start another.
fn check_rule(rule: &str) -> std::result::Result<(), String> {
    let (tool, specifier) = match rule.split_once('(') {
        Some((tool, rest)) => (
            tool,
            Some(rest.strip_suffix(')').ok_or_else(|| {
                format!("{rule:?} opens a parenthesis it does not close at its end")
            })?),
        ),
        None => (rule, None),
    };
    let tool_ok = tool.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !tool_ok {
        return Err(format!(
            "{rule:?} does not start with a tool name (letters, digits, `_`): write it like \"Bash(cargo test:*)\""
        ));
    }
    if let Some(bad) = specifier
        .into_iter()
        .flat_map(str::chars)
        .find(|c| matches!(c, '(' | ')' | ',') || c.is_control())
    {
        return Err(format!(
            "{rule:?} holds {bad:?} inside its parentheses, which would let it name another rule: one rule per entry"
        ));
    }
    Ok(())
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// A file of at most [`MAX_BYTES`], never through a link.
fn read_capped(path: &Path) -> Result<Vec<u8>> {
    let bytes = runner_contract::private::read_no_follow(path)?.ok_or_else(|| {
        Error::invalid_input(format!(
            "{} is gone: it was there a moment ago",
            path.display()
        ))
    })?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(Error::invalid_input(format!(
            "{} is {} bytes, more than the {MAX_BYTES} a settings file may hold: shorten it",
            path.display(),
            bytes.len()
        )));
    }
    Ok(bytes)
}

/// The repository's settings file at the checkout's HEAD, when the build reads git.
#[cfg(feature = "git")]
fn repo_file(repo: &Path) -> Result<Option<Vec<u8>>> {
    vcs_git::file_at_head(repo, REPO_FILE, MAX_BYTES)
}

/// Without git in the build, no repository file is read.
#[cfg(not(feature = "git"))]
fn repo_file(_repo: &Path) -> Result<Option<Vec<u8>>> {
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(home: &Path) -> SettingsFiles {
        SettingsFiles {
            user_file: None,
            home: Some(home.to_owned()),
            codehands_home: home.join(".codehands"),
        }
    }

    #[test]
    fn a_file_gives_folders_and_rules() {
        let f = files(Path::new("/home/me"));
        let got = f
            .parse(
                br#"
[box]
read = ["~/.cache/ms-playwright", "/opt/sdk"]
image = "registry.example.com/team/dev:3"
[agent]
allow = ["Bash(make lint:*)", "Read"]
deny = ["Bash(curl:*)"]
"#,
                "config.toml",
            )
            .unwrap();
        assert_eq!(
            got.box_read,
            [
                PathBuf::from("/home/me/.cache/ms-playwright"),
                PathBuf::from("/opt/sdk")
            ]
        );
        assert_eq!(got.agent_allow, ["Bash(make lint:*)", "Read"]);
        assert_eq!(got.agent_deny, ["Bash(curl:*)"]);
        assert_eq!(
            got.box_image.as_deref(),
            Some("registry.example.com/team/dev:3")
        );
    }

    #[test]
    fn bad_entries_are_refused_with_the_file_and_line() {
        let f = files(Path::new("/home/me"));
        for (text, words) in [
            ("[box]\nwrite = [\"/x\"]\n", "line 2"),
            ("[boxes]\n", "unknown field"),
            ("[box]\nread = \"/x\"\n", "line 2"),
            ("[box]\nimage = \"--privileged\"\n", "not an image name"),
            ("[box]\nimage = \"a b\"\n", "not an image name"),
            ("[box]\nread = [\n\"relative/x\"]\n", "line 3"),
            ("[box]\nread = [\"/opt/../etc\"]\n", "without `..`"),
            ("[box]\nread = [\"~\"]\n", "whole home"),
            ("[box]\nread = [\"/home\"]\n", "whole home"),
            ("[box]\nread = [\"/\"]\n", "whole machine"),
            ("[box]\nread = [\"~/.ssh\"]\n", "secrets"),
            ("[box]\nread = [\"~/.local/share\"]\n", "secrets"),
            (
                "[box]\nread = [\"~/.codehands/runs\"]\n",
                "codehands' own home",
            ),
            (
                "[agent]\nallow = [\"Bash(ls),Bash(curl:*)\"]\n",
                "one rule per entry",
            ),
            ("[agent]\nallow = [\"Bash(ls:*\"]\n", "does not close"),
            ("[agent]\ndeny = [\"Bash(a\\nb)\"]\n", "one rule per entry"),
            ("[agent]\nallow = [\"1Bash\"]\n", "tool name"),
            ("[agent]\nallow = [\"\"]\n", "tool name"),
        ] {
            let err = f
                .parse(text.as_bytes(), "config.toml")
                .unwrap_err()
                .to_string();
            assert!(err.contains("config.toml"), "{text}: {err}");
            assert!(err.contains(words), "{text}: {err}");
        }
    }

    #[cfg(feature = "git")]
    #[test]
    fn the_repo_file_is_read_at_head_never_from_the_working_copy() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .current_dir(&repo)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
        };
        git(&["init", "-q", "-b", "main"]);
        std::fs::write(
            repo.join(REPO_FILE),
            "[agent]\nallow = [\"Bash(make:*)\"]\n",
        )
        .unwrap();
        git(&["add", "."]);
        git(&["commit", "-q", "-m", "settings"]);
        std::fs::write(repo.join(REPO_FILE), "[agent]\nallow = [\"Bash\"]\n").unwrap();
        let user = dir.path().join("config.toml");
        std::fs::write(&user, "[agent]\ndeny = [\"Bash(curl:*)\"]\n").unwrap();
        let f = SettingsFiles {
            user_file: Some(user),
            ..files(dir.path())
        };
        let got = f.load(&repo).unwrap();
        assert_eq!(got.agent_allow, ["Bash(make:*)"]);
        assert_eq!(got.agent_deny, ["Bash(curl:*)"]);
    }

    #[test]
    fn the_user_file_is_found_in_the_home_then_the_xdg_folder() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let codehands = home.join(".codehands");
        std::fs::create_dir_all(home.join(".config/codehands")).unwrap();
        std::fs::create_dir_all(&codehands).unwrap();
        let env = vec![("HOME".to_owned(), home.display().to_string())];
        assert_eq!(SettingsFiles::new(&codehands, &env).user_file, None);
        std::fs::write(home.join(".config/codehands/config.toml"), "").unwrap();
        assert_eq!(
            SettingsFiles::new(&codehands, &env).user_file,
            Some(home.join(".config/codehands/config.toml"))
        );
        std::fs::write(codehands.join("config.toml"), "").unwrap();
        assert_eq!(
            SettingsFiles::new(&codehands, &env).user_file,
            Some(codehands.join("config.toml"))
        );
    }
}
