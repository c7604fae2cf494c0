//! What of the host the agent's program needs in its box: the program's real file, the
//! interpreters its script names (a chain of absolute `#!` lines), and each one's own
//! package folder, never a folder many installs share (`~/.local`, `~/.cargo`,
//! `~/.npm-global`, the home).
//!
//! A file's own package folder, found from the file as named and from its real file:
//! - a venv's root, the folder above `bin/` that holds `pyvenv.cfg` (its Python is a link
//!   out of it, so the venv is found from the name);
//! - an npm package's root, the nearest folder above the real file holding `package.json`,
//!   never past the folder that holds `node_modules`;
//! - a toolchain's own install, the folder above the real file's `bin/` when it is one
//!   version's folder (`~/.pyenv/versions/3.12.1`, never `~/.pyenv`).
//!
//! Nothing that is, holds or sits directly in a home is bound as a package folder, nor a
//! folder named like a shared install root ([`SHARED_ROOTS`]) or directly in one: a bare
//! binary in `~/.local/bin` or `~/.cargo/bin` brings its file and no folder.

use std::path::{Component, Path, PathBuf};

use runner_contract::{Error, ErrorKind, Result};

/// The names of folders that hold many installs (and often secrets beside them: keyrings
/// under `~/.local/share`, `~/.cargo/credentials.toml`): never bound whole, nor a folder
/// directly in one (`~/.local/share`, `~/.pyenv/versions`).
pub const SHARED_ROOTS: &[&str] = &[
    ".local",
    ".cargo",
    ".rustup",
    ".npm-global",
    ".npm",
    ".pyenv",
    ".nvm",
    ".asdf",
    ".volta",
    ".bun",
    ".deno",
    ".gem",
    ".cache",
    ".config",
    "go",
];

/// How many `#!` interpreters are followed (Linux runs at most four nested ones).
const MAX_INTERPRETERS: usize = 4;

/// The program's paths in the box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramBinds {
    /// The program's real file: what the box runs.
    pub real: PathBuf,
    /// Files and folders bound read-only at their own (real) paths: the real files of the
    /// program and its interpreters, and their package folders.
    pub binds: Vec<PathBuf>,
    /// The program and its interpreters as named, whose links the box makes again (a
    /// venv's `bin/python` → the Python it was made from).
    pub named: Vec<PathBuf>,
}

/// What running `program` (as the agent's invocation names it, a bare name looked up on
/// `path_var`) needs: see the module's documentation. `homes` are the caller's homes.
pub fn resolve(program: &Path, path_var: Option<&str>, homes: &[&Path]) -> Result<ProgramBinds> {
    let found = find(program, path_var)?;
    let homes = real_homes(homes);
    let mut binds = ProgramBinds {
        real: found.canonicalize().unwrap_or_else(|_| found.clone()),
        binds: Vec::new(),
        named: Vec::new(),
    };
    // The program, then the interpreter each one's `#!` line names, in turn.
    let mut next = Some(found);
    for _ in 0..=MAX_INTERPRETERS {
        let Some(named) = next.take() else {
            break;
        };
        let Ok(real) = named.canonicalize() else {
            break;
        };
        for path in std::iter::once(real.clone()).chain(package_dirs(&named, &real, &homes)) {
            if !binds.binds.contains(&path) {
                binds.binds.push(path);
            }
        }
        if !binds.named.contains(&named) {
            binds.named.push(named);
        }
        next = shebang(&real);
    }
    Ok(binds)
}

/// The homes and their real paths (a home reached through a link is the same home).
fn real_homes(homes: &[&Path]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for home in homes {
        for path in [home.to_path_buf(), home.canonicalize().unwrap_or_default()] {
            if path.is_absolute() && !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

/// The package folders of a file named `named` whose real file is `real` (real paths).
pub fn package_dirs(named: &Path, real: &Path, homes: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for path in [named, real] {
        if let Some(venv) = venv_root(path)
            && !is_shared_root(&venv, homes)
        {
            dirs.push(venv);
        }
    }
    dirs.extend(npm_root(real, homes));
    dirs.extend(own_install(real, homes));
    let mut real_dirs: Vec<PathBuf> = Vec::new();
    for dir in dirs.into_iter().filter_map(|d| d.canonicalize().ok()) {
        if !real_dirs.contains(&dir) && !is_shared_root(&dir, homes) {
            real_dirs.push(dir);
        }
    }
    real_dirs
}

/// The folder above `path`'s `bin/`, when it holds `pyvenv.cfg`.
fn venv_root(path: &Path) -> Option<PathBuf> {
    let root = above_bin(path)?;
    root.join("pyvenv.cfg").is_file().then_some(root)
}

/// The nearest folder above `real` holding `package.json`: never a shared root (the walk
/// stops there) and never past the folder that holds a `node_modules` the walk came out of.
fn npm_root(real: &Path, homes: &[PathBuf]) -> Option<PathBuf> {
    let mut dir = real.parent()?;
    loop {
        if is_shared_root(dir, homes) {
            return None;
        }
        if dir.join("package.json").is_file() {
            return Some(dir.to_owned());
        }
        let leaving_node_modules = dir.file_name().is_some_and(|n| n == "node_modules");
        dir = dir.parent()?;
        if leaving_node_modules {
            return (!is_shared_root(dir, homes) && dir.join("package.json").is_file())
                .then(|| dir.to_owned());
        }
    }
}

/// The folder above `real`'s `bin/` when it is one program's own install: not a shared
/// root, not directly in a home (`~/tools` may hold anything; `~/.pyenv/versions/3.12.1`,
/// `/opt/tool` are one install each).
fn own_install(real: &Path, homes: &[PathBuf]) -> Option<PathBuf> {
    let root = above_bin(real)?;
    let in_home = homes.iter().any(|h| root.parent() == Some(h.as_path()));
    (!in_home && !is_shared_root(&root, homes)).then_some(root)
}

/// The folder above `path`'s folder, when that folder is a `bin/`.
fn above_bin(path: &Path) -> Option<PathBuf> {
    let bin = path.parent()?;
    (bin.file_name()? == "bin").then(|| bin.parent().map(Path::to_owned))?
}

/// A folder never bound as a package folder: the root or a folder directly in it, a home
/// (or a folder directly in `/home`), a folder holding a home, a shared install root or a
/// folder directly in one.
pub fn is_shared_root(dir: &Path, homes: &[PathBuf]) -> bool {
    let Some(parent) = dir.parent() else {
        return true;
    };
    let named_shared = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| SHARED_ROOTS.contains(&n))
    };
    parent == Path::new("/")
        || parent == Path::new("/home")
        || homes.iter().any(|h| h.starts_with(dir))
        || named_shared(dir)
        || named_shared(parent)
        || dir.components().any(|c| c == Component::ParentDir)
}

/// The interpreter `program`'s `#!` line names, if absolute. For `#!/usr/bin/env NAME` that
/// is `env`: NAME is found in the box on its own PATH, among the folders the box has (a
/// NAME of the caller's home, a pyenv shim, would not run there: it needs all of `~/.pyenv`).
fn shebang(program: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let first = std::str::from_utf8(line).ok()?.split_whitespace().next()?;
    let path = PathBuf::from(first);
    path.is_absolute().then_some(path)
}

/// The agent's program as a path: a bare name is looked up on the agent's PATH.
pub fn find(program: &Path, path_var: Option<&str>) -> Result<PathBuf> {
    if program.components().count() > 1 || program.is_absolute() {
        return if program.is_absolute() {
            Ok(program.to_owned())
        } else {
            std::env::current_dir()
                .map(|d| d.join(program))
                .map_err(|e| Error::io("cannot read the current folder", &e))
        };
    }
    std::env::split_paths(path_var.unwrap_or_default())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| {
            Error::new(
                ErrorKind::AgentUnavailable,
                format!(
                    "the agent program {} is not on PATH: install it or name it by its full path",
                    program.display()
                ),
            )
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    /// A caller's home in a temp folder, and the binds of a program in it.
    struct Home {
        _dir: tempfile::TempDir,
        home: PathBuf,
    }

    impl Home {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let home = dir.path().canonicalize().unwrap().join("home");
            std::fs::create_dir_all(&home).unwrap();
            Self { _dir: dir, home }
        }

        fn at(&self, rel: &str) -> PathBuf {
            self.home.join(rel)
        }

        /// An executable file at `rel` holding `text`.
        fn file(&self, rel: &str, text: &str) -> PathBuf {
            let path = self.at(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path
        }

        fn link(&self, rel: &str, target: impl AsRef<Path>) -> PathBuf {
            let path = self.at(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            symlink(target, &path).unwrap();
            path
        }

        fn binds(&self, program: &Path, path_var: Option<&str>) -> ProgramBinds {
            resolve(program, path_var, &[&self.home]).unwrap()
        }

        /// No bind is a shared folder of the home: the home, `~/.local`, `~/.local/share`…
        fn assert_nothing_shared(&self, binds: &ProgramBinds) {
            for shared in [
                "",
                ".local",
                ".local/share",
                ".local/bin",
                ".cargo",
                ".cargo/bin",
                ".npm-global",
                ".npm-global/lib",
                ".pyenv",
                ".pyenv/versions",
                ".nvm",
            ] {
                let shared = self.at(shared);
                assert!(
                    !binds.binds.iter().any(|b| shared.starts_with(b)),
                    "{} is bound through {:?}",
                    shared.display(),
                    binds.binds
                );
            }
        }
    }

    const ELF: &str = "\x7fELF";

    #[test]
    fn a_link_in_dot_local_bin_brings_only_the_file_it_links_to() {
        let home = Home::new();
        let real = home.file(".local/share/x/versions/1.2/x", ELF);
        home.file(".local/share/keyrings/login.keyring", "secret");
        let named = home.link(".local/bin/x", "../share/x/versions/1.2/x");
        let binds = home.binds(&named, None);
        assert_eq!(binds.real, real);
        assert_eq!(binds.binds, vec![real]);
        assert_eq!(binds.named, vec![named]);
        home.assert_nothing_shared(&binds);
    }

    #[test]
    fn a_bare_binary_in_dot_cargo_bin_brings_only_itself() {
        let home = Home::new();
        let tool = home.file(".cargo/bin/tool", ELF);
        home.file(".cargo/credentials.toml", "token");
        let path = home.at(".cargo/bin").display().to_string();
        let binds = home.binds(Path::new("tool"), Some(&path));
        assert_eq!(binds.binds, vec![tool]);
        home.assert_nothing_shared(&binds);
    }

    #[test]
    fn a_venv_script_brings_the_venv_and_its_pythons_own_version_folder() {
        let home = Home::new();
        let python = home.file(".pyenv/versions/3.12.1/bin/python3.12", ELF);
        home.file(".pyenv/versions/3.12.1/lib/python3.12/os.py", "");
        home.file(".pyenv/version", "3.12.1");
        let venv = home.at(".venv");
        home.file(".venv/pyvenv.cfg", "home = x\n");
        home.link(".venv/bin/python", &python);
        let script = home.file(
            ".venv/bin/tool",
            &format!("#!{}/bin/python -u\nimport x\n", venv.display()),
        );
        let binds = home.binds(&script, None);
        assert_eq!(
            binds.binds,
            vec![
                script.clone(),
                venv.clone(),
                python.clone(),
                home.at(".pyenv/versions/3.12.1"),
            ]
        );
        assert_eq!(binds.named, vec![script, venv.join("bin/python")]);
        home.assert_nothing_shared(&binds);
    }

    #[test]
    fn an_npm_package_brings_its_root_not_the_npm_prefix() {
        let home = Home::new();
        let package = home.at(".npm-global/lib/node_modules/@scope/agent");
        home.file(
            ".npm-global/lib/node_modules/@scope/agent/package.json",
            "{}",
        );
        home.file(".npm-global/lib/node_modules/other/package.json", "{}");
        let cli = home.file(
            ".npm-global/lib/node_modules/@scope/agent/dist/cli.js",
            "#!/usr/bin/env node\n",
        );
        let named = home.link(
            ".npm-global/bin/agent",
            "../lib/node_modules/@scope/agent/dist/cli.js",
        );
        let path = home.at(".npm-global/bin").display().to_string();
        let binds = home.binds(Path::new("agent"), Some(&path));
        let env = Path::new("/usr/bin/env").canonicalize().unwrap();
        assert_eq!(binds.binds, vec![cli, package, env.clone()]);
        assert_eq!(binds.named, vec![named, "/usr/bin/env".into()]);
        home.assert_nothing_shared(&binds);
    }

    #[test]
    fn the_walk_for_package_json_stops_at_node_modules_parent_and_the_home() {
        let home = Home::new();
        home.file("package.json", "{}");
        home.file("work/package.json", "{}");
        let lone = home.file("work/inner/node_modules/pkg/lib/x.js", "");
        assert_eq!(home.binds(&lone, None).binds, vec![lone.clone()]);
        home.file("work/inner/package.json", "{}");
        assert_eq!(
            home.binds(&lone, None).binds,
            vec![lone, home.at("work/inner")],
            "node_modules' parent is the last folder looked at"
        );
        let shared = home.file(".local/share/x/x.js", "");
        assert_eq!(home.binds(&shared, None).binds, vec![shared]);
    }

    #[test]
    fn a_folder_above_bin_is_bound_only_when_it_is_one_install() {
        let home = Home::new();
        let in_home = home.file("tools/bin/x", ELF);
        assert_eq!(home.binds(&in_home, None).binds, vec![in_home]);
        let own = home.file(".local/share/y/bin/y", ELF);
        assert_eq!(
            home.binds(&own, None).binds,
            vec![own, home.at(".local/share/y")]
        );
        let venv_in_home = home.file("venv/bin/z", ELF);
        home.file("venv/pyvenv.cfg", "");
        assert_eq!(
            home.binds(&venv_in_home, None).binds,
            vec![venv_in_home, home.at("venv")],
            "a venv directly in the home is one install"
        );
    }

    #[test]
    fn shared_roots_are_never_package_folders() {
        let homes = vec![PathBuf::from("/home/me")];
        for shared in [
            "/",
            "/opt",
            "/home",
            "/home/me",
            "/home/other",
            "/home/other/.local",
            "/home/other/.local/share",
            "/srv/x/.cargo",
            "/home/me/.pyenv/versions",
        ] {
            assert!(is_shared_root(Path::new(shared), &homes), "{shared}");
        }
        for own in [
            "/opt/tool",
            "/home/me/.pyenv/versions/3.12.1",
            "/home/me/.local/share/x",
        ] {
            assert!(!is_shared_root(Path::new(own), &homes), "{own}");
        }
    }

    #[test]
    fn a_missing_program_on_path_says_how_to_fix_it() {
        let err = find(Path::new("no-such-agent"), Some("/nonexistent")).unwrap_err();
        assert!(err.to_string().contains("not on PATH"), "{err}");
    }
}
