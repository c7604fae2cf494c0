//! Replays every input kept under `fuzz/regressions/<target>/` (the crashes the fuzzer
//! found, kept by `cargo xtask fuzz`) through the same body the target runs, on stable.
//! Passes when the folders are empty or every input now goes through.

use std::path::{Path, PathBuf};

fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions")
}

#[test]
fn every_kept_crash_input_now_goes_through_its_target() {
    let root = regressions_dir();
    let mut replayed = 0;
    for target in fuzz_harness::TARGETS {
        let dir = root.join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue; // No crash was ever kept for this target.
        };
        if *target == "patch" && !fuzz_harness::patch::git_available() {
            // The patch target checks with the git program; without it nothing can replay.
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "git is not installed, and CI=true: fuzz/regressions/patch cannot replay"
            );
            eprintln!("skipped fuzz/regressions/patch: git is not installed");
            continue;
        }
        for entry in entries {
            let path = entry.unwrap().path();
            if !path.is_file() || path.file_name().is_some_and(|n| n == ".gitkeep") {
                continue;
            }
            let data = std::fs::read(&path).unwrap();
            eprintln!("replaying {}", path.display());
            assert!(fuzz_harness::run(target, &data));
            replayed += 1;
        }
    }
    eprintln!("replayed {replayed} kept inputs");
}

#[test]
fn a_folder_under_regressions_names_a_target() {
    let Ok(entries) = std::fs::read_dir(regressions_dir()) else {
        return;
    };
    for entry in entries {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_dir() {
            assert!(
                fuzz_harness::TARGETS.contains(&name.as_str()),
                "fuzz/regressions/{name} is not a fuzz target: name one of {:?}",
                fuzz_harness::TARGETS
            );
        }
    }
}
