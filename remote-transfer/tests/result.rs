//! A box's result, checked before anything is applied: a good tree comes back whole, and each
//! hostile shape is refused with the error that names it (issue 32, "Done when").

use std::path::Path;

use remote_transfer::{Limits, TransferError, apply, check_bundle, pack_tree, read_result};

/// A tar entry with a raw name (the `tar` crate's own setters refuse `..`, as they should).
fn raw_entry(
    builder: &mut tar::Builder<Vec<u8>>,
    name: &str,
    kind: tar::EntryType,
    link: Option<&str>,
    data: &[u8],
) {
    let mut header = tar::Header::new_old();
    let bytes = name.as_bytes();
    header.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
    header.set_entry_type(kind);
    header.set_mode(0o644);
    header.set_size(data.len() as u64);
    if let Some(link) = link {
        let bytes = link.as_bytes();
        header.as_old_mut().linkname[..bytes.len()].copy_from_slice(bytes);
    }
    header.set_cksum();
    builder.append(&header, data).unwrap();
}

fn tar_of(entries: &[(&str, tar::EntryType, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, kind, link, data) in entries {
        raw_entry(&mut builder, name, *kind, *link, data);
    }
    builder.into_inner().unwrap()
}

fn refused(bytes: &[u8]) -> TransferError {
    read_result(bytes, None, &Limits::default()).expect_err("the result should be refused")
}

#[test]
fn a_tree_goes_out_and_comes_back_whole_and_the_git_folder_stays() {
    use std::os::unix::fs::PermissionsExt;
    let out = tempfile::tempdir().unwrap();
    let src = out.path();
    std::fs::create_dir_all(src.join("src/deep")).unwrap();
    std::fs::write(src.join("README"), "hello\n").unwrap();
    std::fs::write(src.join("src/deep/lib.rs"), "fn x() {}\n").unwrap();
    std::fs::write(src.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(src.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("src/deep/lib.rs", src.join("lib")).unwrap();
    std::fs::write(src.join(".git"), "gitdir: /elsewhere\n").unwrap();
    let bytes = pack_tree(src, &Limits::default()).unwrap();
    let tree = read_result(&bytes, None, &Limits::default()).unwrap();
    assert_eq!(
        tree.len(),
        6,
        "README, run.sh, lib, src, src/deep, src/deep/lib.rs"
    );

    let dest = tempfile::tempdir().unwrap();
    let d = dest.path();
    std::fs::write(d.join(".git"), "gitdir: /mine\n").unwrap();
    std::fs::write(d.join("stale.txt"), "gone after apply").unwrap();
    std::fs::create_dir(d.join("lib")).unwrap(); // a folder where the result has a link
    apply(&tree, d).unwrap();
    assert_eq!(
        std::fs::read_to_string(d.join("README")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("lib")).unwrap(),
        "fn x() {}\n"
    );
    assert!(
        std::fs::symlink_metadata(d.join("lib"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::metadata(d.join("run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o755
    );
    assert!(
        !d.join("stale.txt").exists(),
        "a path the result lacks is removed"
    );
    assert_eq!(
        std::fs::read_to_string(d.join(".git")).unwrap(),
        "gitdir: /mine\n"
    );
}

#[test]
fn a_path_outside_the_tree_is_refused() {
    let up = tar_of(&[
        ("ok.txt", tar::EntryType::Regular, None, b"x"),
        ("../evil", tar::EntryType::Regular, None, b"x"),
    ]);
    assert!(matches!(refused(&up), TransferError::OutsideTree(p) if p == Path::new("../evil")));
    let absolute = tar_of(&[("/etc/evil", tar::EntryType::Regular, None, b"x")]);
    assert!(matches!(refused(&absolute), TransferError::OutsideTree(_)));
    let nested_git = tar_of(&[(
        "sub/.git/hooks/pre-commit",
        tar::EntryType::Regular,
        None,
        b"x",
    )]);
    assert!(matches!(
        refused(&nested_git),
        TransferError::OutsideTree(_)
    ));
    let message = refused(&up).to_string();
    assert!(
        message.contains("outside the run's tree") && message.contains("nothing applied"),
        "{message}"
    );
}

#[test]
fn a_symlink_loop_is_refused() {
    let bytes = tar_of(&[
        ("a", tar::EntryType::Symlink, Some("b"), b""),
        ("b", tar::EntryType::Symlink, Some("dir/../a"), b""),
        ("dir", tar::EntryType::Directory, None, b""),
    ]);
    match refused(&bytes) {
        TransferError::BadLink { why, .. } => assert_eq!(why, "loops"),
        other => panic!("expected a loop, got {other}"),
    }
}

#[test]
fn a_link_out_of_the_tree_or_written_through_is_refused() {
    let out = tar_of(&[
        ("sub", tar::EntryType::Directory, None, b""),
        (
            "sub/up",
            tar::EntryType::Symlink,
            Some("../../etc/passwd"),
            b"",
        ),
    ]);
    assert!(matches!(
        refused(&out),
        TransferError::BadLink {
            why: "leaves the tree",
            ..
        }
    ));
    let via = tar_of(&[
        ("hop", tar::EntryType::Symlink, Some(".."), b""),
        ("x", tar::EntryType::Symlink, Some("hop/hop"), b""),
    ]);
    assert!(matches!(
        refused(&via),
        TransferError::BadLink {
            why: "leaves the tree",
            ..
        }
    ));
    let through = tar_of(&[
        ("d", tar::EntryType::Symlink, Some("real"), b""),
        ("d/x", tar::EntryType::Regular, None, b"x"),
    ]);
    assert!(matches!(refused(&through), TransferError::BadLink { .. }));
    let fifo = tar_of(&[("pipe", tar::EntryType::Fifo, None, b"")]);
    assert!(matches!(refused(&fifo), TransferError::Special { .. }));
    let hard = tar_of(&[
        ("f", tar::EntryType::Regular, None, b"x"),
        ("h", tar::EntryType::Link, Some("f"), b""),
    ]);
    assert!(matches!(refused(&hard), TransferError::Special { .. }));
}

#[test]
fn a_result_over_the_cap_is_refused() {
    let limits = Limits {
        max_bytes: 10,
        ..Limits::default()
    };
    let bytes = tar_of(&[
        ("a", tar::EntryType::Regular, None, b"123456"),
        ("b", tar::EntryType::Regular, None, b"123456"),
    ]);
    let error = read_result(&bytes, None, &limits).unwrap_err();
    assert!(
        matches!(
            error,
            TransferError::TooBig {
                what: "result's size",
                limit: 10
            }
        ),
        "{error}"
    );
    let limits = Limits {
        max_entries: 1,
        ..Limits::default()
    };
    let error = read_result(&bytes, None, &limits).unwrap_err();
    assert!(
        matches!(
            error,
            TransferError::TooBig {
                what: "result's entry count",
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn the_engine_archive_prefix_is_stripped_and_must_be_there() {
    let bytes = tar_of(&[
        ("wt/", tar::EntryType::Directory, None, b""),
        ("wt/a.txt", tar::EntryType::Regular, None, b"a"),
    ]);
    let tree = read_result(&bytes, Some("wt"), &Limits::default()).unwrap();
    assert_eq!(
        tree.entries().map(|e| e.path).collect::<Vec<_>>(),
        vec![Path::new("a.txt")]
    );
    assert!(matches!(
        read_result(&bytes, Some("other"), &Limits::default()),
        Err(TransferError::OutsideTree(_))
    ));
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[test]
fn a_bundle_with_other_refs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q"]);
    std::fs::write(repo.join("f"), "1").unwrap();
    git(repo, &["add", "f"]);
    git(repo, &["commit", "-qm", "one"]);
    git(repo, &["branch", "codehands/result"]);
    git(repo, &["branch", "evil"]);
    git(
        repo,
        &["bundle", "create", "-q", "ok.bundle", "codehands/result"],
    );
    git(
        repo,
        &[
            "bundle",
            "create",
            "-q",
            "bad.bundle",
            "codehands/result",
            "evil",
        ],
    );
    check_bundle(&repo.join("ok.bundle"), "refs/heads/codehands/result").unwrap();
    let error = check_bundle(&repo.join("bad.bundle"), "refs/heads/codehands/result").unwrap_err();
    match &error {
        TransferError::BundleRefs { found, .. } => {
            assert!(found.contains(&"refs/heads/evil".to_owned()))
        }
        other => panic!("expected other refs, got {other}"),
    }
    std::fs::write(repo.join("junk.bundle"), "not a bundle").unwrap();
    assert!(matches!(
        check_bundle(&repo.join("junk.bundle"), "refs/heads/x"),
        Err(TransferError::Malformed(_))
    ));
}
