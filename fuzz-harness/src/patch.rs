//! The `patch` target: vcs-git's patch writer over random files, checked against the `git`
//! program. The input decodes into a few file changes; their patch, as the worktree diff
//! writes it, must pass `git apply --check` on a repository holding the base files, and
//! applying it must give exactly the new files.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use vcs_git::FileVersion;

/// A regular file.
pub const MODE_FILE: u16 = 0o100644;
/// An executable file.
pub const MODE_EXEC: u16 = 0o100755;
/// A symlink: its bytes are its target.
pub const MODE_LINK: u16 = 0o120000;

/// The modes an input picks from, by two bits (a plain file twice, as it is the common case).
const MODES: [u16; 4] = [MODE_FILE, MODE_EXEC, MODE_LINK, MODE_FILE];

/// At most this many changes per input: more files add git work, not new shapes.
const MAX_CHANGES: usize = 4;

/// One side of a change, decoded and sanitised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// A valid relative path (no empty, `.`, `..` or `.git` part), odd characters kept.
    pub path: String,
    /// [`MODE_FILE`], [`MODE_EXEC`] or [`MODE_LINK`].
    pub mode: u16,
    /// The contents (a symlink's target: never empty, no NUL).
    pub data: Vec<u8>,
}

/// One file's change: `old` is absent for an addition, `new` for a deletion, and different
/// paths are a rename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The file in the base.
    pub old: Option<File>,
    /// The file after the change.
    pub new: Option<File>,
}

/// What kind of change an input record asks for (the low two bits of its first byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A new file.
    Add = 0,
    /// A deleted file.
    Delete = 1,
    /// The same path, new contents and maybe a new mode.
    Modify = 2,
    /// A new path, and maybe new contents and mode.
    Rename = 3,
}

/// Bit 6 of a record's first byte: contents are mapped onto a text alphabet (lines, CRLF,
/// lines that look like diff syntax), so most inputs are text rather than binary.
pub const TEXTY: u8 = 0x40;
/// Bit 7: the new contents are the old ones with one span replaced (so hunks have context),
/// rather than given whole.
pub const SPLICE: u8 = 0x80;

/// The text alphabet of [`TEXTY`] contents: each byte picks one of these.
const ALPHABET: &[&str] = &[
    "a",
    "b",
    "c",
    "\n",
    "\n",
    "\n",
    "\r\n",
    " ",
    "\t",
    "é",
    "line\n",
    "+",
    "-",
    "@@ -1 +1 @@\n",
    "\\ No newline at end of file\n",
    "--- a/x\n",
    "+++ b/x\n",
    "diff --git a/x b/x\n",
    "\r",
    "  \n",
    "\u{2028}",
    "\u{feff}",
];

/// Writes one record of the input format (the old and new modes, then the flags), so seeds are built by the same rules the fuzzer's
/// inputs are read by. `flags` is [`TEXTY`] and/or [`SPLICE`]; with [`SPLICE`], `new` is
/// `[start, end]` (fractions of 255 of the old length) followed by the inserted bytes.
pub fn encode(
    out: &mut Vec<u8>,
    kind: Kind,
    (old_mode, new_mode): (u16, u16),
    flags: u8,
    names: (&[u8], &[u8]),
    old: &[u8],
    new: &[u8],
) {
    let mode_bits = |mode| MODES.iter().position(|&m| m == mode).unwrap_or(0) as u8;
    out.push(kind as u8 | mode_bits(old_mode) << 2 | mode_bits(new_mode) << 4 | flags);
    chunk(out, names.0);
    if kind == Kind::Rename {
        chunk(out, names.1);
    }
    if kind != Kind::Add {
        chunk(out, old);
    }
    if kind != Kind::Delete {
        if flags & SPLICE != 0 && kind != Kind::Add {
            let (span, inserted) = new.split_at(2.min(new.len()));
            out.extend_from_slice(span);
            chunk(out, inserted);
        } else {
            chunk(out, new);
        }
    }
}

/// A length-prefixed byte string: one length byte, or 255 and two little-endian bytes.
fn chunk(out: &mut Vec<u8>, data: &[u8]) {
    let len = data.len().min(usize::from(u16::MAX));
    if len < 255 {
        out.push(len as u8);
    } else {
        out.push(255);
        out.extend_from_slice(&(len as u16).to_le_bytes());
    }
    out.extend_from_slice(&data[..len]);
}

/// Reads the input format of [`encode`] back.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    /// A chunk; one cut short by the end of the input is what is left.
    fn chunk(&mut self) -> &'a [u8] {
        let len = match self.byte() {
            None => 0,
            Some(255) => {
                let lo = self.byte().unwrap_or(0);
                let hi = self.byte().unwrap_or(0);
                usize::from(u16::from_le_bytes([lo, hi]))
            }
            Some(n) => usize::from(n),
        };
        let (taken, rest) = self.0.split_at(len.min(self.0.len()));
        self.0 = rest;
        taken
    }
}

/// Decodes an input into at most [`MAX_CHANGES`] changes that can all hold at once: the base
/// paths are distinct and none is a folder of another, the same for the new paths, and a path
/// is in both only for a change that keeps it. A record that would break that is dropped, as
/// is one that changes nothing (the diff never reports those).
pub fn decode(data: &[u8]) -> Vec<Change> {
    let mut input = Reader(data);
    let mut changes: Vec<Change> = Vec::new();
    while changes.len() < MAX_CHANGES {
        let Some(op) = input.byte() else { break };
        let kind = op & 3;
        let old_mode = MODES[usize::from(op >> 2 & 3)];
        let new_mode = MODES[usize::from(op >> 4 & 3)];
        let texty = op & TEXTY != 0;
        let name = sanitise_path(input.chunk());
        let new_name = if kind == Kind::Rename as u8 {
            sanitise_path(input.chunk())
        } else {
            name.clone()
        };
        let old_data = if kind == Kind::Add as u8 {
            Vec::new()
        } else {
            contents(input.chunk(), texty)
        };
        let new_data = if kind == Kind::Delete as u8 {
            Vec::new()
        } else if op & SPLICE != 0 && kind != Kind::Add as u8 {
            let start = input.byte().unwrap_or(0);
            let end = input.byte().unwrap_or(0);
            let at = |f: u8| old_data.len() * usize::from(f) / 255;
            let (start, end) = (at(start.min(end)), at(start.max(end)));
            let mut spliced = old_data[..start].to_vec();
            spliced.extend(contents(input.chunk(), texty));
            spliced.extend_from_slice(&old_data[end..]);
            spliced
        } else {
            contents(input.chunk(), texty)
        };
        let file = |path: String, mode: u16, data: Vec<u8>| {
            let data = if mode == MODE_LINK {
                link_target(data)
            } else {
                data
            };
            File { path, mode, data }
        };
        let change = Change {
            old: (kind != Kind::Add as u8).then(|| file(name, old_mode, old_data)),
            new: (kind != Kind::Delete as u8).then(|| file(new_name, new_mode, new_data)),
        };
        if change.old == change.new || !fits(&changes, &change) {
            continue;
        }
        changes.push(change);
    }
    // The diff writes its files in the order of their (new) paths.
    changes.sort_by(|a, b| location(a).cmp(location(b)));
    changes
}

fn location(change: &Change) -> &str {
    change
        .new
        .as_ref()
        .or(change.old.as_ref())
        .map_or("", |f| f.path.as_str())
}

/// Whether `change` can hold together with the changes already taken.
fn fits(taken: &[Change], change: &Change) -> bool {
    // Within a rename the two paths may be a file and a folder of it ("a" to "a/b"): the
    // base has one, the result the other, as when a worktree turns a file into a folder.
    let clash = |a: &str, b: &str| {
        a == b || a.starts_with(&format!("{b}/")) || b.starts_with(&format!("{a}/"))
    };
    let path = |f: &Option<File>| f.as_ref().map(|f| f.path.clone());
    let (old, new) = (path(&change.old), path(&change.new));
    taken.iter().all(|t| {
        let (t_old, t_new) = (path(&t.old), path(&t.new));
        let pair_clash = |x: &Option<String>, y: &Option<String>| {
            matches!((x, y), (Some(x), Some(y)) if clash(x, y))
        };
        // Base against base and result against result must nest; across them only the
        // same path is a clash (it would be one file changed twice).
        !pair_clash(&old, &t_old)
            && !pair_clash(&new, &t_new)
            && !matches!((&old, &t_new), (Some(x), Some(y)) if x == y)
            && !matches!((&new, &t_old), (Some(x), Some(y)) if x == y)
    })
}

/// Contents as given, or mapped onto [`ALPHABET`].
fn contents(raw: &[u8], texty: bool) -> Vec<u8> {
    if !texty {
        return raw.to_vec();
    }
    raw.iter()
        .flat_map(|&b| ALPHABET[usize::from(b) % ALPHABET.len()].bytes())
        .collect()
}

/// A symlink's target: at most 200 bytes, no NUL, never empty (the file system's rules).
fn link_target(mut data: Vec<u8>) -> Vec<u8> {
    data.retain(|&b| b != 0);
    data.truncate(200);
    if data.is_empty() {
        data.push(b't');
    }
    data
}

/// Any bytes as a path git keeps: UTF-8 (the writer takes `&str`), `/`-separated parts that
/// are not empty, `.`, `..`, NUL-free, not git's own (`.git…`, or `git~1` that NTFS reads as
/// `.git`), at most 3 parts of at most 60 bytes. Quotes, backslashes, control characters,
/// spaces and non-ASCII stay: those are what git must quote or end with a tab.
pub fn sanitise_path(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw).replace('\0', "0");
    let mut parts = Vec::new();
    for part in text.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            continue;
        }
        let mut part = part.to_owned();
        if let Some(end) = (0..=60).rev().find(|&i| part.is_char_boundary(i)) {
            part.truncate(end);
        }
        let lower = part.to_lowercase();
        if lower.starts_with(".git") || lower.starts_with("git~") {
            part.insert(0, '_');
        }
        parts.push(part);
        if parts.len() == 3 {
            break;
        }
    }
    if parts.is_empty() {
        "f".to_owned()
    } else {
        parts.join("/")
    }
}

/// The patch of all the changes, one file after another, as the worktree diff writes it.
pub fn write_patch(changes: &[Change]) -> String {
    fn version(f: &File) -> FileVersion<'_> {
        FileVersion {
            path: &f.path,
            mode: f.mode,
            data: &f.data,
        }
    }
    changes
        .iter()
        .map(|c| vcs_git::file_patch(c.old.as_ref().map(version), c.new.as_ref().map(version)))
        .collect()
}

/// The target's body: decode, write the patch, and check it with git. Panics (so libFuzzer
/// keeps the input) when git refuses the patch or applying it does not give the new files.
pub fn patch(data: &[u8]) {
    let changes = decode(data);
    if changes.is_empty() {
        return;
    }
    let patch = write_patch(&changes);
    let dir = tempfile::tempdir().expect("a temp folder");
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).expect("the repo folder");
    for file in changes.iter().filter_map(|c| c.old.as_ref()) {
        write_file(&repo, file);
    }
    copy_tree(empty_repo(), &repo.join(".git"));
    git(dir.path(), &repo, &["add", "-A"], &changes, &patch);
    let patch_file = dir.path().join("change.patch");
    std::fs::write(&patch_file, &patch).expect("the patch file writes");
    let patch_arg = patch_file.to_str().expect("a UTF-8 temp path");
    git(
        dir.path(),
        &repo,
        &["apply", "--check", patch_arg],
        &changes,
        &patch,
    );
    git(dir.path(), &repo, &["apply", patch_arg], &changes, &patch);
    for change in &changes {
        check_result(&repo, change, &changes, &patch);
    }
}

/// Whether the `git` program runs here (the target needs it).
pub fn git_available() -> bool {
    Command::new(git_program())
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Where `git` is, found on `PATH` once. Spawning it by full path matters for speed: with a
/// program looked up on a `PATH` it was given, std forks instead of using `posix_spawn`, and
/// forking the fuzzer (address sanitizer, hundreds of MB mapped) costs tens of milliseconds.
fn git_program() -> &'static Path {
    static GIT: OnceLock<PathBuf> = OnceLock::new();
    GIT.get_or_init(|| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|dir| dir.join("git"))
            .find(|git| git.is_file())
            .unwrap_or_else(|| PathBuf::from("git"))
    })
}

/// The `.git` of an empty repository, made by `git init` once per process: each input copies
/// it (a few small files) instead of spawning git once more.
fn empty_repo() -> &'static Path {
    static REPO: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, git_dir) = REPO.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temp folder for the empty repo");
        git(
            dir.path(),
            dir.path(),
            &["init", "-q", "--template="],
            &[],
            "",
        );
        let git_dir = dir.path().join(".git");
        (dir, git_dir)
    });
    git_dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir(to).expect("a folder of the repo");
    for entry in std::fs::read_dir(from).expect("the empty repo reads") {
        let entry = entry.expect("the empty repo reads");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("a file of the repo copies");
        }
    }
}

fn write_file(repo: &Path, file: &File) {
    let path = repo.join(&file.path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("the base file's folder");
    }
    if file.mode == MODE_LINK {
        use std::os::unix::ffi::OsStrExt;
        let target = std::ffi::OsStr::from_bytes(&file.data);
        std::os::unix::fs::symlink(target, &path).expect("the base symlink");
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(&path, &file.data).expect("the base file writes");
        let mode = if file.mode == MODE_EXEC { 0o755 } else { 0o644 };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .expect("the base file's mode");
    }
}

/// Runs git in `repo` with nothing of the caller's or the machine's configuration (no
/// global or system file, `HOME` in the temp folder), and panics with the input when it fails.
fn git(home: &Path, repo: &Path, args: &[&str], changes: &[Change], patch: &str) {
    let out = Command::new(git_program())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("LC_ALL", "C")
        .args([
            "-c",
            "core.autocrlf=false",
            "-c",
            "core.symlinks=true",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(repo)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("git does not run ({e}): the patch target needs it"));
    assert!(
        out.status.success(),
        "git {args:?} failed: {}\nchanges: {changes:#?}\npatch:\n{patch}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The files after `git apply` are the new ones: contents, kind and executable bit; an old
/// path that is not also a new one is gone (or is a folder now).
fn check_result(repo: &Path, change: &Change, changes: &[Change], patch: &str) {
    use std::os::unix::fs::PermissionsExt;
    let fail = |what: String| -> ! {
        panic!("after git apply, {what}\nchanges: {changes:#?}\npatch:\n{patch}");
    };
    if let Some(new) = &change.new {
        let path: PathBuf = repo.join(&new.path);
        let meta = std::fs::symlink_metadata(&path)
            .unwrap_or_else(|e| fail(format!("{} is missing: {e}", new.path)));
        let (data, mode) = if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).expect("the link reads");
            use std::os::unix::ffi::OsStrExt;
            (target.as_os_str().as_bytes().to_vec(), MODE_LINK)
        } else {
            let exec = meta.permissions().mode() & 0o100 != 0;
            let data = std::fs::read(&path).expect("the file reads");
            (data, if exec { MODE_EXEC } else { MODE_FILE })
        };
        if mode != new.mode {
            fail(format!(
                "{} has mode {mode:o}, not {:o}",
                new.path, new.mode
            ));
        }
        if data != new.data {
            fail(format!(
                "{} holds {:?}, not {:?}",
                new.path,
                String::from_utf8_lossy(&data),
                String::from_utf8_lossy(&new.data)
            ));
        }
    }
    if let Some(old) = &change.old {
        let still_new = changes
            .iter()
            .any(|c| c.new.as_ref().is_some_and(|n| n.path == old.path));
        let left = std::fs::symlink_metadata(repo.join(&old.path)).is_ok_and(|m| !m.is_dir());
        if !still_new && left {
            fail(format!("{} should be gone", old.path));
        }
    }
}
