//! The box binds the agent's program narrowly: nothing else of an install root under the home.
//!
//! Each agent here is a program of the caller's home that tries to read another file of that
//! home: installed in `~/.local/bin` (a link into `~/.local/share`, beside the keyrings), in
//! `~/.cargo/bin` (beside `credentials.toml`), and an interpreter of the home (a venv's
//! Python, a copy of `sh`) running a script of the home, as a profile agent does (its script
//! declared read-only, as `codehands`' profiles declare theirs). The control runs the same
//! program unboxed and reads the file.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use runner_contract::BoxNeeds;

use crate::harness::{self, Boxing, Place};

/// What every secret file of the home holds.
const SECRET: &str = "HOME-SECRET-b7e1";

/// Writes `text` at `rel` under the home, its folders made, readable by the caller.
fn plant(place: &Place, rel: &str, text: &str, mode: u32) -> PathBuf {
    let path = place.home.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

/// A shell script that says it ran, then reads each of `files`: exit 0 when any read worked.
fn reader(files: &[PathBuf]) -> String {
    let mut script = String::from("#!/bin/sh\necho ran\n");
    for file in files {
        script.push_str(&format!("cat '{}' && exit 0\n", file.display()));
    }
    script.push_str("exit 1\n");
    script
}

/// Hands what the test planted in the place to its caller (the control runs as them before
/// the harness hands the place over for the box).
fn own(place: &Place) {
    if place.caller.uid == nix::unistd::geteuid().as_raw() {
        return;
    }
    let status = std::process::Command::new("chown")
        .arg("-R")
        .arg(format!("{}:{}", place.caller.uid, place.caller.gid))
        .arg(&place.root)
        .status()
        .unwrap();
    assert!(status.success(), "chown {}", place.root.display());
}

/// The pair for an agent program: the control runs `program args` unboxed, the box runs it
/// as the agent's program with `needs`; and the boxed one must have run (said `ran`).
fn probe_program(place: &Place, name: &str, program: &Path, args: &[PathBuf], needs: BoxNeeds) {
    own(place);
    let mut command = format!("exec '{}'", program.display());
    for arg in args {
        command.push_str(&format!(" '{}'", arg.display()));
    }
    let boxing = Boxing {
        needs,
        program: Some(program.to_owned()),
        args: Some(args.iter().map(OsString::from).collect()),
        ..Boxing::default()
    };
    harness::probe_with(place, name, &command, &boxing);
    let boxed = place.boxed_with(&command, &boxing);
    assert!(
        boxed.stdout.starts_with("ran"),
        "{name} as {}: the program did not run in its box\n{boxed}",
        place.caller.name
    );
}

#[test]
fn an_agent_in_dot_local_bin_reads_nothing_else_of_dot_local() {
    harness::for_each_caller(|caller| {
        let place = Place::new(caller);
        let keyring = plant(&place, ".local/share/keyrings/login.keyring", SECRET, 0o600);
        let beside = plant(&place, ".local/share/tool/settings.json", SECRET, 0o600);
        let other = plant(&place, ".local/bin/other-tool", SECRET, 0o700);
        let real = ".local/share/tool/versions/1.2/tool";
        plant(&place, real, &reader(&[keyring, beside, other]), 0o755);
        let program = place.home.join(".local/bin/tool");
        std::os::unix::fs::symlink("../share/tool/versions/1.2/tool", &program).unwrap();
        probe_program(&place, "dot-local", &program, &[], BoxNeeds::default());
    });
}

#[test]
fn a_bare_agent_in_dot_local_bin_reads_nothing_else_of_dot_local() {
    harness::for_each_caller(|caller| {
        let place = Place::new(caller);
        let keyring = plant(&place, ".local/share/keyrings/login.keyring", SECRET, 0o600);
        let other = plant(&place, ".local/bin/other-tool", SECRET, 0o700);
        let program = plant(
            &place,
            ".local/bin/agent",
            &reader(&[keyring, other]),
            0o755,
        );
        probe_program(&place, "dot-local-bare", &program, &[], BoxNeeds::default());
    });
}

#[test]
fn an_agent_in_dot_cargo_bin_reads_no_cargo_credentials() {
    harness::for_each_caller(|caller| {
        let place = Place::new(caller);
        let credentials = plant(&place, ".cargo/credentials.toml", SECRET, 0o600);
        let config = plant(&place, ".cargo/config.toml", SECRET, 0o600);
        let program = plant(
            &place,
            ".cargo/bin/tool",
            &reader(&[credentials, config]),
            0o755,
        );
        probe_program(&place, "dot-cargo", &program, &[], BoxNeeds::default());
    });
}

#[test]
fn a_venv_python_of_the_home_runs_its_script_and_reads_nothing_else_of_the_home() {
    if !Path::new("/usr/bin/python3").is_file() {
        runner_testkit::skip("no /usr/bin/python3 to make a venv with");
        return;
    }
    harness::for_each_caller(|caller| {
        let place = Place::new(caller);
        let venv = place.home.join(".venv");
        let made = std::process::Command::new("/usr/bin/python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv)
            .output()
            .unwrap();
        assert!(made.status.success(), "python3 -m venv: {made:?}");
        let notes = plant(&place, "agent/notes.txt", SECRET, 0o600);
        let config = plant(&place, ".config/agent/token", SECRET, 0o600);
        let key = place.home.join(".ssh/id_rsa");
        let mut script = String::from("import sys\nprint('ran', flush=True)\n");
        for file in [&notes, &config, &key] {
            script.push_str(&format!(
                "try:\n    print(open({:?}).read())\n    sys.exit(0)\nexcept OSError:\n    pass\n",
                file.display().to_string()
            ));
        }
        script.push_str("sys.exit(1)\n");
        let agent = plant(&place, "agent/agent.py", &script, 0o644);
        let needs = BoxNeeds {
            read_only: vec![agent.clone()],
            ..BoxNeeds::default()
        };
        probe_program(
            &place,
            "venv-script",
            &venv.join("bin/python"),
            &[agent],
            needs,
        );
    });
}

#[test]
fn a_copy_of_sh_in_the_home_runs_its_script_and_reads_nothing_else_of_the_home() {
    harness::for_each_caller(|caller| {
        let place = Place::new(caller);
        let sh = place.home.join("tools/sh");
        std::fs::create_dir_all(sh.parent().unwrap()).unwrap();
        std::fs::copy("/bin/sh", &sh).unwrap();
        std::fs::set_permissions(&sh, std::fs::Permissions::from_mode(0o755)).unwrap();
        let notes = plant(&place, "agent/notes.txt", SECRET, 0o600);
        let sibling = plant(&place, "tools/secret.txt", SECRET, 0o600);
        let key = place.home.join(".ssh/id_rsa");
        let script = reader(&[notes, sibling, key]);
        let agent = plant(&place, "agent/agent.sh", &script, 0o644);
        let needs = BoxNeeds {
            read_only: vec![agent.clone()],
            ..BoxNeeds::default()
        };
        probe_program(&place, "home-sh-script", &sh, &[agent], needs);
    });
}
