//! The repo's `.devcontainer/devcontainer.json` (the file editors and Codespaces read), read as
//! data for the image of its remote box: its `image`, or its `build.dockerfile` with
//! `build.context`, `build.args` and `build.target` (docs/remote-box.md, "The repo's own image").
//!
//! The worktree is the agent's and the repo's, so the file is hostile ground: it is read with a
//! size cap, JSON with comments and nothing else; every path it names must stay inside the
//! worktree with no link on the way; and it never names a program that runs here. Its
//! Dockerfile is built by the engine, the box's side, from a context packed as the worktree is.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use crate::plan::UserImage;

/// Where the file is, relative to the worktree.
pub const FILE: &str = ".devcontainer/devcontainer.json";
/// The largest file read.
const MAX_BYTES: u64 = 64 * 1024;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    image: Option<String>,
    build: Option<Build>,
    /// The older top-level spelling of `build.dockerfile`.
    docker_file: Option<String>,
    /// The older top-level spelling of `build.context`.
    context: Option<String>,
    docker_compose_file: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Build {
    dockerfile: Option<String>,
    context: Option<String>,
    #[serde(default)]
    args: BTreeMap<String, String>,
    target: Option<String>,
}

/// The image `worktree`'s devcontainer asks for, `None` when it has no
/// `.devcontainer/devcontainer.json`, or why it cannot be used.
pub fn read(worktree: &Path) -> Result<Option<UserImage>, String> {
    let Some(kind) = kind_of(worktree, Path::new(FILE))? else {
        return Ok(None);
    };
    if !kind.is_file() {
        return Err(format!("{FILE} is not a file"));
    }
    let bytes = read_capped(&worktree.join(FILE))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| format!("{FILE} is not UTF-8 text"))?;
    let spec: Spec =
        jsonc_parser::parse_to_serde_value(text, &jsonc_parser::ParseOptions::default())
            .map_err(|e| format!("{FILE} is not JSON with comments: {e}"))?;
    if spec.docker_compose_file.is_some() {
        return Err(format!(
            "{FILE} uses dockerComposeFile, which a box does not run: name the service's image \
             with --image or [box] image"
        ));
    }
    let build = spec.build.unwrap_or_default();
    let dockerfile = build.dockerfile.or(spec.docker_file);
    let Some(dockerfile) = dockerfile else {
        return match spec.image {
            Some(image) => {
                runner_contract::allowances::check_image_name(&image)
                    .map_err(|why| format!("{FILE}: image {why}"))?;
                Ok(Some(UserImage::Named { name: image }))
            }
            None => Err(format!(
                "{FILE} names neither an image nor a build.dockerfile: name one, or pass --image"
            )),
        };
    };
    let context = build.context.or(spec.context).unwrap_or_else(|| ".".into());
    let context = inside(worktree, &context, true)?;
    let dockerfile = inside(worktree, &dockerfile, false)?;
    for (key, value) in &build.args {
        let plain = |s: &str| !s.is_empty() && !s.contains(['\0', '\n']);
        if !plain(key) || value.contains('\0') {
            return Err(format!(
                "{FILE}: build.args {key:?} is not a plain name and value"
            ));
        }
    }
    let target = build.target.filter(|t| !t.is_empty());
    if let Some(target) = &target
        && !target
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(format!(
            "{FILE}: build.target {target:?} is not a stage's name"
        ));
    }
    Ok(Some(UserImage::Build {
        context,
        dockerfile,
        args: build.args,
        target,
    }))
}

/// `path` (relative to `.devcontainer/`, as the file writes them) as a path relative to the
/// worktree, inside it and with no link on the way; a folder when `folder`, else a file.
fn inside(worktree: &Path, path: &str, folder: bool) -> Result<String, String> {
    let mut parts: Vec<String> = vec![".devcontainer".to_owned()];
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => parts.push(
                part.to_str()
                    .ok_or_else(|| format!("{FILE}: {path:?} is not UTF-8"))?
                    .to_owned(),
            ),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop().ok_or_else(|| {
                    format!("{FILE}: {path:?} leaves the repo: name a path inside it")
                })?;
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "{FILE}: {path:?} is absolute: name a path inside the repo"
                ));
            }
        }
    }
    let relative: PathBuf = parts.iter().collect();
    let kind = kind_of(worktree, &relative)?
        .ok_or_else(|| format!("{FILE}: {path:?} is not in the repo"))?;
    if folder != kind.is_dir() || (!folder && !kind.is_file()) {
        let what = if folder { "a folder" } else { "a file" };
        return Err(format!("{FILE}: {path:?} is not {what}"));
    }
    Ok(if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    })
}

/// The kind of `relative` under `worktree` without following a link: `None` when it is not
/// there; a link on the way (the file itself, or a folder above it) is refused.
fn kind_of(worktree: &Path, relative: &Path) -> Result<Option<std::fs::FileType>, String> {
    let mut at = worktree.to_owned();
    let mut kind = std::fs::symlink_metadata(&at)
        .map_err(|e| format!("cannot read {}: {e}", at.display()))?
        .file_type();
    for component in relative.components() {
        at.push(component);
        kind = match std::fs::symlink_metadata(&at) {
            Ok(meta) => meta.file_type(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", at.display())),
        };
        if kind.is_symlink() {
            return Err(format!(
                "{} is a link: the devcontainer is read from the repo's own files only",
                relative.display()
            ));
        }
    }
    Ok(Some(kind))
}

/// The file's bytes, refused past [`MAX_BYTES`] (read no further than that, and not through a
/// link, which [`kind_of`] refused already).
fn read_capped(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| format!("cannot read {FILE}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {FILE}: {e}"))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(format!(
            "{FILE} is larger than {MAX_BYTES} bytes, more than a devcontainer file holds"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(json: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".devcontainer")).unwrap();
        std::fs::write(dir.path().join(FILE), json).unwrap();
        dir
    }

    #[test]
    fn no_file_is_no_image() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), Ok(None));
    }

    #[test]
    fn an_image_or_a_build_with_comments_and_trailing_commas() {
        let dir = repo("// the team's box\n{ \"image\": \"node:22\", /* pinned */ }\n");
        assert_eq!(
            read(dir.path()),
            Ok(Some(UserImage::Named {
                name: "node:22".into()
            }))
        );
        let dir = repo(
            "{\n  \"build\": {\n    \"dockerfile\": \"Dockerfile\",\n    \"context\": \"..\",\n    \
             \"args\": { \"V\": \"1\" },\n  },\n  \"image\": \"ignored\",\n  \"customizations\": {},\n}\n",
        );
        std::fs::write(dir.path().join(".devcontainer/Dockerfile"), "FROM x\n").unwrap();
        assert_eq!(
            read(dir.path()),
            Ok(Some(UserImage::Build {
                context: ".".into(),
                dockerfile: ".devcontainer/Dockerfile".into(),
                args: BTreeMap::from([("V".into(), "1".into())]),
                target: None,
            }))
        );
    }

    #[test]
    fn paths_that_leave_the_repo_or_pass_a_link_are_refused() {
        for (json, words) in [
            (
                r#"{"build": {"dockerfile": "../../etc/passwd"}}"#,
                "leaves the repo",
            ),
            (r#"{"build": {"dockerfile": "/etc/passwd"}}"#, "absolute"),
            (
                r#"{"build": {"dockerfile": "Dockerfile", "context": "../.."}}"#,
                "leaves the repo",
            ),
            (r#"{"build": {"dockerfile": "link"}}"#, "is a link"),
            (r#"{"build": {"dockerfile": "missing"}}"#, "not in the repo"),
            (r#"{"build": {"dockerfile": "."}}"#, "not a file"),
            (r#"{"dockerComposeFile": "c.yml"}"#, "dockerComposeFile"),
            (r#"{"image": "--privileged"}"#, "not an image name"),
            (r#"{"name": "x"}"#, "neither"),
            ("{ not json", "not JSON"),
        ] {
            let dir = repo(json);
            std::os::unix::fs::symlink("/etc/passwd", dir.path().join(".devcontainer/link"))
                .unwrap();
            let got = read(dir.path()).unwrap_err();
            assert!(got.contains(words), "{json}: {got}");
        }
        // The folder itself a link out of the repo.
        let outside = repo(r#"{"image": "node:22"}"#);
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(
            outside.path().join(".devcontainer"),
            dir.path().join(".devcontainer"),
        )
        .unwrap();
        assert!(read(dir.path()).unwrap_err().contains("is a link"));
    }

    #[test]
    fn a_file_past_the_cap_is_refused() {
        let dir = repo(&format!("{{\"image\": \"a\"}}{}", " ".repeat(70_000)));
        assert!(read(dir.path()).unwrap_err().contains("larger than"));
    }
}
