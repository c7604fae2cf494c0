//! Whether a box works on this machine, and why not: for `run`'s default, `doctor` and tests.

use std::path::{Path, PathBuf};

/// What a machine can do for a box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// The bubblewrap program.
    pub bwrap: PathBuf,
}

/// What to install when bubblewrap is missing.
pub const INSTALL_HINT: &str = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)";

/// bubblewrap on `path_var` (or at `/usr/bin/bwrap`).
pub fn find_bwrap(path_var: Option<&str>) -> Option<PathBuf> {
    std::env::split_paths(path_var.unwrap_or_default())
        .map(|dir| dir.join("bwrap"))
        .chain([PathBuf::from("/usr/bin/bwrap")])
        .find(|p| p.is_file())
}

/// Whether this machine can make a box, without starting one (cheap: for every `run`).
pub fn support(path_var: Option<&str>) -> Result<Support, String> {
    let bwrap = find_bwrap(path_var).ok_or_else(|| {
        format!("the agent's box needs bubblewrap (`bwrap`), which is not on PATH: {INSTALL_HINT}, or pass --isolation none to run the agent unconfined")
    })?;
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_owned());
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Err(
            "user namespaces are turned off here (user.max_user_namespaces = 0): turn them on \
             (sysctl -w user.max_user_namespaces=15000), or pass --isolation none"
                .into(),
        );
    }
    let root = nix::unistd::geteuid().is_root();
    if !root && !setuid(&bwrap) {
        if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
            return Err("unprivileged user namespaces are turned off here \
                 (kernel.unprivileged_userns_clone = 0): turn them on, or pass --isolation none"
                .into());
        }
        if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
            return Err(
                "AppArmor keeps unprivileged programs from making user namespaces here \
                 (kernel.apparmor_restrict_unprivileged_userns = 1): add an AppArmor profile \
                 for bwrap that allows `userns`, or pass --isolation none"
                    .into(),
            );
        }
    }
    Ok(Support { bwrap })
}

fn setuid(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o4000 != 0)
}

/// bubblewrap's version line (`bubblewrap 0.8.0`).
pub fn bwrap_version(bwrap: &Path) -> Option<String> {
    // Nothing of the caller's environment, in the root folder: a program codehands runs
    // for its checks sees none of the caller's secrets (ARCHITECTURE.md, runner-core).
    let out = runner_process::tool::Tool::new(bwrap)
        .arg("--version")
        .env_clear()
        .current_dir("/")
        .run()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_owned()).filter(|v| !v.is_empty())
}

/// Starts a real box with `helper` (a program that runs [`crate::dispatch`]) in a folder
/// under `scratch`, bubblewrap found on `path_var` (the caller's PATH): the agent is `sh`,
/// which writes a file in its worktree. `Ok` when the file arrived, else what went wrong
/// (bubblewrap's words).
pub fn try_box(helper: &Path, scratch: &Path, path_var: Option<&str>) -> Result<(), String> {
    let script = "echo boxed > box-check";
    let out = run_in_box(
        helper,
        scratch,
        path_var,
        Path::new("sh"),
        &["-c".into(), script.into()],
        &runner_contract::BoxNeeds::default(),
    )?;
    if out.code == Some(0) && out.written.trim() == "boxed" {
        Ok(())
    } else {
        Err(format!(
            "a box did not start (exit {:?}): {}",
            out.code,
            out.stderr.trim()
        ))
    }
}

/// What a program run by [`run_in_box`] did.
#[derive(Debug, Clone)]
pub struct BoxRun {
    /// Its exit code.
    pub code: Option<i32>,
    /// What it wrote to stderr.
    pub stderr: String,
    /// What it left in `box-check` in its worktree.
    pub written: String,
}

/// Runs `program args` in a real box over a fresh worktree under `scratch` (removed after),
/// with a caller's home of its own and `needs`; bubblewrap and the box's system folders are
/// found on `path_var`, the caller's PATH (this crate reads no variable).
pub fn run_in_box(
    helper: &Path,
    scratch: &Path,
    path_var: Option<&str>,
    program: &Path,
    args: &[std::ffi::OsString],
    needs: &runner_contract::BoxNeeds,
) -> Result<BoxRun, String> {
    let support = support(path_var)?;
    let dir = fresh_dir(scratch)?;
    let result = run_in(helper, &support.bwrap, &dir, program, args, needs);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn fresh_dir(scratch: &Path) -> Result<PathBuf, String> {
    let dir = scratch.join(format!("box-check-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("wt"))
        .and_then(|()| std::fs::create_dir_all(dir.join("caller")))
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    Ok(dir)
}

fn run_in(
    helper: &Path,
    bwrap: &Path,
    dir: &Path,
    program: &Path,
    args: &[std::ffi::OsString],
    needs: &runner_contract::BoxNeeds,
) -> Result<BoxRun, String> {
    let worktree = dir.join("wt");
    let run_dir = dir.join("run");
    let env = [
        ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
        ("HOME".to_owned(), dir.join("caller").display().to_string()),
    ];
    let plan = crate::planner::plan(&crate::BoxInputs {
        session: "box-check",
        run_dir: &run_dir,
        worktree: &worktree,
        worktree_read_only: false,
        helper,
        bwrap,
        program,
        args,
        env: &env,
        needs,
        git: None,
        limits: crate::Limits::default(),
        cgroup: None,
    })
    .map_err(|e| e.to_string())?;
    let file = crate::BoxPlan::file_in(&run_dir);
    runner_contract::private::PrivateRoot::new(&run_dir)
        .replace_file(&file, &plan.to_json())
        .map_err(|e| e.to_string())?;
    let out = runner_process::tool::Tool::new(helper)
        .arg(crate::OUTER_COMMAND)
        .arg(&file)
        .current_dir(&worktree)
        .env_clear()
        .envs(env)
        .run()
        .map_err(|e| e.to_string())?;
    Ok(BoxRun {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        written: std::fs::read_to_string(worktree.join("box-check")).unwrap_or_default(),
    })
}
