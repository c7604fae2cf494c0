//! The person's image made into a box's, on the engine, before the box is made
//! (docs/remote-box.md, "The repo's own image"): a devcontainer's Dockerfile built from a
//! context packed from the worktree, then an image `FROM` it with codehands' own root (the
//! init, its loader and libraries, the agents of our image) copied under `plan::OWN_ROOT`.
//! Both go through the engine's build API with a tar context, so a remote engine builds them
//! too; each is tagged by a hash of what it is made of, and made once per engine.

use std::collections::HashMap;

use bollard::Docker;
use bollard::query_parameters::{BuildImageOptionsBuilder, CreateImageOptionsBuilder};
use futures::StreamExt;

use crate::plan::{OWN_ROOT, RemotePlan, UserImage};

/// The label of every image made here (`docker image prune --filter label=codehands.derived`).
pub const LABEL_DERIVED: &str = "codehands.derived";

/// Makes (or finds) the box image of `plan`'s user image and sets `plan.derived`; nothing
/// when the plan runs codehands' own image.
pub(crate) async fn prepare(docker: &Docker, plan: &mut RemotePlan) -> Result<(), String> {
    let Some(user) = plan.user_image.clone() else {
        return Ok(());
    };
    let base = match &user {
        UserImage::Named { name } => {
            present(docker, name).await?;
            name.clone()
        }
        UserImage::Build {
            context,
            dockerfile,
            args,
            target,
        } => devcontainer(docker, plan, context, dockerfile, args, target.as_deref()).await?,
    };
    let inspected = docker
        .inspect_image(&base)
        .await
        .map_err(|e| format!("the engine has no image {base}: {e}"))?;
    let path = inspected
        .config
        .and_then(|c| c.env)
        .unwrap_or_default()
        .iter()
        .find_map(|e| e.strip_prefix("PATH=").map(str::to_owned))
        .unwrap_or_default();
    let ours = docker.inspect_image(&plan.image).await.map_err(|e| {
        format!(
            "the engine has no {} to take codehands from: {e} (`cargo xtask images`)",
            plan.image
        )
    })?;
    let dockerfile = format!(
        "FROM {} AS codehands\nFROM {base}\nCOPY --from=codehands / {OWN_ROOT}/\nUSER 0:0\nENTRYPOINT []\n",
        plan.image
    );
    let key = hash(&[
        inspected.id.as_deref().unwrap_or(&base),
        ours.id.as_deref().unwrap_or(&plan.image),
        &dockerfile,
    ]);
    let tag = format!("codehands/box:{key}");
    if docker.inspect_image(&tag).await.is_err() {
        let context = tar_of(&[("Dockerfile", dockerfile.as_bytes())]);
        build(docker, &tag, context, "Dockerfile", &HashMap::new(), None)
            .await
            .map_err(|e| format!("adding codehands to the image {base}: {e}"))?;
    }
    plan.derived = Some((tag, path));
    Ok(())
}

/// The image `name` on the engine, pulled by it when it lacks it.
async fn present(docker: &Docker, name: &str) -> Result<(), String> {
    if docker.inspect_image(name).await.is_ok() {
        return Ok(());
    }
    let options = CreateImageOptionsBuilder::default()
        .from_image(name)
        .build();
    let mut pulled = docker.create_image(Some(options), None, None);
    while let Some(step) = pulled.next().await {
        step.map_err(|e| format!("the engine could not pull the image {name}: {e}"))?;
    }
    Ok(())
}

/// Builds the devcontainer's Dockerfile from its context (both relative to the worktree,
/// checked by `devcontainer::read`); the image's tag.
async fn devcontainer(
    docker: &Docker,
    plan: &RemotePlan,
    context: &str,
    dockerfile: &str,
    args: &std::collections::BTreeMap<String, String>,
    target: Option<&str>,
) -> Result<String, String> {
    let in_context = if context == "." {
        Some(dockerfile)
    } else {
        dockerfile
            .strip_prefix(context)
            .and_then(|rest| rest.strip_prefix('/'))
    };
    let in_context = in_context.ok_or_else(|| {
        format!(
            "{}: build.dockerfile ({dockerfile}) is outside build.context ({context}): put it inside",
            crate::devcontainer::FILE
        )
    })?;
    let tar = remote_transfer::pack_tree(
        &plan.worktree.join(context),
        &remote_transfer::Limits::default(),
    )
    .map_err(|e| format!("packing the devcontainer's build context: {e}"))?;
    // By what the context holds, not when its files were written: each session's worktree is
    // a fresh checkout, and the same devcontainer must find the same image.
    let contents = contents_of(&tar);
    let mut parts = vec![contents.as_slice(), in_context.as_bytes()];
    let listed: Vec<String> = args.iter().map(|(k, v)| format!("{k}={v}")).collect();
    parts.extend(listed.iter().map(String::as_bytes));
    parts.extend(target.map(str::as_bytes));
    let tag = format!("codehands/devcontainer:{}", hash_bytes(&parts));
    if docker.inspect_image(&tag).await.is_ok() {
        return Ok(tag);
    }
    eprintln!(
        "codehands: building the repo's {} image on the engine (once per change of it)",
        crate::devcontainer::FILE
    );
    let args: HashMap<String, String> = args.clone().into_iter().collect();
    build(docker, &tag, tar, in_context, &args, target)
        .await
        .map_err(|e| format!("building {}: {e}", crate::devcontainer::FILE))?;
    Ok(tag)
}

/// Builds `tag` from the tar `context` on the engine; the build's own words when it fails.
async fn build(
    docker: &Docker,
    tag: &str,
    context: Vec<u8>,
    dockerfile: &str,
    args: &HashMap<String, String>,
    target: Option<&str>,
) -> Result<(), String> {
    let labels = HashMap::from([(LABEL_DERIVED.to_owned(), "1".to_owned())]);
    let mut options = BuildImageOptionsBuilder::default()
        .dockerfile(dockerfile)
        .t(tag)
        .rm(true)
        .forcerm(true)
        .labels(&labels)
        .buildargs(args);
    if let Some(target) = target {
        options = options.target(target);
    }
    let mut steps = docker.build_image(
        options.build(),
        None,
        Some(bollard::body_full(context.into())),
    );
    let mut said = Vec::new();
    while let Some(step) = steps.next().await {
        let step = step.map_err(|e| last_lines(&said, &e.to_string()))?;
        if let Some(error) = step.error_detail.and_then(|d| d.message) {
            return Err(last_lines(&said, &error));
        }
        if let Some(stream) = step.stream {
            said.push(stream);
        }
    }
    Ok(())
}

/// `error` after the build's last lines.
fn last_lines(said: &[String], error: &str) -> String {
    let text: String = said.concat();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(8)..].join("\n");
    format!("{tail}\n{error}")
}

/// A tar of `(name, bytes)` files.
fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        let _ = builder.append_data(&mut header, name, *bytes);
    }
    builder.into_inner().unwrap_or_default()
}

/// What a context tar holds, without its times: each entry's path, kind, mode, link and bytes.
fn contents_of(tar: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    let mut archive = tar::Archive::new(tar);
    let Ok(entries) = archive.entries() else {
        return tar.to_vec();
    };
    for entry in entries {
        let Ok(mut entry) = entry else {
            return tar.to_vec();
        };
        let header = entry.header();
        let mut fields = vec![
            header.path_bytes().into_owned(),
            vec![header.entry_type().as_byte()],
            header.mode().unwrap_or(0).to_le_bytes().to_vec(),
            header
                .link_name_bytes()
                .map(|l| l.into_owned())
                .unwrap_or_default(),
        ];
        let mut data = Vec::new();
        if entry.read_to_end(&mut data).is_err() {
            return tar.to_vec();
        }
        fields.push(data);
        for field in fields {
            out.extend((field.len() as u64).to_le_bytes());
            out.extend(field);
        }
    }
    out
}

fn hash(parts: &[&str]) -> String {
    hash_bytes(&parts.iter().map(|p| p.as_bytes()).collect::<Vec<_>>())
}

/// The first 16 hex digits of the SHA-1 of `parts`, each after its length (a cache key:
/// what it names was made from exactly these).
fn hash_bytes(parts: &[&[u8]]) -> String {
    let mut sha = sha1_smol::Sha1::new();
    for part in parts {
        sha.update(&(part.len() as u64).to_le_bytes());
        sha.update(part);
    }
    sha.digest().to_string()[..16].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_is_known_by_what_it_holds_not_by_when_it_was_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Dockerfile"), "FROM x\n").unwrap();
        let limits = remote_transfer::Limits::default();
        let first = remote_transfer::pack_tree(dir.path(), &limits).unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 20);
        std::fs::File::options()
            .write(true)
            .open(dir.path().join("Dockerfile"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let touched = remote_transfer::pack_tree(dir.path(), &limits).unwrap();
        assert_ne!(first, touched, "the tar holds the time");
        assert_eq!(contents_of(&first), contents_of(&touched));
        std::fs::write(dir.path().join("Dockerfile"), "FROM y\n").unwrap();
        let changed = remote_transfer::pack_tree(dir.path(), &limits).unwrap();
        assert_ne!(contents_of(&first), contents_of(&changed));
    }
}
