//! Real boxes: bubblewrap, the outer process and the init of `codehands-box`, with an agent
//! that is a shell script trying what a hostile agent would.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use agent_box::BoxInputs;
use agent_box::plan::{BoxPlan, Limits};
use runner_contract::BoxNeeds as AgentNeeds;

const HELPER: &str = env!("CARGO_BIN_EXE_codehands-box");

/// bubblewrap, or a skip (a failure under CI=true).
fn support() -> Option<agent_box::probe::Support> {
    match agent_box::probe::support(std::env::var("PATH").ok().as_deref()) {
        Ok(support) => Some(support),
        Err(why) => {
            runner_testkit::skip(&format!("no box on this machine: {why}"));
            None
        }
    }
}

struct Place {
    _dir: tempfile::TempDir,
    root: PathBuf,
    caller: PathBuf,
    worktree: PathBuf,
    run: PathBuf,
}

impl Place {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_owned();
        let caller = root.join("caller");
        std::fs::create_dir_all(caller.join(".ssh")).unwrap();
        std::fs::write(caller.join(".ssh/id_rsa"), "PRIVATE KEY canary\n").unwrap();
        let worktree = root.join("wt");
        std::fs::create_dir_all(&worktree).unwrap();
        Self {
            _dir: dir,
            caller,
            worktree,
            run: root.join("run"),
            root,
        }
    }

    /// Runs `script` with `sh` in a box over this place; the box's exit code.
    fn run(
        &self,
        script: &str,
        needs: &AgentNeeds,
        extra_env: &[(&str, String)],
        limits: Limits,
        cgroup: bool,
    ) -> i32 {
        let status = self
            .spawn(script, needs, extra_env, limits, cgroup)
            .wait()
            .unwrap();
        status.code().unwrap_or(-1)
    }

    /// Starts `script` with `sh` in a box over this place, in a process group of its own as
    /// the runner starts it.
    fn spawn(
        &self,
        script: &str,
        needs: &AgentNeeds,
        extra_env: &[(&str, String)],
        limits: Limits,
        cgroup: bool,
    ) -> std::process::Child {
        let support = support().unwrap();
        let mut env = vec![
            ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
            ("HOME".to_owned(), self.caller.display().to_string()),
        ];
        env.extend(extra_env.iter().map(|(k, v)| (k.to_string(), v.clone())));
        let session = format!("test-{}", std::process::id());
        let cgroup = cgroup
            .then(|| agent_box::cgroup::find(&session))
            .transpose()
            .ok()
            .flatten();
        let plan = agent_box::planner::plan(&BoxInputs {
            session: &session,
            run_dir: &self.run,
            worktree: &self.worktree,
            worktree_read_only: false,
            helper: Path::new(HELPER),
            bwrap: &support.bwrap,
            program: Path::new("sh"),
            args: &["-c".into(), script.into()],
            env: &env,
            needs,
            git: None,
            limits,
            cgroup,
        })
        .unwrap();
        let file = BoxPlan::file_in(&self.run);
        std::fs::create_dir_all(&self.run).unwrap();
        std::fs::write(&file, plan.to_json()).unwrap();
        std::process::Command::new(HELPER)
            .arg("__box")
            .arg(&file)
            .current_dir(&self.worktree)
            .env_clear()
            .envs(env)
            .process_group(0)
            .spawn()
            .unwrap()
    }

    /// Waits until the agent has written `file` in the worktree.
    fn wait_for(&self, file: &str) {
        for _ in 0..500 {
            if self.worktree.join(file).exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("{file} never came");
    }

    fn report(&self) -> String {
        std::fs::read_to_string(self.worktree.join("report.txt")).unwrap_or_default()
    }
}

/// A server on 127.0.0.1 that answers each connection's first line with `reply`.
fn server(reply: &'static str) -> u16 {
    server_on("127.0.0.1", reply)
}

/// A server on the loopback address `ip` that answers each connection with `reply`.
fn server_on(ip: &str, reply: &'static str) -> u16 {
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 64];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(reply.as_bytes());
        }
    });
    port
}

#[test]
fn a_box_starts_and_writes_its_worktree() {
    if support().is_none() {
        return;
    }
    let place = Place::new();
    let path = std::env::var("PATH").ok();
    agent_box::probe::try_box(Path::new(HELPER), &place.root, path.as_deref()).unwrap();
}

#[test]
fn a_hostile_agent_reaches_its_worktree_and_its_provider_and_nothing_else() {
    if support().is_none() {
        return;
    }
    let place = Place::new();
    let provider = server("provider-ok\n");
    let attacker = server("attacker-reached\n");
    let host_tmp = format!("/tmp/codehands-box-test-{}", std::process::id());
    let caller = place.caller.display().to_string();
    let repo_side = place.caller.join("pwned");
    let repo_side_text = repo_side.display();
    let script = format!(
        r#"
r=report.txt
cat {caller}/.ssh/id_rsa >> $r 2>/dev/null && echo "read-key" >> $r
ls {caller} >> $r 2>/dev/null && echo "listed-home" >> $r
echo x > {repo_side_text} 2>/dev/null && echo "wrote-outside" >> $r
echo x > /etc/pwned 2>/dev/null && echo "wrote-etc" >> $r
echo x > /pwned 2>/dev/null && echo "wrote-root" >> $r
echo x > {host_tmp} 2>/dev/null && echo "tmp-is-private" >> $r
bash -c 'exec 3<>/dev/tcp/127.0.0.1/{attacker}; echo hi >&3; cat <&3' >> $r 2>/dev/null
getent hosts example.com >> $r 2>/dev/null && echo "resolved" >> $r
bash -c 'exec 3<>/dev/tcp/127.0.0.1/{provider}; echo hi >&3; cat <&3' >> $r 2>/dev/null
cat /proc/1/cmdline | tr '\0' ' ' | grep -q __box-init && echo "own-pid-namespace" >> $r
id -u >> $r
echo "home=$HOME" >> $r
echo done >> $r
"#
    );
    let needs = AgentNeeds {
        base_url_envs: vec!["PROVIDER_BASE_URL".into()],
        ..AgentNeeds::default()
    };
    let url = format!("http://127.0.0.1:{provider}/v1");
    let code = place.run(
        &script,
        &needs,
        &[("PROVIDER_BASE_URL", url)],
        Limits::default(),
        false,
    );
    let report = place.report();
    assert_eq!(code, 0, "{report}");
    for never in [
        "canary",
        "read-key",
        "listed-home",
        "wrote-outside",
        "wrote-etc",
        "wrote-root",
        "attacker-reached",
        "resolved",
    ] {
        assert!(!report.contains(never), "{never}: {report}");
    }
    assert!(report.contains("provider-ok"), "{report}");
    assert!(report.contains("own-pid-namespace"), "{report}");
    assert!(report.contains("tmp-is-private"), "{report}");
    assert!(
        !Path::new(&host_tmp).exists(),
        "the host's /tmp is not the box's"
    );
    assert!(!repo_side.exists());
    assert!(report.contains(&format!("home={}", place.run.join("home").display())));
    assert!(
        !report.lines().any(|l| l == "0"),
        "not root inside: {report}"
    );
    assert!(report.ends_with("done\n"), "{report}");
}

#[test]
fn without_a_base_url_only_the_allowed_hosts_pass_the_proxy() {
    if support().is_none() {
        return;
    }
    let place = Place::new();
    // Not 127.0.0.1, which the box's NO_PROXY sends nowhere but the box itself.
    let allowed = server_on("127.0.0.2", "HTTP/1.0 200 OK\r\n\r\nallowed-ok\n");
    let attacker = server_on("127.0.0.3", "HTTP/1.0 200 OK\r\n\r\nattacker-reached\n");
    let script = format!(
        r#"
r=report.txt
curl -s -m 10 -p http://127.0.0.2:{allowed}/ >> $r 2>&1; echo "allowed exit $?" >> $r
curl -s -m 10 -p http://127.0.0.3:{attacker}/ >> $r 2>&1; echo "attacker exit $?" >> $r
curl -s -m 10 --noproxy '*' http://127.0.0.3:{attacker}/ >> $r 2>&1; echo "direct exit $?" >> $r
"#
    );
    let needs = AgentNeeds {
        hosts: vec![format!("127.0.0.2:{allowed}")],
        ..AgentNeeds::default()
    };
    let code = place.run(&script, &needs, &[], Limits::default(), false);
    let report = place.report();
    assert_eq!(code, 0, "{report}");
    assert!(report.contains("allowed-ok"), "{report}");
    assert!(report.contains("allowed exit 0"), "{report}");
    assert!(!report.contains("attacker-reached"), "{report}");
    assert!(!report.contains("attacker exit 0"), "{report}");
    assert!(!report.contains("direct exit 0"), "{report}");
}

#[test]
fn the_exit_code_is_the_agents() {
    if support().is_none() {
        return;
    }
    let place = Place::new();
    let code = place.run(
        "exit 7",
        &AgentNeeds::default(),
        &[],
        Limits::default(),
        false,
    );
    assert_eq!(code, 7);
}

#[test]
fn the_pids_limit_holds_where_the_machine_gives_a_cgroup() {
    if support().is_none() {
        return;
    }
    if let Err(why) = agent_box::cgroup::find("probe") {
        runner_testkit::skip(&format!("no cgroup for limits here: {why}"));
        return;
    }
    let place = Place::new();
    let limits = Limits {
        memory_bytes: Some(1 << 30),
        pids: Some(24),
    };
    // Each child sleeps, so all of them count at once; a fork the limit refuses is counted
    // out, and the script goes on to report.
    let script = r#"/usr/bin/python3 -c '
import os, time
n = 0
for _ in range(64):
    try:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
    except OSError:
        pass
open("report.txt", "w").write("started %d" % n)
'"#;
    place.run(script, &AgentNeeds::default(), &[], limits, true);
    let report = place.report();
    let started: u32 = report
        .trim()
        .strip_prefix("started ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{report:?}"));
    assert!(
        started < 24,
        "{started} processes started under a limit of 24"
    );
}

#[test]
fn the_box_sees_its_own_cgroup_as_the_root_of_its_cgroup_namespace() {
    if support().is_none() {
        return;
    }
    if let Err(why) = agent_box::cgroup::find("probe") {
        runner_testkit::skip(&format!("no cgroup for limits here: {why}"));
        return;
    }
    let place = Place::new();
    // bubblewrap makes the cgroup namespace from the cgroup it is in: the box's, so nothing
    // above it (its name, its siblings) shows inside; the outer moves bubblewrap in before
    // handing it its arguments (`outer.rs`).
    let script = "cat /proc/self/cgroup > report.txt";
    let code = place.run(script, &AgentNeeds::default(), &[], Limits::default(), true);
    assert_eq!(code, 0);
    let report = place.report();
    assert!(!report.trim().is_empty());
    for line in report.lines() {
        assert!(line.ends_with(":/"), "{line:?} in {report:?}");
    }
}

/// Whether any live process has `needle` in its command line.
fn process_running(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'));
        !zombie
            && String::from_utf8_lossy(&cmd)
                .replace('\0', " ")
                .contains(needle)
    })
}

#[test]
fn a_stop_reaches_the_agent_through_the_init_and_it_may_end_cleanly() {
    if support().is_none() {
        return;
    }
    let place = Place::new();
    let script =
        r#"trap 'echo got-term > report.txt; exit 3' TERM; touch ready; sleep 1000 & wait"#;
    let mut child = place.spawn(
        script,
        &AgentNeeds::default(),
        &[],
        Limits::default(),
        false,
    );
    place.wait_for("ready");
    // What `stop` does first: SIGTERM to the outer process's group.
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3));
    assert_eq!(place.report(), "got-term\n");
}

#[test]
fn killing_the_outer_process_ends_everything_in_the_box() {
    if support().is_none() {
        return;
    }
    let place = Place::new();
    let marker = format!("sleep 100{}", std::process::id() % 1000);
    let script = format!("trap '' TERM; {marker} & touch ready; wait");
    let mut child = place.spawn(
        &script,
        &AgentNeeds::default(),
        &[],
        Limits::default(),
        false,
    );
    place.wait_for("ready");
    assert!(process_running(&marker));
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    child.wait().unwrap();
    for _ in 0..250 {
        if !process_running(&marker) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("{marker} outlived its box");
}

#[test]
fn the_agent_starts_with_no_signal_blocked() {
    if support().is_none() {
        return;
    }
    let place = Place::new();
    place.run(
        "grep SigBlk /proc/self/status > report.txt",
        &AgentNeeds::default(),
        &[],
        Limits::default(),
        false,
    );
    assert_eq!(place.report().trim(), "SigBlk:\t0000000000000000");
}

#[test]
fn the_box_ends_when_its_outer_process_is_killed_alone() {
    if support().is_none() {
        return;
    }
    let place = Place::new();
    let marker = format!("sleep 200{}", std::process::id() % 1000);
    let script = format!("trap '' TERM; {marker} & touch ready; wait");
    let mut child = place.spawn(
        &script,
        &AgentNeeds::default(),
        &[],
        Limits::default(),
        false,
    );
    place.wait_for("ready");
    // Only the outer process, as a crash would end it: bubblewrap and the box are in
    // process groups of their own.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    child.wait().unwrap();
    for _ in 0..250 {
        if !process_running(&marker) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("{marker} outlived its box");
}

/// `BwrapBox` under runner-testkit's `Confinement` suite, the boxes started for real.
#[test]
fn the_local_box_keeps_every_confinements_promises() {
    let Some(support) = support() else { return };
    let boxes = agent_box::BwrapBox::new(Some(PathBuf::from(HELPER)), Some(support.bwrap));
    runner_testkit::confine::all(
        &boxes,
        &runner_testkit::confine::Capabilities {
            engines: vec![runner_contract::Engine::Local],
            runs_shell: vec![runner_contract::Engine::Local],
        },
    );
}

#[test]
fn without_bubblewrap_or_its_helper_the_local_box_says_why_and_boxes_nothing() {
    runner_testkit::confine::refuses_when_unavailable(&agent_box::BwrapBox::new(None, None));
    runner_testkit::confine::refuses_when_unavailable(&agent_box::BwrapBox::new(
        Some(PathBuf::from("/no/such/codehands")),
        Some(PathBuf::from("/usr/bin/bwrap")),
    ));
}
