//! The repository's admin folder: what git reads as configuration is read-only in the box
//! (agent-box's `git_admin.rs` has the list and why), and git still works there.
//!
//! Each probe gets a fresh place (the control changes what it probes). Where git would run a
//! program from what the probe wrote, the control also runs git and shows the program ran.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{Caller, Place, for_each_caller, probe};

/// A place with a real repository and worktree, and its two git folders.
struct Repo {
    place: Place,
    /// The common git folder (`repo/.git`).
    common: PathBuf,
    /// The worktree's own folder (`repo/.git/worktrees/<name>`).
    admin: PathBuf,
}

fn repo(caller: &Caller) -> Repo {
    let place = Place::with_git(caller);
    let dirs = place.git.clone().expect("a place with git has its folders");
    Repo {
        common: dirs.common,
        admin: dirs.admin,
        place,
    }
}

/// `git config` on the repository's common config, outside any box, as the test.
fn set_common_config(repo: &Repo, key: &str, value: &str) {
    let status = Command::new("git")
        .arg("config")
        .arg("--file")
        .arg(repo.common.join("config"))
        .args([key, value])
        .status()
        .unwrap();
    assert!(status.success(), "git config {key} {value}");
}

/// A shell word for `path`.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.display())
}

/// The script that writes a `core.fsmonitor` into a config (`redirect` is `> FILE` or
/// `>> FILE`), then shows git read it: the program it names leaves a marker in the worktree
/// when `git status` asks it. Exits 0 when the program ran.
fn fsmonitor_escape(redirect: &str) -> String {
    format!(
        "printf '[core]\\n\\tfsmonitor = \"touch fsmonitor-ran; false\"\\n' \
         {redirect} || exit 1\n\
         git status >/dev/null 2>&1\n\
         test -e fsmonitor-ran"
    )
}

#[test]
fn the_worktrees_config_cannot_make_git_run_a_program() {
    for_each_caller(|caller| {
        // What `git sparse-checkout init` sets: git then reads `config.worktree`.
        let r = repo(caller);
        set_common_config(&r, "extensions.worktreeConfig", "true");
        let config = quoted(&r.admin.join("config.worktree"));
        let write = fsmonitor_escape(&format!("> {config}"));
        probe(&r.place, "write config.worktree", &write);

        // Made anew: the box started with it there (the planner made it), the control without.
        let r = repo(caller);
        set_common_config(&r, "extensions.worktreeConfig", "true");
        let config = quoted(&r.admin.join("config.worktree"));
        let anew = format!(
            "rm -f {config} || exit 1\n{}",
            fsmonitor_escape(&format!("> {config}"))
        );
        probe(&r.place, "create config.worktree anew", &anew);
    });
}

#[test]
fn the_box_makes_the_worktrees_config_info_and_modules_before_it_starts() {
    for_each_caller(|caller| {
        let r = repo(caller);
        let config = r.admin.join("config.worktree");
        let folders = [r.admin.join("info"), r.admin.join("modules")];
        assert!(
            !config.exists() && folders.iter().all(|f| !f.exists()),
            "git made none"
        );
        let boxed = r.place.boxed(&format!(
            "printf '[core]\\n\\thooksPath = /tmp\\n' > {}; mkdir {}/x {}/x; true",
            quoted(&config),
            quoted(&folders[0]),
            quoted(&folders[1])
        ));
        assert_eq!(boxed.code, 0, "{boxed}");
        assert_eq!(std::fs::read(&config).unwrap(), b"", "left empty");
        for folder in &folders {
            let entries = std::fs::read_dir(folder).unwrap().count();
            assert_eq!(entries, 0, "{} left empty", folder.display());
        }
    });
}

#[test]
fn the_worktrees_sparse_checkout_cannot_be_written() {
    for_each_caller(|caller| {
        let r = repo(caller);
        let info = r.admin.join("info");
        let script = format!(
            "mkdir -p {} && printf '/nothing-of-it/\\n' > {}",
            quoted(&info),
            quoted(&info.join("sparse-checkout"))
        );
        probe(&r.place, "write info/sparse-checkout", &script);
    });
}

#[test]
fn no_submodule_git_folder_can_be_planted() {
    for_each_caller(|caller| {
        // `git submodule update` in the worktree would reuse it, hooks and config.
        let r = repo(caller);
        let hooks = r.admin.join("modules/sub/hooks");
        let script = format!(
            "mkdir -p {} && printf '#!/bin/sh\\ntouch /tmp/hook-ran\\n' > {}",
            quoted(&hooks),
            quoted(&hooks.join("post-checkout"))
        );
        probe(
            &r.place,
            "plant a submodule's git folder under modules/",
            &script,
        );
    });
}

#[test]
fn the_common_hooks_and_config_cannot_be_written() {
    for_each_caller(|caller| {
        let r = repo(caller);
        let hook = quoted(&r.common.join("hooks/post-checkout"));
        let script =
            format!("printf '#!/bin/sh\\ntouch /tmp/hook-ran\\n' > {hook} && chmod +x {hook}");
        probe(&r.place, "write a hook into the common hooks/", &script);

        let r = repo(caller);
        let config = quoted(&r.common.join("config"));
        let append = fsmonitor_escape(&format!(">> {config}"));
        probe(&r.place, "write the common config", &append);
    });
}

#[test]
fn the_worktrees_git_file_cannot_be_pointed_elsewhere() {
    for_each_caller(|caller| {
        // A git folder of the agent's own (in the worktree, which it may write): the person's
        // next git command in the worktree
        // would read its config (which can run programs, as the probes above show).
        let evil = "mkdir -p evil-git/objects evil-git/refs || exit 1\n\
                    echo 'ref: refs/heads/main' > evil-git/HEAD || exit 1\n";
        let point = "printf 'gitdir: %s\\n' \"$(cd evil-git && pwd)\" > .git || exit 1\n";
        let read = "test \"$(git rev-parse --git-dir)\" = \"$(cd evil-git && pwd)\"";
        // Put back afterwards, by the control: the next box is planned over the same place,
        // and the planner refuses a `.git` that points elsewhere.
        let back = |r: &Repo| {
            format!(
                "\nworked=$?\nprintf 'gitdir: %s\\n' {} > .git\nexit $worked",
                quoted(&r.admin)
            )
        };
        let r = repo(caller);
        let rewrite = format!("{evil}{point}{read}{}", back(&r));
        probe(&r.place, "rewrite the worktree's .git file", &rewrite);

        let r = repo(caller);
        let replace = format!("{evil}rm -f .git || exit 1\n{point}{read}{}", back(&r));
        probe(&r.place, "replace the worktree's .git file", &replace);
    });
}

#[test]
fn the_registration_cannot_be_pointed_elsewhere() {
    for_each_caller(|caller| {
        for name in ["gitdir", "commondir"] {
            let r = repo(caller);
            let file = quoted(&r.admin.join(name));
            let script = format!("printf '/elsewhere/.git\\n' > {file}");
            probe(&r.place, &format!("rewrite {name}"), &script);

            let r = repo(caller);
            let script = format!("rm -f {file} && printf '/elsewhere/.git\\n' > {file}");
            probe(&r.place, &format!("replace {name}"), &script);
        }
    });
}

#[test]
fn git_still_works_in_the_worktree() {
    for_each_caller(|caller| {
        let r = repo(caller);
        // Status and diff read; `rm --cached`, `restore --staged` and the refresh write the index,
        // `checkout` the worktree's HEAD: all in the admin folder.
        let boxed = r.place.boxed(
            "set -e\n\
             echo changed > README.md\n\
             echo new > new.txt\n\
             git status --porcelain | grep -qx ' M README.md'\n\
             git status --porcelain | grep -qx '?? new.txt'\n\
             git diff | grep -qx '+changed'\n\
             git rm -q --cached README.md\n\
             git status --porcelain | grep -q '^D  README.md'\n\
             git restore --staged README.md\n\
             git update-index --refresh >/dev/null || true\n\
             git checkout -q --detach\n\
             git status --porcelain | grep -qx ' M README.md'",
        );
        assert_eq!(
            boxed.code, 0,
            "git works in the box as {}\n{boxed}",
            caller.name
        );
    });
}
