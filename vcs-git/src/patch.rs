//! Writing one file's change as `git diff --binary` does, so `git apply` takes it.

use std::fmt::Write as _;
use std::io::Write as _;

use gix::diff::blob::unified_diff::{ConsumeHunk, ContextSize, DiffLineKind, HunkHeader};
use gix::diff::blob::{Algorithm, InternedInput, UnifiedDiff};

/// One side of a change: where the file is, its mode (`100644`…) and its id and bytes.
pub(crate) struct Side<'a> {
    pub path: &'a str,
    pub mode: u16,
    pub id: gix::ObjectId,
    pub data: &'a [u8],
    /// The size of a blob too large to show (its `data` is then empty).
    pub too_large: Option<u64>,
}

/// Line counts of one file, `None` for a binary file.
pub(crate) type Counts = Option<(u64, u64)>;

/// One side of a file's change as plain bytes, for [`file_patch`]: its path in the
/// repository (`/`-separated, relative), its git mode (`0o100644`, `0o100755`, `0o120000`
/// for a symlink, whose bytes are its target) and its contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileVersion<'a> {
    /// The path relative to the repository's root, `/`-separated.
    pub path: &'a str,
    /// The git mode, as in a tree entry.
    pub mode: u16,
    /// The file's bytes (a symlink's target).
    pub data: &'a [u8],
}

/// The patch of one file's change, as the diff of a worktree writes it (`git diff --binary`
/// with renames): `old` is `None` for an added file, `new` is `None` for a deleted one, and
/// different paths make a rename. Nothing changed gives an empty patch. No repository is
/// needed: the blob ids on the `index` lines are hashed from the bytes, as git would.
///
/// This is the writer [`crate::GitVcs`]'s diff uses, so the fuzz target that feeds it
/// random files and checks the result with `git apply` tests the real thing.
pub fn file_patch(old: Option<FileVersion<'_>>, new: Option<FileVersion<'_>>) -> String {
    fn side<'a>(v: FileVersion<'a>) -> Side<'a> {
        Side {
            path: v.path,
            mode: v.mode,
            id: blob_id(v.data),
            data: v.data,
            too_large: None,
        }
    }
    let (old, new) = (old.map(side), new.map(side));
    let mut out = String::new();
    write_change(&mut out, old.as_ref(), new.as_ref());
    out
}

/// The id git gives a blob of these bytes.
fn blob_id(data: &[u8]) -> gix::ObjectId {
    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, data)
        // SHA-1 over bytes in memory: only a detected collision attack fails, and then the
        // null id makes `git apply` refuse the patch rather than take the wrong one.
        .unwrap_or_else(|_| gix::ObjectId::null(gix::hash::Kind::Sha1))
}

/// Appends the patch of one change to `out` and returns its line counts (the insertions and
/// deletions). A change of kind (a file that became a symlink, say) is written as git writes
/// it, a deletion and then an addition; a change of nothing writes nothing.
pub(crate) fn write_change(
    out: &mut String,
    old: Option<&Side<'_>>,
    new: Option<&Side<'_>>,
) -> Counts {
    match (old, new) {
        (Some(o), Some(n)) if o.path == n.path && o.mode == n.mode && o.id == n.id => Some((0, 0)),
        (Some(o), Some(n)) if o.mode & 0o170000 != n.mode & 0o170000 => {
            let removed = write_file(out, Some(o), None);
            let added = write_file(out, None, Some(n));
            removed.zip(added).map(|((_, d), (i, _))| (i, d))
        }
        _ => write_file(out, old, new),
    }
}

/// Appends the patch of one file of one kind to `out` and returns its line counts.
/// `old` is `None` for an added file, `new` is `None` for a deleted one.
fn write_file(out: &mut String, old: Option<&Side<'_>>, new: Option<&Side<'_>>) -> Counts {
    let (a_path, b_path) = match (old, new) {
        (Some(o), Some(n)) => (o.path, n.path),
        (Some(o), None) => (o.path, o.path),
        (None, Some(n)) => (n.path, n.path),
        (None, None) => return Some((0, 0)),
    };
    let a_label = quote("a/", a_path);
    let b_label = quote("b/", b_path);
    let _ = writeln!(out, "diff --git {a_label} {b_label}");
    match (old, new) {
        (None, Some(n)) => {
            let _ = writeln!(out, "new file mode {:06o}", n.mode);
        }
        (Some(o), None) => {
            let _ = writeln!(out, "deleted file mode {:06o}", o.mode);
        }
        (Some(o), Some(n)) => {
            if o.mode != n.mode {
                let _ = writeln!(out, "old mode {:06o}\nnew mode {:06o}", o.mode, n.mode);
            }
            if o.path != n.path {
                let _ = writeln!(
                    out,
                    "rename from {}\nrename to {}",
                    quote("", o.path),
                    quote("", n.path)
                );
            }
        }
        (None, None) => {}
    }
    let null = gix::ObjectId::null(gix::hash::Kind::Sha1);
    let old_id = old.map_or(null, |s| s.id);
    let new_id = new.map_or(null, |s| s.id);
    if old_id == new_id {
        return Some((0, 0));
    }
    if let Some(size) = old
        .and_then(|s| s.too_large)
        .or(new.and_then(|s| s.too_large))
    {
        // Full ids and a line ending in " differ", as git writes a binary change without its
        // data: `git apply` takes it when it has the blobs, and refuses it otherwise.
        let minus = if old.is_some() {
            a_label
        } else {
            "/dev/null".to_owned()
        };
        let plus = if new.is_some() {
            b_label
        } else {
            "/dev/null".to_owned()
        };
        let _ = writeln!(out, "index {old_id}..{new_id}");
        let _ = writeln!(
            out,
            "Too large to show ({size} bytes): {minus} and {plus} differ"
        );
        return None;
    }
    let old_data = old.map_or(&[][..], |s| s.data);
    let new_data = new.map_or(&[][..], |s| s.data);
    let same_mode = match (old, new) {
        (Some(o), Some(n)) if o.mode == n.mode => format!(" {:06o}", o.mode),
        _ => String::new(),
    };

    if is_binary(old_data) || is_binary(new_data) {
        let _ = writeln!(out, "index {old_id}..{new_id}{same_mode}");
        out.push_str("GIT binary patch\n");
        write_literal(out, new_data);
        write_literal(out, old_data);
        return None;
    }

    let _ = writeln!(
        out,
        "index {}..{}{same_mode}",
        &old_id.to_hex_with_len(7),
        &new_id.to_hex_with_len(7)
    );
    let minus = if old.is_some() {
        a_label
    } else {
        "/dev/null".to_owned()
    };
    let plus = if new.is_some() {
        b_label
    } else {
        "/dev/null".to_owned()
    };
    let _ = writeln!(out, "--- {minus}{}", tab_if_spaced(&minus));
    let _ = writeln!(out, "+++ {plus}{}", tab_if_spaced(&plus));

    let input = InternedInput::new(old_data, new_data);
    let diff = gix::diff::blob::diff_with_slider_heuristics(Algorithm::Histogram, &input);
    let counts = (
        u64::from(diff.count_additions()),
        u64::from(diff.count_removals()),
    );
    let hunks = UnifiedDiff::new(
        &diff,
        &input,
        Hunks(String::new()),
        ContextSize::symmetrical(3),
    )
    .consume()
    .unwrap_or_default();
    out.push_str(&hunks);
    Some(counts)
}

/// Git's rule: a NUL in the first 8000 bytes. Text that is not UTF-8 goes as binary too, so the
/// patch stays a valid string and still applies byte for byte.
pub(crate) fn is_binary(data: &[u8]) -> bool {
    data[..data.len().min(8000)].contains(&0) || std::str::from_utf8(data).is_err()
}

/// Git ends a `---`/`+++` name that holds a space with a tab, so `git apply` knows where it ends.
fn tab_if_spaced(label: &str) -> &'static str {
    if label.contains(' ') { "\t" } else { "" }
}

/// `prefix` + `path`, C-quoted as git does when the path holds `"`, `\` or control characters.
/// Other characters, non-ASCII included, stay as they are (git's `core.quotePath=false`).
pub(crate) fn quote(prefix: &str, path: &str) -> String {
    let needs = path
        .chars()
        .any(|c| c == '"' || c == '\\' || c.is_control());
    if !needs {
        return format!("{prefix}{path}");
    }
    let mut out = String::with_capacity(path.len() + prefix.len() + 2);
    out.push('"');
    out.push_str(prefix);
    for c in path.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\x0b' => out.push_str("\\v"),
            '\x0c' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(out, "\\{b:03o}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Hunks as unified diff text, with git's marker for a last line without a newline.
struct Hunks(String);

impl ConsumeHunk for Hunks {
    type Out = String;

    fn consume_hunk(
        &mut self,
        header: HunkHeader,
        lines: &[(DiffLineKind, &[u8])],
    ) -> std::io::Result<()> {
        // Git numbers an empty side from the line before it: `-0,0` for a new file.
        let start = |start: u32, len: u32| {
            if len == 0 {
                start.saturating_sub(1)
            } else {
                start
            }
        };
        let _ = writeln!(
            self.0,
            "@@ -{},{} +{},{} @@",
            start(header.before_hunk_start, header.before_hunk_len),
            header.before_hunk_len,
            start(header.after_hunk_start, header.after_hunk_len),
            header.after_hunk_len
        );
        for (kind, line) in lines {
            self.0.push(kind.to_prefix());
            self.0
                .push_str(std::str::from_utf8(line).map_err(std::io::Error::other)?);
            if !line.ends_with(b"\n") {
                self.0.push_str("\n\\ No newline at end of file\n");
            }
        }
        Ok(())
    }

    fn finish(self) -> String {
        self.0
    }
}

/// A `literal` hunk of git's binary patch: the zlib-deflated bytes in git's base85 lines.
fn write_literal(out: &mut String, data: &[u8]) {
    let _ = writeln!(out, "literal {}", data.len());
    let mut deflated = gix::zlib::stream::deflate::Write::new(
        Vec::new(),
        gix::zlib::Compression::new(6).unwrap_or_default(),
    );
    // Writing into a Vec cannot fail.
    let _ = deflated.write_all(data);
    let _ = deflated.flush();
    let deflated = deflated.into_inner();
    for chunk in deflated.chunks(52) {
        let len = chunk.len() as u8;
        out.push(if len <= 26 {
            (b'A' + len - 1) as char
        } else {
            (b'a' + len - 27) as char
        });
        encode_85(out, chunk);
        out.push('\n');
    }
    out.push('\n');
}

const BASE85: &[u8; 85] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/// Git's base85: each group of 4 bytes (zero-padded) as 5 characters, most significant first.
fn encode_85(out: &mut String, data: &[u8]) {
    for group in data.chunks(4) {
        let mut acc: u32 = 0;
        for (i, b) in group.iter().enumerate() {
            acc |= u32::from(*b) << (24 - 8 * i);
        }
        let mut chars = [0u8; 5];
        for slot in chars.iter_mut().rev() {
            *slot = BASE85[(acc % 85) as usize];
            acc /= 85;
        }
        for c in chars {
            out.push(c as char);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base85_uses_gits_alphabet_most_significant_first() {
        // The conformance suite applies whole binary patches with git; this pins the encoding.
        let mut out = String::new();
        encode_85(&mut out, &[0, 0, 0, 0]);
        assert_eq!(out, "00000");
        out.clear();
        encode_85(&mut out, &[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(out, "|NsC0");
        out.clear();
        encode_85(&mut out, &[0, 0, 0, 85]);
        assert_eq!(out, "00010", "85 is one in the second-lowest place");
    }

    #[test]
    fn quotes_like_git() {
        assert_eq!(quote("a/", "plain name.txt"), "a/plain name.txt");
        assert_eq!(quote("a/", "é.txt"), "a/é.txt");
        assert_eq!(quote("a/", "q\"uote"), "\"a/q\\\"uote\"");
        assert_eq!(quote("b/", "tab\there"), "\"b/tab\\there\"");
    }

    #[test]
    fn file_patch_needs_no_repository_and_hashes_ids_as_git_does() {
        let hello = FileVersion {
            path: "hello.txt",
            mode: 0o100644,
            data: b"hello\n",
        };
        // `git hash-object` of "hello\n" is ce013625030ba8dba906f756967f9e9ca394464a.
        assert_eq!(
            file_patch(None, Some(hello)),
            "diff --git a/hello.txt b/hello.txt\n\
             new file mode 100644\n\
             index 0000000..ce01362\n\
             --- /dev/null\n\
             +++ b/hello.txt\n\
             @@ -0,0 +1,1 @@\n\
             +hello\n"
        );
        assert_eq!(file_patch(Some(hello), Some(hello)), "", "nothing changed");
        let link = FileVersion {
            mode: 0o120000,
            data: b"target",
            ..hello
        };
        let kind_change = file_patch(Some(hello), Some(link));
        assert!(
            kind_change
                .starts_with("diff --git a/hello.txt b/hello.txt\ndeleted file mode 100644\n")
                && kind_change
                    .contains("\ndiff --git a/hello.txt b/hello.txt\nnew file mode 120000\n"),
            "a change of kind is a deletion and an addition: {kind_change}"
        );
    }

    #[test]
    fn binary_is_nul_or_not_utf8() {
        assert!(is_binary(b"a\0b"));
        assert!(is_binary(&[0xff, 0xfe]));
        assert!(!is_binary("héllo\n".as_bytes()));
    }
}
