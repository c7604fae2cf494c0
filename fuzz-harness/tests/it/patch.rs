//! The `patch` target on stable: its seeds decode into the changes they name, and each one's
//! patch is taken by `git apply --check` and, applied, gives the new files (the body checks
//! that and panics otherwise).

use std::path::Path;

use fuzz_harness::patch::{Kind, MODE_FILE, decode, encode, sanitise_path, write_patch};

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn seed(name: &str) -> Vec<u8> {
    fuzz_harness::seeds("patch", repo())
        .unwrap()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no patch seed {name}"))
        .1
}

/// Whether git is missing here; under CI=true a missing git fails instead.
fn git_missing() -> bool {
    if fuzz_harness::patch::git_available() {
        return false;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "git is not installed, and CI=true: the patch target needs it"
    );
    eprintln!("skipped: git is not installed, and the patch target checks its patches with it");
    true
}

#[test]
fn every_patch_seed_is_taken_by_git_apply_and_rebuilds_the_new_files() {
    if git_missing() {
        return;
    }
    let seeds = fuzz_harness::seeds("patch", repo()).unwrap();
    assert!(seeds.len() >= 20, "only {} patch seeds", seeds.len());
    for (name, data) in seeds {
        let changes = decode(&data);
        assert!(!changes.is_empty(), "the seed {name} decodes to no change");
        eprintln!("seed {name}: {} change(s)", changes.len());
        fuzz_harness::patch(&data);
    }
}

#[test]
fn seeds_decode_to_the_files_they_were_written_from() {
    let changes = decode(&seed("rename-and-edit"));
    assert_eq!(changes.len(), 1);
    let (old, new) = (
        changes[0].old.as_ref().unwrap(),
        changes[0].new.as_ref().unwrap(),
    );
    assert_eq!(
        (old.path.as_str(), new.path.as_str()),
        ("guide.md", "handbook.md")
    );
    assert!(new.data.starts_with(b"line 1\n") && new.data.ends_with(b"line 30\n"));
    assert_ne!(old.data, new.data);

    let many = decode(&seed("many-files"));
    let paths: Vec<_> = many
        .iter()
        .map(|c| c.new.as_ref().or(c.old.as_ref()).unwrap().path.as_str())
        .collect();
    assert_eq!(paths, ["a", "a/b", "bin", "c.txt"], "in the diff's order");
    assert!(many[0].new.is_none() && many[1].old.is_none());

    let odd = decode(&seed("quotes-and-controls"));
    assert_eq!(
        odd[0].new.as_ref().unwrap().path,
        "q\"uote\\back\ttab\nnew\u{1}.txt"
    );
    let patch = write_patch(&odd);
    assert!(
        patch.starts_with("diff --git \"a/q\\\"uote\\\\back\\ttab\\nnew\\001.txt\" "),
        "git's C quoting: {patch}"
    );
}

#[test]
fn paths_are_made_valid_but_keep_what_git_must_quote() {
    assert_eq!(sanitise_path(b"/../a//./b/"), "a/b");
    assert_eq!(sanitise_path(b""), "f");
    assert_eq!(sanitise_path(b".git/config"), "_.git/config");
    assert_eq!(sanitise_path(b"x/.GITmodules"), "x/_.GITmodules");
    assert_eq!(sanitise_path(b"GIT~1/hooks"), "_GIT~1/hooks");
    assert_eq!(sanitise_path(b"nul\0here"), "nul0here");
    assert_eq!(sanitise_path(b"\xff name\t\""), "\u{fffd} name\t\"");
    assert_eq!(sanitise_path(b"a/b/c/d/e"), "a/b/c");
    let long = sanitise_path("é".repeat(40).as_bytes());
    assert_eq!(long.len(), 60, "cut to 60 bytes on a character boundary");
}

#[test]
fn records_that_clash_or_change_nothing_are_dropped() {
    let mut data = Vec::new();
    let f = MODE_FILE;
    encode(&mut data, Kind::Add, (f, f), 0, (b"x", b""), b"", b"1\n");
    // The same path again, and a file under it: neither can hold with the first.
    encode(&mut data, Kind::Add, (f, f), 0, (b"x", b""), b"", b"2\n");
    encode(&mut data, Kind::Add, (f, f), 0, (b"x/y", b""), b"", b"3\n");
    // Nothing changed: the diff never reports it.
    encode(
        &mut data,
        Kind::Modify,
        (f, f),
        0,
        (b"same", b""),
        b"s\n",
        b"s\n",
    );
    encode(&mut data, Kind::Delete, (f, f), 0, (b"z", b""), b"4\n", b"");
    let changes = decode(&data);
    let paths: Vec<_> = changes
        .iter()
        .map(|c| c.new.as_ref().or(c.old.as_ref()).unwrap().path.as_str())
        .collect();
    assert_eq!(paths, ["x", "z"]);
}
