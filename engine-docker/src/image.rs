//! The remote box's image: `FROM scratch` with `codehands` (the box's init, its egress proxy
//! and the fake agent), the agent programs given (Claude Code), the C libraries each links, the
//! system's CA certificates (an agent's TLS to its provider) and the folders a read-only root
//! needs. No registry is needed:
//! `docker build -` takes [`context_tar`] on stdin (`cargo xtask images`, and the tests, which
//! add the binary under test on top).

use std::path::{Path, PathBuf};

use runner_process::tool::Tool;

/// The Dockerfile of the context.
const DOCKERFILE: &str = "FROM scratch\nCOPY root/ /\nENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nENTRYPOINT []\n";

/// Where the CA certificates are, on Debian and in the image.
const CA_CERTIFICATES: &str = "/etc/ssl/certs/ca-certificates.crt";

/// A build context (a tar with `Dockerfile` and `root/`) for an image holding `codehands` and
/// each of `programs` under `/usr/local/bin/` by their names, and every shared library `ldd`
/// names for them at its own path.
pub fn context_tar(codehands: &Path, programs: &[&Path]) -> Result<Vec<u8>, String> {
    let mut builder = tar::Builder::new(Vec::new());
    append(
        &mut builder,
        "Dockerfile",
        DOCKERFILE.as_bytes(),
        0o644,
        tar::EntryType::Regular,
    )?;
    let read = |path: &Path| {
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let mut libraries_needed = std::collections::BTreeSet::new();
    for program in std::iter::once(&codehands).chain(programs) {
        let name = program
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| format!("{} has no file name", program.display()))?;
        append(
            &mut builder,
            &format!("root/usr/local/bin/{name}"),
            &read(program)?,
            0o755,
            tar::EntryType::Regular,
        )?;
        libraries_needed.extend(libraries(program)?);
    }
    for library in libraries_needed {
        let name = format!("root{}", library.display());
        append(
            &mut builder,
            &name,
            &read(&library)?,
            0o755,
            tar::EntryType::Regular,
        )?;
    }
    if let Ok(certificates) = std::fs::read(CA_CERTIFICATES) {
        append(
            &mut builder,
            &format!("root{CA_CERTIFICATES}"),
            &certificates,
            0o644,
            tar::EntryType::Regular,
        )?;
    }
    for (dir, mode) in [
        ("root/tmp/", 0o1777),
        ("root/box/", 0o755),
        ("root/run/secrets/", 0o755),
    ] {
        append(&mut builder, dir, &[], mode, tar::EntryType::Directory)?;
    }
    builder.into_inner().map_err(|e| e.to_string())
}

/// Adds `data` as `name` (a file or folder of `mode`) to `builder`.
pub(crate) fn append(
    builder: &mut tar::Builder<Vec<u8>>,
    name: &str,
    data: &[u8],
    mode: u32,
    kind: tar::EntryType,
) -> Result<(), String> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_size(data.len() as u64);
    header.set_mode(mode);
    header.set_mtime(0);
    builder
        .append_data(&mut header, name, data)
        .map_err(|e| format!("cannot pack {name}: {e}"))
}

/// The shared libraries `ldd` lists for `program` (with the loader).
pub(crate) fn libraries(program: &Path) -> Result<Vec<PathBuf>, String> {
    let out = Tool::new("ldd")
        .arg(program)
        .run()
        .map_err(|e| format!("cannot list the libraries of {}: {e}", program.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("not a dynamic executable") || text.contains("statically linked") {
        return Ok(Vec::new());
    }
    Ok(text
        .lines()
        .filter_map(|line| {
            let path = match line.split_once("=>") {
                Some((_, rest)) => rest.split_whitespace().next()?,
                None => line.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect())
}

/// Builds `tag` from [`context_tar`] with the engine's CLI (`docker build -`).
pub fn build(tag: &str, codehands: &Path, programs: &[&Path]) -> Result<(), String> {
    build_context(tag, &context_tar(codehands, programs)?)
}

/// Builds `tag` from a build context packed as a tar, with the engine's CLI (`docker build -`).
pub(crate) fn build_context(tag: &str, context: &[u8]) -> Result<(), String> {
    let out = Tool::new("docker")
        .args(["build", "--quiet", "--tag", tag, "-"])
        .input(context)
        .run()
        .map_err(|e| format!("docker build: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "docker build of {tag} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
