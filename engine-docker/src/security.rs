//! The remote box's kernel-facing settings: who its agent runs as, which capabilities the
//! container holds, and its system call filter (docs/remote-box.md, "The box's kernel
//! settings", has the argument).
//!
//! A box whose agent runs no sandbox of its own keeps Docker's defaults: root with no
//! capability at all, Docker's default seccomp profile (which refuses new namespaces and
//! mounts to a container without `CAP_SYS_ADMIN`). A box whose agent runs its own sandbox
//! (`BoxNeeds::nested_sandbox`: Codex's bubblewrap) needs new user namespaces, mounts and
//! `pivot_root`, which Docker's default profile refuses whatever the capabilities (it has no
//! `pivot_root` at all). That box gets [`profile`] instead, and its agent runs as
//! [`AGENT_UID`]:[`AGENT_GID`] with `no_new_privs` and no capability: the init, root with
//! only `CHOWN`, `SETUID` and `SETGID`, hands the box's folders to that user and drops to
//! it for good before the agent starts (`init.rs`).
//!
//! An engine sets a container's profile (`HostConfig.SecurityOpt`); a swarm sets a service's
//! only from API 1.44 (Docker 25). Below that a nested-sandbox agent is refused on a swarm,
//! with the reason: its sandbox would not start, and running it without is never done.

use bollard::Docker;
use runner_contract::Engine;

use crate::plan::RemotePlan;

/// The user a nested-sandbox box's agent runs as (no name needed: the image may have none).
pub const AGENT_UID: u32 = 1000;
/// Its group.
pub const AGENT_GID: u32 = 1000;
/// The first API version whose services take a seccomp profile (Docker 25).
pub const SERVICE_SECCOMP_API: (usize, usize) = (1, 44);
/// The first API version whose services take `no_new_privs` (Docker 27); below it the init
/// sets the bit itself, which is the same for every process the agent starts.
const SERVICE_NO_NEW_PRIVS_API: (usize, usize) = (1, 46);

/// What the container of a box is given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Hardening {
    /// Capabilities the container keeps (after dropping all): only for the init, which drops
    /// them before the agent starts.
    pub cap_add: Vec<String>,
    /// The seccomp profile (Docker's JSON); `None`: the engine's default.
    pub seccomp: Option<String>,
    /// `uid:gid` the init drops to before it starts the agent.
    pub agent_user: Option<String>,
}

/// The settings of the box of `plan`.
pub(crate) fn hardening(plan: &RemotePlan) -> Hardening {
    if !plan.nested_sandbox {
        return Hardening::default();
    }
    Hardening {
        cap_add: ["CHOWN", "SETUID", "SETGID"].map(str::to_owned).to_vec(),
        seccomp: Some(profile()),
        agent_user: Some(format!("{AGENT_UID}:{AGENT_GID}")),
    }
}

/// Refuses a box the engine `docker` cannot make as [`hardening`] says: a nested-sandbox agent
/// on a swarm whose API predates service seccomp profiles.
pub(crate) fn check_engine(plan: &RemotePlan, docker: &Docker) -> Result<(), String> {
    if !plan.nested_sandbox || plan.engine != Engine::Swarm {
        return Ok(());
    }
    let version = docker.client_version();
    let api = (version.major_version, version.minor_version);
    if api >= SERVICE_SECCOMP_API {
        return Ok(());
    }
    Err(format!(
        "{} runs its own sandbox (bubblewrap: new user namespaces, mounts and pivot_root), \
         which Docker's default seccomp profile refuses, and this swarm (API {}.{}) cannot give \
         a service another profile (that came with API {}.{}, Docker 25): it is not run without \
         its sandbox. Run it with --engine docker (a container takes the profile on any \
         engine), on a swarm of Docker 25 or later, or pick another agent \
         (docs/remote-box.md, \"The box's kernel settings\")",
        plan.program, api.0, api.1, SERVICE_SECCOMP_API.0, SERVICE_SECCOMP_API.1
    ))
}

/// Gives the box container `host` of `plan` its settings ([`hardening`]) on top of what every
/// box has (no capability, `no_new_privs`).
pub(crate) fn apply_to_container(host: &mut bollard::models::HostConfig, plan: &RemotePlan) {
    let hardening = hardening(plan);
    host.cap_drop = Some(vec!["ALL".to_owned()]);
    if !hardening.cap_add.is_empty() {
        host.cap_add = Some(hardening.cap_add);
    }
    let mut options = vec!["no-new-privileges".to_owned()];
    options.extend(
        hardening
            .seccomp
            .map(|profile| format!("seccomp={profile}")),
    );
    host.security_opt = Some(options);
}

/// Gives the job's service `spec` of `plan` its settings ([`hardening`]) as far as the API
/// version `docker` agreed allows ([`check_engine`] refused the rest before).
pub(crate) fn apply_to_service(
    spec: &mut bollard::models::ServiceSpec,
    plan: &RemotePlan,
    docker: &Docker,
) {
    let hardening = hardening(plan);
    let Some(container) = spec
        .task_template
        .as_mut()
        .and_then(|t| t.container_spec.as_mut())
    else {
        return;
    };
    container.capability_drop = Some(vec!["ALL".to_owned()]);
    if !hardening.cap_add.is_empty() {
        container.capability_add = Some(hardening.cap_add.clone());
    }
    container.privileges = service_privileges(&hardening, docker);
}

/// The service's privileges for `hardening` on an engine that speaks `docker`'s API version.
fn service_privileges(
    hardening: &Hardening,
    docker: &Docker,
) -> Option<bollard::models::TaskSpecContainerSpecPrivileges> {
    use bollard::models::{
        TaskSpecContainerSpecPrivileges, TaskSpecContainerSpecPrivilegesSeccomp,
        TaskSpecContainerSpecPrivilegesSeccompModeEnum,
    };
    let profile = hardening.seccomp.clone()?;
    let version = docker.client_version();
    let api = (version.major_version, version.minor_version);
    Some(TaskSpecContainerSpecPrivileges {
        seccomp: Some(TaskSpecContainerSpecPrivilegesSeccomp {
            mode: Some(TaskSpecContainerSpecPrivilegesSeccompModeEnum::CUSTOM),
            profile: Some(profile),
        }),
        no_new_privileges: (api >= SERVICE_NO_NEW_PRIVS_API).then_some(true),
        ..TaskSpecContainerSpecPrivileges::default()
    })
}

/// In the box, before the agent starts (the init, `init.rs`): with `user` (`uid:gid`), hands
/// `dirs` (each with what it holds) to that user but for the `read_only` files (root's, read
/// by the user's group: `0440`, which the agent can neither change nor make writable), and
/// drops to it for good, which clears every capability the init held; then sets
/// `no_new_privs` (no program the agent runs gains a capability or another user) and stacks
/// the local box's system call filter (agent-box's `seccomp.rs`, its nested-sandbox list when
/// `nested`) on the engine's profile.
pub(crate) fn confine_init(
    user: Option<&str>,
    nested: bool,
    dirs: &[&std::path::Path],
    read_only: &[std::path::PathBuf],
) -> Result<(), String> {
    use nix::unistd::{Gid, Uid};
    let target = user
        .map(|user| {
            user.split_once(':')
                .and_then(|(u, g)| Some((u.parse::<u32>().ok()?, g.parse::<u32>().ok()?)))
                .map(|(u, g)| (Uid::from_raw(u), Gid::from_raw(g)))
                .ok_or_else(|| format!("the box's user {user:?} is not UID:GID"))
        })
        .transpose()?;
    let me = Uid::effective();
    if let Some((uid, _)) = target.filter(|&(uid, _)| !me.is_root() && me != uid) {
        return Err(format!("the box runs as {me} and cannot become {uid}"));
    }
    // Started as that user already (an engine that sets the user itself): nothing to hand over.
    if let Some((uid, gid)) = target.filter(|_| me.is_root()) {
        for dir in dirs {
            chown_tree(dir, uid, gid)?;
        }
        for file in read_only {
            use std::os::unix::fs::PermissionsExt;
            std::os::unix::fs::lchown(file, Some(0), Some(gid.as_raw()))
                .and_then(|()| {
                    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o440))
                })
                .map_err(|e| format!("cannot make {} read-only: {e}", file.display()))?;
        }
        let dropped = nix::unistd::setgroups(&[gid])
            .and_then(|()| nix::unistd::setresgid(gid, gid, gid))
            .and_then(|()| nix::unistd::setresuid(uid, uid, uid));
        dropped.map_err(|e| format!("cannot drop to the box's user {uid}:{gid}: {e}"))?;
    }
    nix::sys::prctl::set_no_new_privs()
        .map_err(|e| format!("cannot set no_new_privs in the box: {e}"))?;
    let program = agent_box::seccomp::program(agent_box::seccomp::Policy::for_box(nested))?;
    seccompiler::apply_filter(&program)
        .map_err(|e| format!("cannot install the box's system call filter: {e}"))
}

/// `dir` and everything under it (links themselves, never followed) to `uid:gid`; a `dir`
/// that is not there is skipped.
fn chown_tree(
    dir: &std::path::Path,
    uid: nix::unistd::Uid,
    gid: nix::unistd::Gid,
) -> Result<(), String> {
    let Ok(meta) = dir.symlink_metadata() else {
        return Ok(());
    };
    // Its contents first: the init, root without `DAC_OVERRIDE`, reads a folder of root's
    // only while it is root's.
    if meta.is_dir() {
        let entries =
            std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            chown_tree(&entry.path(), uid, gid)?;
        }
    }
    std::os::unix::fs::lchown(dir, Some(uid.as_raw()), Some(gid.as_raw()))
        .map_err(|e| format!("cannot hand {} to the box's user: {e}", dir.display()))
}

/// The system calls Docker's default profile allows every container (its list, as of Docker
/// 28), less io_uring's three (a second way into most of the kernel, past any filter; the
/// local box refuses them too: agent-box's `seccomp.rs`), the obsolete `epoll_*_old` and the
/// calls only 32-bit ABIs have (the profile is for the native architecture alone). A name the
/// engine's libseccomp does not know is skipped by the runtime.
#[rustfmt::skip]
const ALLOWED: &[&str] = &[
    "accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "capget", "capset", "chdir",
    "chmod", "chown", "clock_adjtime", "clock_getres", "clock_gettime", "clock_nanosleep", "close",
    "close_range", "connect", "copy_file_range", "creat", "dup", "dup2", "dup3", "epoll_create",
    "epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2", "epoll_wait", "eventfd",
    "eventfd2", "execve", "execveat", "exit", "exit_group", "faccessat", "faccessat2", "fadvise64",
    "fallocate", "fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchown", "fchownat", "fcntl",
    "fdatasync", "fgetxattr", "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat",
    "fstatfs", "fsync", "ftruncate", "futex", "futex_waitv", "futimesat", "getcpu", "getcwd",
    "getdents", "getdents64", "getegid", "geteuid", "getgid", "getgroups", "getitimer",
    "getpeername", "getpgid", "getpgrp", "getpid", "getppid", "getpriority", "getrandom",
    "getresgid", "getresuid", "getrlimit", "get_robust_list", "getrusage", "getsid", "getsockname",
    "getsockopt", "gettid", "gettimeofday", "getuid", "getxattr", "inotify_add_watch",
    "inotify_init", "inotify_init1", "inotify_rm_watch", "io_cancel", "ioctl", "io_destroy",
    "io_getevents", "io_pgetevents", "ioprio_get", "ioprio_set", "io_setup", "io_submit", "kill",
    "landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self", "lchown",
    "lgetxattr", "link", "linkat", "listen", "listxattr", "llistxattr", "lremovexattr", "lseek",
    "lsetxattr", "lstat", "madvise", "membarrier", "memfd_create", "memfd_secret", "mincore",
    "mkdir", "mkdirat", "mknod", "mknodat", "mlock", "mlock2", "mlockall", "mmap", "mprotect",
    "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive", "mq_timedsend", "mq_unlink",
    "mremap", "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap",
    "name_to_handle_at", "nanosleep", "newfstatat", "open", "openat", "openat2", "pause",
    "pidfd_open", "pidfd_send_signal", "pipe", "pipe2", "pkey_alloc", "pkey_free", "pkey_mprotect",
    "poll", "ppoll", "prctl", "pread64", "preadv", "preadv2", "prlimit64", "process_mrelease",
    "pselect6", "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat",
    "readv", "recvfrom", "recvmmsg", "recvmsg", "remap_file_pages", "removexattr", "rename",
    "renameat", "renameat2", "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending",
    "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait",
    "rt_tgsigqueueinfo", "sched_getaffinity", "sched_getattr", "sched_getparam",
    "sched_get_priority_max", "sched_get_priority_min", "sched_getscheduler",
    "sched_rr_get_interval", "sched_setaffinity", "sched_setattr", "sched_setparam",
    "sched_setscheduler", "sched_yield", "seccomp", "select", "semctl", "semget", "semop",
    "semtimedop", "sendfile", "sendmmsg", "sendmsg", "sendto", "setfsgid", "setfsuid", "setgid",
    "setgroups", "setitimer", "setpgid", "setpriority", "setregid", "setresgid", "setresuid",
    "setreuid", "setrlimit", "set_robust_list", "setsid", "setsockopt", "set_tid_address",
    "setuid", "setxattr", "shmat", "shmctl", "shmdt", "shmget", "shutdown", "sigaltstack",
    "signalfd", "signalfd4", "socketpair", "splice", "stat", "statfs", "statx", "symlink",
    "symlinkat", "sync", "sync_file_range", "syncfs", "sysinfo", "tee", "tgkill", "time",
    "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime", "timer_settime",
    "timerfd_create", "timerfd_gettime", "timerfd_settime", "times", "tkill", "truncate", "umask",
    "uname", "unlink", "unlinkat", "utime", "utimensat", "utimes", "vfork", "vmsplice", "wait4",
    "waitid", "write", "writev",
    // x86_64's own (Docker allows them there); an unknown name elsewhere is skipped.
    "arch_prctl", "modify_ldt", "get_thread_area", "set_thread_area",
];

/// What a nested sandbox needs on top: new namespaces (`clone` with any flags, `unshare`,
/// `setns`) and mounts, `pivot_root` among them. Each acts only on namespaces the caller is
/// privileged over, which for a process without capabilities means the user namespaces it
/// made itself.
#[rustfmt::skip]
const NESTED: &[&str] = &[
    "clone", "unshare", "setns", "mount", "umount2", "pivot_root", "move_mount", "open_tree",
    "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
];

/// The box's seccomp profile for a nested-sandbox agent, in Docker's JSON: refuse by default
/// (`EPERM`), allow [`ALLOWED`] and [`NESTED`]; `clone3` answers `ENOSYS` (its flags are in
/// memory a filter cannot read: the C library then uses `clone`); `socket` refuses `AF_VSOCK`
/// and `personality` takes only the values Docker's profile allows, as there. Only the
/// engine's native architecture: a 32-bit or x32 call is not on any list.
pub fn profile() -> String {
    let rule = |names: &[&str]| serde_json::json!({ "names": names, "action": "SCMP_ACT_ALLOW" });
    let mut syscalls = vec![rule(ALLOWED), rule(NESTED)];
    syscalls.push(serde_json::json!({
        "names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": libc::ENOSYS,
    }));
    const AF_VSOCK: u64 = 40;
    syscalls.push(serde_json::json!({
        "names": ["socket"], "action": "SCMP_ACT_ALLOW",
        "args": [{ "index": 0, "value": AF_VSOCK, "op": "SCMP_CMP_NE" }],
    }));
    // PER_LINUX, UNAME26, PER_LINUX32, UNAME26|PER_LINUX32, and the query 0xffffffff.
    for value in [0u64, 8, 0x20000, 0x20008, 0xffff_ffff] {
        syscalls.push(serde_json::json!({
            "names": ["personality"], "action": "SCMP_ACT_ALLOW",
            "args": [{ "index": 0, "value": value, "op": "SCMP_CMP_EQ" }],
        }));
    }
    serde_json::json!({
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": libc::EPERM,
        "architectures": [native_arch()],
        "syscalls": syscalls,
    })
    .to_string()
}

/// libseccomp's name of this machine's architecture (a remote engine's nodes are the same:
/// the image holds this machine's binaries).
fn native_arch() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "SCMP_ARCH_AARCH64",
        "riscv64" => "SCMP_ARCH_RISCV64",
        _ => "SCMP_ARCH_X86_64",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nested_profile_opens_namespaces_and_mounts_and_nothing_that_reads_another_process() {
        let profile: serde_json::Value = serde_json::from_str(&profile()).unwrap();
        assert_eq!(profile["defaultAction"], "SCMP_ACT_ERRNO");
        let allowed: Vec<&str> = profile["syscalls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["action"] == "SCMP_ACT_ALLOW")
            .flat_map(|r| r["names"].as_array().unwrap())
            .map(|n| n.as_str().unwrap())
            .collect();
        for needed in ["unshare", "clone", "mount", "pivot_root", "execve"] {
            assert!(allowed.contains(&needed), "{needed}");
        }
        for refused in [
            "ptrace",
            "process_vm_readv",
            "io_uring_setup",
            "bpf",
            "perf_event_open",
            "keyctl",
            "userfaultfd",
            "kexec_load",
            "init_module",
            "clone3",
        ] {
            assert!(!allowed.contains(&refused), "{refused}");
        }
    }
}
