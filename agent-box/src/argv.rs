//! The bubblewrap command line of a box, derived from its plan and nothing else.
//!
//! Pure: each flag has its unit test, the way the test box's flag sets do.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::plan::{BoxPlan, LoginHow, SOCKETS_INSIDE};

/// The host name inside every box.
pub const HOSTNAME: &str = "codehands-box";

/// The generated `/etc` files the box gets instead of the host's (`etc.rs`).
pub const GENERATED_ETC: &[&str] = &["passwd", "group", "hosts"];

/// Host-wide files and folders of `/proc` every box gets read-only (Docker's list): kernel
/// settings, the magic SysRq key, bus, file system and interrupt settings.
///
/// Why, whatever the caller: in a box made by a root caller the agent's uid maps to host
/// uid 0 (the box's uid must map to the caller, who owns the worktree and the private
/// home), so every root-owned writable file of `/proc` is writable to it, capabilities or
/// not: `/proc/sys/kernel/core_pattern` runs a program as host root at the next crash. The
/// mapping stays; `/proc` holds instead. A read-only bind over each, after `--proc`, is
/// locked into any namespace the agent makes (its kernel refuses to unmount it or make it
/// writable), and while it is there the kernel refuses a fresh `/proc` anywhere in the box.
pub const PROC_READ_ONLY: &[&str] = &[
    "/proc/sys",
    "/proc/sysrq-trigger",
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
];

/// Files and folders of `/proc` every box gets masked (Docker's list): the kernel's memory,
/// the key rings, timers and scheduler internals, devices. A file becomes the host's
/// `/dev/null` on a mount without devices (opening it fails), a folder an empty read-only
/// one.
pub const PROC_MASKED: &[&str] = &[
    "/proc/kcore",
    "/proc/keys",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/latency_stats",
    "/proc/sched_debug",
    "/proc/acpi",
    "/proc/asound",
    "/proc/scsi",
];

/// Which of [`PROC_MASKED`] this kernel's `/proc` has (bubblewrap cannot mount over a path
/// a fresh `/proc` lacks, and kernels differ), and which are folders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostProc {
    /// Each path there, and whether it is a folder.
    pub masked: Vec<(PathBuf, bool)>,
}

impl HostProc {
    /// What the host's `/proc` has (the box's is a fresh one of the same kernel).
    pub fn read() -> Self {
        let masked = PROC_MASKED
            .iter()
            .filter_map(|path| {
                let meta = std::fs::symlink_metadata(path).ok()?;
                Some((PathBuf::from(path), meta.is_dir()))
            })
            .collect();
        Self { masked }
    }
}

/// What the box's command line takes from the host at the box's start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Host {
    /// Its `/proc`.
    pub proc: HostProc,
    /// The entries of the plan's `/etc` selection that are folders ([`crate::etc::host_folders`]):
    /// bound over the box's `/etc`, whose files are copies.
    pub etc_folders: Vec<PathBuf>,
}

/// The descriptors bubblewrap inherits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptors {
    /// The outer process's pipe that the init watches.
    pub outer: i32,
    /// The system call filter ([`crate::seccomp`]), which bubblewrap reads and closes before
    /// it starts the init.
    pub seccomp: i32,
}

/// Every argument of `bwrap`, then `--`, then the init (`helper __box-init …`), for the
/// descriptors `fds` and what `host` has.
pub fn bwrap_args(plan: &BoxPlan, fds: Descriptors, host: &Host) -> Vec<OsString> {
    let mut args = Args::default();
    // Namespaces: user, pid, network, ipc, uts and cgroup; the user namespace is required
    // (`--unshare-all` alone only tries it).
    args.flag("--unshare-all");
    args.flag("--unshare-user");
    // The init is pid 1 (it reaps orphans and passes a stop on to everything in the box);
    // when it ends, the kernel ends every process in the namespace.
    args.flag("--as-pid-1");
    // No TIOCSTI into a terminal, no signal to the caller's process group.
    args.flag("--new-session");
    // bwrap's parent is the outer box process (itself detached from `codehands run`): when
    // it dies, so does the box, so a stop that kills the outer leaves nothing behind. (The
    // init also watches the outer's pipe: a parent-death signal set up after the outer died
    // never comes.)
    args.flag("--die-with-parent");
    args.flag("--cap-drop").arg("ALL");
    args.flag("--uid").arg(plan.uid.to_string());
    args.flag("--gid").arg(plan.gid.to_string());
    args.flag("--hostname").arg(HOSTNAME);
    // Installed last, after bubblewrap's own set-up, for the init and all it starts.
    args.flag("--seccomp").arg(fds.seccomp.to_string());

    for system in &plan.system {
        match &system.link {
            Some(target) => {
                args.two("--symlink", target, &system.path);
            }
            None => args.same("--ro-bind", &system.path),
        }
    }
    // `/etc` is one read-only folder the outer filled (`etc.rs`: the generated files and
    // copies of the host's selected files), with the selected host folders over it: one
    // mount where there was one per file, each of which made bubblewrap read the mount
    // table again.
    args.two("--ro-bind", &plan.etc_dir(), Path::new("/etc"));
    for folder in &host.etc_folders {
        args.same("--ro-bind", folder);
    }
    // A fresh /tmp for each box, before any bind: a bound path under the host's /tmp (a
    // worktree in a temp folder) gets its mount point there, never in a folder the agent
    // wrote in an earlier turn. The session's TMPDIR, kept across turns, is `plan.tmp`.
    args.flag("--tmpfs").arg("/tmp");
    for tool in &plan.tools {
        args.same("--ro-bind", tool);
    }
    for link in &plan.links {
        args.two("--symlink", &link.target, &link.path);
    }
    // Once: a tool folder that holds it (or the tool that is it, as for the fake agent)
    // shows it already, read-only; another mount would only cost bubblewrap's set-up.
    if !plan.tools.iter().any(|tool| plan.helper.starts_with(tool)) {
        args.same("--ro-bind", &plan.helper);
    }
    if let Some(git) = &plan.git {
        args.same("--ro-bind", &git.common);
        args.same("--bind", &git.admin);
    }
    let worktree_bind = if plan.worktree_read_only {
        "--ro-bind"
    } else {
        "--bind"
    };
    args.same(worktree_bind, &plan.worktree);
    // After the worktree: one of them is its `.git` file, which a bind of the worktree
    // itself would cover.
    for file in plan.git.iter().flat_map(|git| &git.keep) {
        args.same("--ro-bind", file);
    }
    // The checkout's dependency folders, read-only over their empty places in the
    // worktree (after it, which would cover them).
    for dep in &plan.deps {
        args.two("--ro-bind", &dep.source, &dep.dest);
    }
    args.same("--bind", &plan.home);
    for login in plan.login.iter().filter(|l| l.how == LoginHow::ReadOnly) {
        args.two("--ro-bind", &login.source, &login.dest);
    }
    args.same("--bind", &plan.tmp);
    args.two("--ro-bind", &plan.sockets_dir(), Path::new(SOCKETS_INSIDE));
    args.flag("--proc").arg("/proc");
    // Host-wide /proc read-only and masked, after the fresh /proc (see PROC_READ_ONLY).
    for path in PROC_READ_ONLY {
        args.same("--ro-bind-try", Path::new(path));
    }
    for (path, is_dir) in &host.proc.masked {
        if *is_dir {
            args.flag("--tmpfs").arg(path);
            args.flag("--remount-ro").arg(path);
        } else {
            args.two("--ro-bind", Path::new("/dev/null"), path);
        }
    }
    args.flag("--dev").arg("/dev");
    args.flag("--tmpfs").arg("/dev/shm");
    // Nothing else is writable: a write outside the bound folders fails instead of landing
    // on bwrap's scratch root.
    args.flag("--remount-ro").arg("/");
    args.flag("--chdir").arg(plan.worktree.as_os_str());
    args.flag("--");
    args.arg(plan.helper.as_os_str());
    args.arg("__box-init");
    for arg in crate::init::init_args(plan, fds.outer) {
        args.arg(arg);
    }
    args.0
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn flag(&mut self, flag: &str) -> &mut Self {
        self.0.push(flag.into());
        self
    }

    fn arg(&mut self, arg: impl Into<OsString>) -> &mut Self {
        self.0.push(arg.into());
        self
    }

    /// `flag source dest`.
    fn two(&mut self, flag: &str, source: &Path, dest: &Path) -> &mut Self {
        self.flag(flag);
        self.arg(source.as_os_str());
        self.arg(dest.as_os_str())
    }

    /// `flag path path`: the same path inside as outside.
    fn same(&mut self, flag: &str, path: &Path) {
        self.two(flag, path, path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::sample;

    /// A host whose /proc has a masked file and a masked folder, and whose /etc selection
    /// has the folder /etc/ssl.
    fn host() -> Host {
        Host {
            proc: HostProc {
                masked: vec![("/proc/keys".into(), false), ("/proc/acpi".into(), true)],
            },
            etc_folders: vec!["/etc/ssl".into()],
        }
    }

    fn args() -> Vec<String> {
        args_of(&sample())
    }

    /// The flags before `--` (bwrap's own), so the agent's arguments never count.
    fn own() -> Vec<String> {
        let all = args();
        let end = all.iter().position(|a| a == "--").unwrap();
        all[..end].to_vec()
    }

    /// Whether `window` appears in bwrap's own flags.
    fn has(window: &[&str]) -> bool {
        own().windows(window.len()).any(|w| w == window)
    }

    /// bwrap's flags for `plan`, as text.
    fn args_of(plan: &BoxPlan) -> Vec<String> {
        let fds = Descriptors {
            outer: 9,
            seccomp: 10,
        };
        bwrap_args(plan, fds, &host())
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    fn position(window: &[&str]) -> usize {
        own()
            .windows(window.len())
            .position(|w| w == window)
            .unwrap_or_else(|| panic!("{window:?} missing"))
    }

    #[test]
    fn a_read_only_phase_binds_the_worktree_read_only() {
        let wt = "/home/me/.codehands/worktrees/0123456789ab/0b5e2a1c";
        assert!(has(&["--bind", wt, wt]), "writable by default");
        let mut plan = sample();
        plan.worktree_read_only = true;
        let args = args_of(&plan);
        let ro = ["--ro-bind", wt, wt].map(str::to_owned);
        let rw = ["--bind", wt, wt].map(str::to_owned);
        assert!(args.windows(3).any(|w| w == ro), "{args:?}");
        assert!(!args.windows(3).any(|w| w == rw), "{args:?}");
    }

    #[test]
    fn every_namespace_is_new_and_the_user_namespace_required() {
        assert!(has(&["--unshare-all"]));
        assert!(has(&["--unshare-user"]), "--unshare-all only tries it");
    }

    #[test]
    fn the_init_is_pid_1_of_its_own_pid_namespace() {
        assert!(has(&["--as-pid-1"]));
    }

    #[test]
    fn the_box_is_a_session_of_its_own() {
        assert!(has(&["--new-session"]));
    }

    #[test]
    fn the_box_dies_with_the_outer_process() {
        assert!(has(&["--die-with-parent"]));
    }

    #[test]
    fn no_capability_and_no_root_inside() {
        assert!(has(&["--cap-drop", "ALL"]));
        assert!(has(&["--uid", "1000"]));
        assert!(has(&["--gid", "1000"]));
    }

    #[test]
    fn the_host_name_is_the_boxs_own() {
        assert!(has(&["--hostname", HOSTNAME]));
    }

    #[test]
    fn system_folders_are_read_only_or_the_hosts_links() {
        assert!(has(&["--ro-bind", "/usr", "/usr"]));
        assert!(has(&["--symlink", "usr/lib", "/lib"]));
    }

    #[test]
    fn a_helper_that_a_tool_folder_shows_is_not_bound_again() {
        let helper = "/opt/codehands/bin/codehands";
        let mut plan = sample();
        plan.tools.push("/opt/codehands".into());
        let args = args_of(&plan);
        let tool = ["--ro-bind", "/opt/codehands", "/opt/codehands"].map(str::to_owned);
        let again = ["--ro-bind", helper, helper].map(str::to_owned);
        assert!(args.windows(3).any(|w| w == tool), "{args:?}");
        assert!(!args.windows(3).any(|w| w == again), "{args:?}");
    }

    #[test]
    fn etc_is_the_boxs_own_folder_read_only_with_the_selected_host_folders_over_it() {
        let state = "/home/me/.codehands/runs/S/box/etc";
        let etc = position(&["--ro-bind", state, "/etc"]);
        assert!(etc < position(&["--ro-bind", "/etc/ssl", "/etc/ssl"]));
        assert!(
            !has(&["--ro-bind", "/etc", "/etc"]),
            "never the host's /etc whole"
        );
        assert!(!has(&["--bind", state, "/etc"]));
        // The files are copies in that folder (`etc.rs`), not binds.
        assert!(!own().iter().any(|a| a == "/etc/ld.so.cache"));
    }

    #[test]
    fn tools_and_the_helper_are_read_only() {
        assert!(has(&["--ro-bind", "/opt/agent", "/opt/agent"]));
        assert!(has(&[
            "--ro-bind",
            "/opt/codehands/bin/codehands",
            "/opt/codehands/bin/codehands"
        ]));
    }

    #[test]
    fn the_hosts_links_to_tools_are_made_again() {
        let tool = position(&["--ro-bind", "/opt/agent", "/opt/agent"]);
        let link = position(&["--symlink", ".agent-1.2.3", "/home/me/.cache/agent"]);
        assert!(tool < link);
    }

    #[test]
    fn git_common_read_only_and_the_worktrees_own_folder_writable_over_it() {
        let common = position(&["--ro-bind", "/home/me/repo/.git", "/home/me/repo/.git"]);
        let admin = "/home/me/repo/.git/worktrees/0b5e2a1c";
        let own = position(&["--bind", admin, admin]);
        assert!(
            common < own,
            "the writable folder is mounted over the read-only one"
        );
        let gitdir = format!("{admin}/gitdir");
        assert!(
            own < position(&["--ro-bind", &gitdir, &gitdir]),
            "its registration stays"
        );
    }

    #[test]
    fn the_worktrees_git_file_stays_read_only_over_the_worktree() {
        let wt = "/home/me/.codehands/worktrees/0123456789ab/0b5e2a1c";
        let dot_git = format!("{wt}/.git");
        assert!(position(&["--bind", wt, wt]) < position(&["--ro-bind", &dot_git, &dot_git]));
    }

    #[test]
    fn the_worktree_home_and_tmp_are_writable_at_their_own_paths() {
        let wt = "/home/me/.codehands/worktrees/0123456789ab/0b5e2a1c";
        assert!(has(&["--bind", wt, wt]));
        let home = "/home/me/.codehands/runs/S/home";
        assert!(has(&["--bind", home, home]));
        let tmp = "/home/me/.codehands/runs/S/tmp";
        assert!(has(&["--bind", tmp, tmp]));
    }

    #[test]
    fn tmp_is_fresh_and_comes_before_every_bind_that_may_lie_under_it() {
        let tmpfs = position(&["--tmpfs", "/tmp"]);
        let first_bind = own().iter().position(|a| a == "--bind").unwrap();
        assert!(tmpfs < first_bind);
        assert!(tmpfs < position(&["--ro-bind", "/opt/agent", "/opt/agent"]));
    }

    #[test]
    fn login_files_read_only_over_the_home_and_copies_not_bound() {
        let home = position(&[
            "--bind",
            "/home/me/.codehands/runs/S/home",
            "/home/me/.codehands/runs/S/home",
        ]);
        let login = position(&[
            "--ro-bind",
            "/home/me/.agent/credentials.json",
            "/home/me/.codehands/runs/S/home/.agent/credentials.json",
        ]);
        assert!(home < login);
        assert!(!own().iter().any(|a| a == "/home/me/.agent.json"));
    }

    #[test]
    fn the_sockets_are_read_only_at_a_short_path() {
        assert!(has(&[
            "--ro-bind",
            "/home/me/.codehands/runs/S/box/sockets",
            SOCKETS_INSIDE
        ]));
    }

    #[test]
    fn a_fresh_proc_and_dev() {
        assert!(has(&["--proc", "/proc"]));
        assert!(has(&["--dev", "/dev"]));
        assert!(has(&["--tmpfs", "/dev/shm"]));
    }

    #[test]
    fn the_system_call_filter_is_handed_to_bubblewrap() {
        assert!(has(&["--seccomp", "10"]));
    }

    #[test]
    fn host_wide_proc_files_are_read_only_over_the_fresh_proc() {
        let proc = position(&["--proc", "/proc"]);
        for path in PROC_READ_ONLY {
            let bind = position(&["--ro-bind-try", path, path]);
            assert!(proc < bind, "{path} is bound after /proc is mounted");
        }
    }

    #[test]
    fn sysctls_and_sysrq_are_among_the_read_only() {
        assert!(PROC_READ_ONLY.contains(&"/proc/sys"));
        assert!(PROC_READ_ONLY.contains(&"/proc/sysrq-trigger"));
    }

    #[test]
    fn a_masked_file_is_dev_null_over_the_fresh_proc() {
        let proc = position(&["--proc", "/proc"]);
        assert!(proc < position(&["--ro-bind", "/dev/null", "/proc/keys"]));
    }

    #[test]
    fn a_masked_folder_is_an_empty_read_only_one() {
        let proc = position(&["--proc", "/proc"]);
        let tmpfs = position(&["--tmpfs", "/proc/acpi"]);
        let read_only = position(&["--remount-ro", "/proc/acpi"]);
        assert!(proc < tmpfs && tmpfs < read_only);
    }

    #[test]
    fn what_the_hosts_proc_lacks_is_not_mounted_over() {
        assert!(!own().iter().any(|a| a == "/proc/kcore"));
    }

    #[test]
    fn the_hosts_proc_is_read_for_the_masks_it_has() {
        let host = HostProc::read();
        for path in PROC_MASKED {
            let there = std::fs::symlink_metadata(path).ok();
            let listed = host.masked.iter().find(|(p, _)| p == Path::new(path));
            assert_eq!(listed.is_some(), there.is_some(), "{path}");
            if let (Some((_, is_dir)), Some(meta)) = (listed, there) {
                assert_eq!(*is_dir, meta.is_dir(), "{path}");
            }
        }
    }

    #[test]
    fn the_root_is_read_only_after_every_mount() {
        let remount = position(&["--remount-ro", "/"]);
        let last_mount = own()
            .iter()
            .rposition(|a| a.starts_with("--bind") || a.starts_with("--ro-bind") || a == "--dev")
            .unwrap();
        assert!(last_mount < remount);
    }

    #[test]
    fn the_agent_starts_in_the_worktree() {
        assert!(has(&[
            "--chdir",
            "/home/me/.codehands/worktrees/0123456789ab/0b5e2a1c"
        ]));
    }

    #[test]
    fn nothing_of_the_callers_home_but_what_the_plan_names() {
        for arg in own() {
            if arg.starts_with("/home/me") {
                // The link holds nothing: it names a tool bound elsewhere.
                let named = arg.starts_with("/home/me/.codehands/")
                    || arg.starts_with("/home/me/repo/.git")
                    || arg == "/home/me/.agent/credentials.json"
                    || arg == "/home/me/.cache/agent";
                assert!(named, "{arg} is bound");
            }
        }
        assert!(!own().iter().any(|a| a == "/home/me"));
    }

    #[test]
    fn the_command_is_the_init_then_the_agent() {
        let all = args();
        let end = all.iter().position(|a| a == "--").unwrap();
        assert_eq!(all[end + 1], "/opt/codehands/bin/codehands");
        assert_eq!(all[end + 2], "__box-init");
        assert_eq!(
            all[end + 3..end + 5],
            ["--outer-fd".to_owned(), "9".to_owned()]
        );
        assert!(all.ends_with(&[
            "/opt/agent/bin/agent".into(),
            "agent".into(),
            "-p".into(),
            "--json".into()
        ]));
    }

    #[test]
    fn no_bypass_of_namespaces_or_environment_on_argv() {
        for flag in [
            "--share-net",
            "--setenv",
            "--bind-fd",
            "--userns",
            "--cap-add",
        ] {
            assert!(!own().iter().any(|a| a == flag), "{flag}");
        }
    }
}
