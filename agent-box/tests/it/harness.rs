//! Callers, places and the probe pair: a box made by the real `codehands-box` as the caller,
//! and the same script run unboxed as the control.

#![allow(dead_code)] // Each module of the suite uses its part of the harness.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use agent_box::BoxInputs;
use agent_box::plan::{BoxPlan, Limits};
use runner_contract::{BoxNeeds, GitDirs};

/// The canary the caller's private key holds: no boxed probe may print it.
pub const CANARY: &str = "CANARY-HOSTILE-KEY-51c2";

/// Who runs codehands.
#[derive(Debug, Clone)]
pub struct Caller {
    /// `root` or `user`.
    pub name: &'static str,
    /// Its uid.
    pub uid: u32,
    /// Its gid.
    pub gid: u32,
}

impl Caller {
    fn is_self(&self) -> bool {
        nix::unistd::geteuid().as_raw() == self.uid
    }

    /// `command` run as this caller: itself when it is the tester, else through `setpriv`
    /// with no supplementary group (root's groups must not come along).
    fn command(&self, program: &Path) -> Command {
        if self.is_self() {
            return Command::new(program);
        }
        let mut command = Command::new("setpriv");
        command
            .arg(format!("--reuid={}", self.uid))
            .arg(format!("--regid={}", self.gid))
            .arg("--clear-groups")
            .arg("--")
            .arg(program);
        command
    }
}

/// The callers to try: as root, root and the test user (`runner_testkit::test_user`);
/// as anyone else, only them.
pub fn callers() -> Vec<Caller> {
    let uid = nix::unistd::geteuid().as_raw();
    let gid = nix::unistd::getegid().as_raw();
    if uid != 0 {
        return vec![Caller {
            name: "user",
            uid,
            gid,
        }];
    }
    let (user_uid, user_gid) = runner_testkit::test_user::test_user();
    vec![
        Caller {
            name: "root",
            uid,
            gid,
        },
        Caller {
            name: "user",
            uid: user_uid,
            gid: user_gid,
        },
    ]
}

/// Runs `each` for every caller, saying which.
pub fn for_each_caller(mut each: impl FnMut(&Caller)) {
    if !box_support() {
        return;
    }
    for caller in callers() {
        eprintln!("-- as {} (uid {})", caller.name, caller.uid);
        each(&caller);
    }
}

/// Whether a box can be made here; else a skip (a failure under CI=true).
pub fn box_support() -> bool {
    match agent_box::probe::support(std::env::var("PATH").ok().as_deref()) {
        Ok(_) => true,
        Err(why) => {
            runner_testkit::skip(&format!("no box on this machine: {why}"));
            false
        }
    }
}

/// The box helper, copied where every caller can run it (a checkout under `/root` is closed
/// to the test user): one copy per build of it, named by its size and time, reused by every
/// later run of the suite instead of left behind by each.
fn helper() -> &'static Path {
    static HELPER: OnceLock<PathBuf> = OnceLock::new();
    HELPER.get_or_init(|| {
        let built = Path::new(env!("CARGO_BIN_EXE_codehands-box"));
        let meta = std::fs::metadata(built).unwrap();
        let stamp = meta
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("codehands-hostile-helper-{}-{stamp}", meta.len()));
        let helper = dir.join("codehands-box");
        if std::fs::metadata(&helper).is_ok_and(|m| m.len() == meta.len()) {
            return helper;
        }
        std::fs::create_dir_all(&dir).unwrap();
        set_mode(&dir, 0o755);
        // Copied beside it, then renamed: another test binary may be copying it too.
        let part = dir.join(format!("codehands-box.{}", std::process::id()));
        std::fs::copy(built, &part).unwrap();
        set_mode(&part, 0o755);
        std::fs::rename(&part, &helper).unwrap();
        helper
    })
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// What a run printed and how it ended.
#[derive(Debug)]
pub struct Outcome {
    /// The exit code (128 + the signal for a signal).
    pub code: i32,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// How a box is made beyond a shell script with no needs.
#[derive(Debug, Clone, Default)]
pub struct Boxing {
    /// What the agent needs.
    pub needs: BoxNeeds,
    /// Variables added to the agent's environment (PATH and HOME are set).
    pub env: Vec<(String, String)>,
    /// The agent's program instead of `sh`.
    pub program: Option<PathBuf>,
    /// Its arguments instead of `-c SCRIPT`.
    pub args: Option<Vec<OsString>>,
}

/// One caller's temp folder: their home (with a private key), a worktree and a run folder,
/// all theirs.
pub struct Place {
    _dir: tempfile::TempDir,
    /// Who it belongs to.
    pub caller: Caller,
    /// The temp folder.
    pub root: PathBuf,
    /// The caller's HOME.
    pub home: PathBuf,
    /// The worktree (a `git worktree` of `root/repo` with [`Place::with_git`]).
    pub worktree: PathBuf,
    /// The run folder (`runs/<id>/`).
    pub run: PathBuf,
    /// The repository's git folders, with [`Place::with_git`].
    pub git: Option<GitDirs>,
}

impl Place {
    /// A place of `caller`'s, without a repository.
    pub fn new(caller: &Caller) -> Self {
        let place = Self::unowned(caller);
        place.give_to_caller();
        place
    }

    /// A place whose worktree is a real `git worktree` of a repository with one commit.
    pub fn with_git(caller: &Caller) -> Self {
        let mut place = Self::unowned(caller);
        let repo = place.root.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::remove_dir(&place.worktree).unwrap();
        let git = |dir: &Path, args: &[&str]| {
            let out = Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .current_dir(dir)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("HOME", &place.home)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
        };
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README.md"), "hello\n").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", "first"]);
        let worktree = place.worktree.display().to_string();
        git(
            &repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "codehands/hostile",
                &worktree,
            ],
        );
        let name = place.worktree.file_name().unwrap();
        place.git = Some(GitDirs {
            common: repo.join(".git"),
            admin: repo.join(".git/worktrees").join(name),
        });
        place.give_to_caller();
        place
    }

    fn unowned(caller: &Caller) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("codehands-hostile")
            .tempdir()
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), format!("{CANARY}\n")).unwrap();
        let worktree = root.join("wt");
        std::fs::create_dir_all(&worktree).unwrap();
        Self {
            _dir: dir,
            caller: caller.clone(),
            run: root.join("run"),
            root,
            home,
            worktree,
            git: None,
        }
    }

    /// Hands every file of the place to its caller.
    fn give_to_caller(&self) {
        if self.caller.is_self() {
            return;
        }
        let status = Command::new("chown")
            .arg("-R")
            .arg(format!("{}:{}", self.caller.uid, self.caller.gid))
            .arg(&self.root)
            .status()
            .unwrap();
        assert!(status.success(), "chown {}", self.root.display());
    }

    /// The environment the agent is given (the box replaces HOME with its private one).
    fn env(&self, extra: &[(String, String)]) -> Vec<(String, String)> {
        let mut env = vec![
            ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
            ("HOME".to_owned(), self.home.display().to_string()),
        ];
        env.extend(extra.iter().cloned());
        env
    }

    /// `sh -c script` in a box over this place.
    pub fn boxed(&self, script: &str) -> Outcome {
        self.boxed_with(script, &Boxing::default())
    }

    /// A box over this place, as `boxing` says, started by the real outer process as the
    /// caller; waits for its end.
    pub fn boxed_with(&self, script: &str, boxing: &Boxing) -> Outcome {
        let output = self.spawn_boxed(script, boxing).wait_with_output().unwrap();
        outcome(output)
    }

    /// Starts a box over this place (see [`Place::boxed_with`]), its output piped.
    pub fn spawn_boxed(&self, script: &str, boxing: &Boxing) -> std::process::Child {
        let support = agent_box::probe::support(std::env::var("PATH").ok().as_deref())
            .expect("a box can be made here");
        let env = self.env(&boxing.env);
        let program = boxing.program.clone().unwrap_or_else(|| "sh".into());
        let args = boxing
            .args
            .clone()
            .unwrap_or_else(|| vec!["-c".into(), script.into()]);
        let session = format!("hostile-{}", std::process::id());
        let mut plan = agent_box::planner::plan(&BoxInputs {
            session: &session,
            run_dir: &self.run,
            worktree: &self.worktree,
            worktree_read_only: false,
            helper: helper(),
            bwrap: &support.bwrap,
            program: &program,
            args: &args,
            env: &env,
            needs: &boxing.needs,
            git: self.git.clone(),
            limits: Limits::default(),
            cgroup: None,
        })
        .unwrap();
        if !self.caller.is_self() {
            // The planner asks who runs it: for the test user, their own ids (as it would
            // give when the user runs codehands).
            plan.uid = self.caller.uid;
            plan.gid = self.caller.gid;
        }
        std::fs::create_dir_all(&self.run).unwrap();
        let file = BoxPlan::file_in(&self.run);
        std::fs::write(&file, plan.to_json()).unwrap();
        self.give_to_caller();
        self.caller
            .command(helper())
            .arg("__box")
            .arg(&file)
            .current_dir(&self.worktree)
            .env_clear()
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap()
    }

    /// The control: `sh -c script` as the caller, unboxed, with the same environment, in
    /// the worktree.
    pub fn unboxed(&self, script: &str) -> Outcome {
        self.unboxed_with(script, &[])
    }

    /// The control with variables added.
    pub fn unboxed_with(&self, script: &str, extra: &[(String, String)]) -> Outcome {
        let output = self
            .caller
            .command(Path::new("/bin/sh"))
            .arg("-c")
            .arg(script)
            .current_dir(&self.worktree)
            .env_clear()
            .envs(self.env(extra))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        outcome(output)
    }
}

fn outcome(output: std::process::Output) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    let status = output.status;
    Outcome {
        code: status
            .code()
            .or_else(|| status.signal().map(|s| 128 + s))
            .unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The pair: the control shows `script` sees the escape (exit 0 unboxed), the box stops it
/// (non-zero boxed, and not because the probe could not run), and no boxed output holds the
/// caller's key.
pub fn probe(place: &Place, name: &str, script: &str) {
    probe_with(place, name, script, &Boxing::default());
}

/// [`probe`] with a box made as `boxing` says (its variables reach the control too).
pub fn probe_with(place: &Place, name: &str, script: &str, boxing: &Boxing) {
    let control = place.unboxed_with(script, &boxing.env);
    assert_eq!(
        control.code, 0,
        "{name} as {}: the control must show the escape unboxed\n{control}",
        place.caller.name
    );
    let boxed = place.boxed_with(script, boxing);
    assert_ne!(
        boxed.code, 0,
        "{name} as {}: the escape worked in the box\n{boxed}",
        place.caller.name
    );
    // 125 is a box that did not start, 126 and 127 a program the box lacks: the probe did
    // not run, which proves nothing.
    assert!(
        !matches!(boxed.code, 125..=127),
        "{name} as {}: the probe did not run in the box\n{boxed}",
        place.caller.name
    );
    assert!(
        !boxed.stdout.contains(CANARY) && !boxed.stderr.contains(CANARY),
        "{name} as {}: the caller's key reached the box\n{boxed}",
        place.caller.name
    );
    eprintln!(
        "{name} as {}: held (boxed exit {})",
        place.caller.name, boxed.code
    );
}
