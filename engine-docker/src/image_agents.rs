//! What the agents need in the remote box's image on top of `image.rs`'s root: a shell (this
//! machine's `bash` with the libraries it links, at `/bin/bash` and `/bin/sh`: Claude Code's
//! Bash tool and Codex's commands run through it) and programs that must stay inside their
//! install folder (Codex finds its bundled `bwrap` and `rg` next to its binary: CRATES.md), each
//! folder at `/opt/<name>/` with its program linked into `/usr/local/bin/`. Built as a layer on
//! an image (`docker build -`), by `cargo xtask images` and the tests.

use std::path::Path;

/// A program kept inside its install folder.
#[derive(Debug, Clone, Copy)]
pub struct KeptWhole<'a> {
    /// The program (`…/codex_cli_bin/bin/codex`).
    pub program: &'a Path,
    /// How many folders up from it the install starts (Codex: 2, `codex_cli_bin/`).
    pub levels_up: usize,
}

/// Where this machine's shell is.
const SHELL: &str = "/usr/bin/bash";

/// A build context (a tar with `Dockerfile` and `root/`) for an image `FROM base` with the
/// shell and `whole` in it.
pub fn context_tar(base: &str, whole: &[KeptWhole<'_>]) -> Result<Vec<u8>, String> {
    let mut builder = tar::Builder::new(Vec::new());
    let dockerfile = format!("FROM {base}\nCOPY root/ /\n");
    let file = tar::EntryType::Regular;
    crate::image::append(
        &mut builder,
        "Dockerfile",
        dockerfile.as_bytes(),
        0o644,
        file,
    )?;
    let shell = Path::new(SHELL);
    let bytes = std::fs::read(shell).map_err(|e| format!("cannot read {SHELL}: {e}"))?;
    crate::image::append(&mut builder, "root/bin/bash", &bytes, 0o755, file)?;
    link(&mut builder, "root/bin/sh", "bash")?;
    link(&mut builder, "root/usr/bin/bash", "/bin/bash")?;
    for library in crate::image::libraries(shell)? {
        let bytes = std::fs::read(&library)
            .map_err(|e| format!("cannot read {}: {e}", library.display()))?;
        let name = format!("root{}", library.display());
        crate::image::append(&mut builder, &name, &bytes, 0o755, file)?;
    }
    for kept in whole {
        let folder = (0..kept.levels_up)
            .try_fold(kept.program, |p, _| p.parent())
            .filter(|f| f.is_dir())
            .ok_or_else(|| format!("{} has no install folder", kept.program.display()))?;
        let name = kept
            .program
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| format!("{} has no name", kept.program.display()))?;
        let inside = kept
            .program
            .strip_prefix(folder)
            .map_err(|e| e.to_string())?;
        builder
            .append_dir_all(format!("root/opt/{name}"), folder)
            .map_err(|e| format!("cannot pack {}: {e}", folder.display()))?;
        let target = format!("/opt/{name}/{}", inside.display());
        link(&mut builder, &format!("root/usr/local/bin/{name}"), &target)?;
    }
    builder.into_inner().map_err(|e| e.to_string())
}

fn link(builder: &mut tar::Builder<Vec<u8>>, name: &str, target: &str) -> Result<(), String> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Symlink);
    header.set_size(0);
    header.set_mode(0o777);
    header.set_mtime(0);
    builder
        .append_link(&mut header, name, target)
        .map_err(|e| format!("cannot pack {name}: {e}"))
}

/// Builds `tag` from [`context_tar`] with the engine's CLI (`docker build -`).
pub fn build(tag: &str, base: &str, whole: &[KeptWhole<'_>]) -> Result<(), String> {
    crate::image::build_context(tag, &context_tar(base, whole)?)
}
