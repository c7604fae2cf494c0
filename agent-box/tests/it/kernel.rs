//! The kernel layer: host-wide /proc read-only, the seccomp filter, the init out of reach,
//! the watchdog.
//!
//! The probes make raw system calls with Python's ctypes (`/usr/bin/python3`, in the box
//! through `/usr`). A probe that needs a "box init" to aim at takes pid 1 in the box and a
//! child of its own unboxed (there the caller's own process stands for it): the control
//! shows the call works on a process of the caller's, the box that it fails on its init.
//!
//! Entries of the filter without a probe here, and why (each has its unit test in
//! `agent_box::seccomp`): loading kernel code (`kexec_*`, `*_module`: a control would load
//! code into this machine's kernel), `bpf` and `syslog` for the test user (the kernel
//! refuses them to an unprivileged caller here, so no control can succeed), `TIOCLINUX`
//! (needs a virtual console), the x32 ABI (its control needs a kernel built with it), and
//! `clone3`'s `ENOSYS` (no escape: every box that forks shows the C library's fallback).

use std::time::{Duration, Instant};

use runner_contract::BoxNeeds;

use crate::harness::{Boxing, Caller, Place, for_each_caller, probe_with};

/// What a Python probe starts with: raw system calls, "am I in a box", a child to aim at.
const PRELUDE: &str = r#"
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *args):
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *conv)
    return r, ctypes.get_errno()
def in_box():
    try:
        return b"__box-init" in open("/proc/1/cmdline", "rb").read()
    except OSError:
        return False
children = []
def child():
    pid = os.fork()
    if pid == 0:
        # Off the probe's output, so nothing waits for it.
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        time.sleep(60)
        os._exit(0)
    children.append(pid)
    time.sleep(0.2)
    return pid
def readable_address(pid):
    for line in open("/proc/%d/maps" % pid):
        span, perms = line.split()[:2]
        if perms.startswith("r"):
            return int(span.split("-")[0], 16)
    raise SystemExit("no readable mapping")
def done(worked, what, errno=0):
    print(what, "worked" if worked else "refused: " + os.strerror(errno))
    for pid in children:
        os.kill(pid, 9)
    sys.exit(0 if worked else 1)
"#;

/// A shell script that runs `body` after [`PRELUDE`] in Python, the system call numbers of
/// this machine given as `SYS_<name>`.
fn python(body: &str) -> String {
    let numbers = [
        ("ptrace", libc::SYS_ptrace),
        ("process_vm_readv", libc::SYS_process_vm_readv),
        ("io_uring_setup", libc::SYS_io_uring_setup),
        ("keyctl", libc::SYS_keyctl),
        ("bpf", libc::SYS_bpf),
        ("perf_event_open", libc::SYS_perf_event_open),
        ("userfaultfd", libc::SYS_userfaultfd),
        ("clone3", libc::SYS_clone3),
    ]
    .iter()
    .map(|(name, nr)| format!("SYS_{name} = {nr}\n"))
    .collect::<String>();
    format!("/usr/bin/python3 - <<'PY'\n{PRELUDE}\n{numbers}\n{body}\nPY\n")
}

/// A box with the stricter filter, and one for an agent that runs its own sandbox.
fn policies() -> [(&'static str, Boxing); 2] {
    let nested = Boxing {
        needs: BoxNeeds {
            nested_sandbox: true,
            ..BoxNeeds::default()
        },
        ..Boxing::default()
    };
    [("agent", Boxing::default()), ("nested sandbox", nested)]
}

/// Runs the probe `name` for each caller and both filters.
fn probe_everywhere(name: &str, script: &str) {
    for_each_caller(|caller| {
        let place = Place::new(caller);
        for (policy, boxing) in policies() {
            probe_with(&place, &format!("{name} ({policy})"), script, &boxing);
        }
    });
}

/// Says why a probe does not run for `caller`.
fn not_for(caller: &Caller, name: &str, why: &str) {
    eprintln!("{name} as {}: not probed: {why}", caller.name);
}

#[test]
fn ptrace_of_the_boxs_init() {
    probe_everywhere(
        "ptrace of the box's init",
        &python(
            r#"
target = 1 if in_box() else child()
r, e = call(SYS_ptrace, 0x4206, target, 0, 0)  # PTRACE_SEIZE
done(r == 0, "ptrace of %d" % target, e)
"#,
        ),
    );
}

#[test]
fn ptrace_of_a_process_of_the_caller() {
    probe_everywhere(
        "ptrace of a process of the caller",
        &python(
            r#"
target = child()
r, e = call(SYS_ptrace, 0x4206, target, 0, 0)  # PTRACE_SEIZE
done(r == 0, "ptrace of %d" % target, e)
"#,
        ),
    );
}

#[test]
fn process_vm_readv_of_a_process_of_the_caller() {
    probe_everywhere(
        "process_vm_readv",
        &python(
            r#"
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
target = child()
buf = ctypes.create_string_buffer(8)
local = iovec(ctypes.cast(buf, ctypes.c_void_p), 8)
remote = iovec(readable_address(target), 8)
r, e = call(SYS_process_vm_readv, target, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
done(r == 8, "process_vm_readv of %d" % target, e)
"#,
        ),
    );
}

#[test]
fn the_inits_environment() {
    probe_everywhere(
        "/proc/1/environ",
        &python(
            r#"
target = 1 if in_box() else child()
try:
    env = open("/proc/%d/environ" % target, "rb").read()
    done(True, "reading /proc/%d/environ (%d bytes)" % (target, len(env)))
except OSError as e:
    done(False, "reading /proc/%d/environ" % target, e.errno)
"#,
        ),
    );
}

#[test]
fn the_inits_memory() {
    probe_everywhere(
        "/proc/1/mem",
        &python(
            r#"
target = 1 if in_box() else child()
try:
    # Opening is the check (the kernel asks for ptrace's access then); reading follows.
    mem = open("/proc/%d/mem" % target, "rb")
    done(True, "opening /proc/%d/mem" % target)
except OSError as e:
    done(False, "opening /proc/%d/mem" % target, e.errno)
"#,
        ),
    );
}

#[test]
fn io_uring() {
    probe_everywhere(
        "io_uring_setup",
        &python(
            r#"
params = ctypes.create_string_buffer(120)
r, e = call(SYS_io_uring_setup, 4, params)
done(r >= 0, "io_uring_setup", e)
"#,
        ),
    );
}

#[test]
fn the_key_rings() {
    probe_everywhere(
        "keyctl",
        &python(
            r#"
r, e = call(SYS_keyctl, 0, -4, 1)  # KEYCTL_GET_KEYRING_ID of the user's keyring
done(r > 0, "keyctl", e)
"#,
        ),
    );
}

#[test]
fn bpf() {
    let script = python(
        r#"
attr = ctypes.create_string_buffer(128)
ctypes.memmove(attr, (ctypes.c_uint32 * 4)(2, 4, 4, 1), 16)  # an array map of one entry
r, e = call(SYS_bpf, 0, attr, 128)  # BPF_MAP_CREATE
done(r >= 0, "bpf", e)
"#,
    );
    for_each_caller(|caller| {
        if caller.name != "root" && !unprivileged_bpf() {
            return not_for(
                caller,
                "bpf",
                "the kernel refuses bpf to an unprivileged caller here (kernel.unprivileged_bpf_disabled)",
            );
        }
        let place = Place::new(caller);
        for (policy, boxing) in policies() {
            probe_with(&place, &format!("bpf ({policy})"), &script, &boxing);
        }
    });
}

fn unprivileged_bpf() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/unprivileged_bpf_disabled")
        .is_ok_and(|v| v.trim() == "0")
}

#[test]
fn perf_event_open() {
    probe_everywhere(
        "perf_event_open",
        &python(
            r#"
attr = ctypes.create_string_buffer(64)
# PERF_TYPE_SOFTWARE, the size of the first layout, PERF_COUNT_SW_TASK_CLOCK
ctypes.memmove(attr, (ctypes.c_uint32 * 2)(1, 64), 8)
ctypes.memmove(ctypes.byref(attr, 8), (ctypes.c_uint64 * 1)(1), 8)
# disabled, exclude_kernel, exclude_hv: what an unprivileged caller may count
ctypes.memmove(ctypes.byref(attr, 40), (ctypes.c_uint64 * 1)(1 | 32 | 64), 8)
r, e = call(SYS_perf_event_open, attr, 0, -1, -1, 0)
done(r >= 0, "perf_event_open", e)
"#,
        ),
    );
}

#[test]
fn userfaultfd() {
    probe_everywhere(
        "userfaultfd",
        &python(
            r#"
r, e = call(SYS_userfaultfd, os.O_CLOEXEC | 1)  # UFFD_USER_MODE_ONLY: open to anyone
done(r >= 0, "userfaultfd", e)
"#,
        ),
    );
}

#[test]
fn typing_into_a_terminal() {
    probe_everywhere(
        "TIOCSTI",
        &python(
            r#"
import fcntl, termios
master, slave = os.openpty()
name = os.ttyname(slave)
os.close(slave)
pid = os.fork()
if pid == 0:
    os.setsid()
    tty = os.open(name, os.O_RDWR)  # the session's terminal now
    try:
        fcntl.ioctl(tty, termios.TIOCSTI, b"x")
        os._exit(0)
    except OSError as e:
        print("TIOCSTI refused:", e, flush=True)
        os._exit(1)
_, status = os.waitpid(pid, 0)
done(os.waitstatus_to_exitcode(status) == 0, "TIOCSTI")
"#,
        ),
    );
}

#[test]
fn a_nested_user_namespace() {
    for_each_caller(|caller| {
        let place = Place::new(caller);
        probe_with(
            &place,
            "unshare -Ur",
            "unshare -Ur true",
            &Boxing::default(),
        );
    });
}

#[test]
fn a_mount() {
    for_each_caller(|caller| {
        let place = Place::new(caller);
        probe_with(
            &place,
            "a mount in a namespace of its own",
            "mkdir -p m && unshare -Urm mount -t tmpfs none m",
            &Boxing::default(),
        );
    });
}

#[test]
fn a_fresh_proc_in_a_nested_sandbox() {
    // Allowed namespaces and mounts, yet no /proc without the box's masks.
    let [_, (_, nested)] = policies();
    for_each_caller(|caller| {
        let place = Place::new(caller);
        probe_with(
            &place,
            "a fresh /proc in a nested namespace",
            "unshare -Urmpf --mount-proc true",
            &nested,
        );
    });
}

#[test]
fn a_nested_sandbox_still_makes_its_namespaces() {
    // What Codex's own bubblewrap needs: the nested-sandbox box allows it.
    let [_, (_, nested)] = policies();
    for_each_caller(|caller| {
        let place = Place::new(caller);
        let out = place.boxed_with(
            "mkdir -p m && unshare -Urm sh -c 'mount -t tmpfs none m && echo mounted'",
            &nested,
        );
        assert_eq!(out.code, 0, "as {}: {out}", caller.name);
        assert!(out.stdout.contains("mounted"), "as {}: {out}", caller.name);
    });
}

/// Writes the host's `kernel.core_pattern` back as it is: only root can unboxed (the file
/// is root's, 0644), so only a root caller has a control; a user's box maps to the user,
/// who cannot write it anyway.
const CORE_PATTERN: &str = r#"v=$(cat /proc/sys/kernel/core_pattern) && printf '%s\n' "$v" > /proc/sys/kernel/core_pattern"#;

#[test]
fn host_sysctls() {
    for_each_caller(|caller| {
        if caller.name != "root" {
            return not_for(
                caller,
                "host sysctls",
                "only root can write them unboxed (no control)",
            );
        }
        let place = Place::new(caller);
        for (policy, boxing) in policies() {
            probe_with(
                &place,
                &format!("writing kernel.core_pattern ({policy})"),
                CORE_PATTERN,
                &boxing,
            );
        }
        let [_, (_, nested)] = policies();
        probe_with(
            &place,
            "writing kernel.core_pattern from a nested user namespace",
            &format!(
                "unshare -Ur sh -c '{}'",
                CORE_PATTERN.replace('\'', r"'\''")
            ),
            &nested,
        );
    });
}

#[test]
fn every_host_sysctl_is_read_only_in_the_box() {
    for_each_caller(|caller| {
        if caller.name != "root" {
            return not_for(
                caller,
                "writable sysctls",
                "only root has writable sysctls unboxed",
            );
        }
        let place = Place::new(caller);
        // `find -writable` asks the kernel (access(2)), which says a read-only mount.
        let script = "n=$(find /proc/sys -type f -writable 2>/dev/null | wc -l); echo \"$n writable\"; [ \"$n\" -gt 0 ]";
        for (policy, boxing) in policies() {
            probe_with(
                &place,
                &format!("writable sysctls ({policy})"),
                script,
                &boxing,
            );
        }
    });
}

#[test]
fn sysrq_trigger() {
    for_each_caller(|caller| {
        if caller.name != "root" {
            return not_for(
                caller,
                "/proc/sysrq-trigger",
                "only root can write it unboxed",
            );
        }
        if !std::path::Path::new("/proc/sysrq-trigger").exists() {
            return not_for(caller, "/proc/sysrq-trigger", "this kernel has none");
        }
        let place = Place::new(caller);
        // The help key: it only prints the key list to the kernel log.
        probe_with(
            &place,
            "/proc/sysrq-trigger",
            "echo h > /proc/sysrq-trigger",
            &Boxing::default(),
        );
    });
}

#[test]
fn masked_proc_files_cannot_be_read() {
    let masked: Vec<&str> = agent_box::argv::PROC_MASKED
        .iter()
        .copied()
        .filter(|p| std::path::Path::new(p).is_file())
        .collect();
    for_each_caller(|caller| {
        let place = Place::new(caller);
        for path in &masked {
            let out = place.boxed(&format!("cat {path} > /dev/null"));
            assert_ne!(out.code, 0, "{path} as {}: {out}", caller.name);
        }
    });
}

#[test]
fn the_filter_is_on_and_its_memory_file_is_nowhere_in_the_box() {
    for_each_caller(|caller| {
        let place = Place::new(caller);
        for (policy, boxing) in policies() {
            let out = place.boxed_with(
                "grep -E '^(Seccomp|NoNewPrivs):' /proc/1/status /proc/self/status; \
                 ls -l /proc/self/fd/ /proc/$$/fd/",
                &boxing,
            );
            let what = format!("{policy} as {}", caller.name);
            assert_eq!(out.code, 0, "{what}: {out}");
            for pid in ["/proc/1/status", "/proc/self/status"] {
                assert!(
                    out.stdout.contains(&format!("{pid}:Seccomp:\t2")),
                    "{what}: {pid} is filtered\n{out}"
                );
            }
            assert!(!out.stdout.contains("codehands-seccomp"), "{what}: {out}");
        }
    });
}

#[test]
fn clone3_answers_enosys_so_the_c_library_falls_back() {
    for_each_caller(|caller| {
        let place = Place::new(caller);
        let out = place.boxed(&python(
            r#"
r, e = call(SYS_clone3, 0, 0)
print("errno", e)
sys.exit(0 if e == 38 else 1)  # ENOSYS
"#,
        ));
        assert_eq!(out.code, 0, "as {}: {out}", caller.name);
    });
}

#[test]
fn a_box_whose_init_is_stopped_is_ended_by_the_watchdog() {
    for_each_caller(|caller| {
        let place = Place::new(caller);
        let mut outer = place.spawn_boxed("sleep 600", &Boxing::default());
        let init = wait_for_init(outer.id());
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(init as i32),
            nix::sys::signal::Signal::SIGSTOP,
        )
        .unwrap();
        // A hang guard, not a timing: the watchdog acts within seconds.
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = outer.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(outer.id() as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(init as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
                panic!(
                    "as {}: the box with a stopped init never ended",
                    caller.name
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let mut stderr = String::new();
        use std::io::Read;
        outer
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert_eq!(
            status.code(),
            Some(agent_box::watchdog::WATCHDOG_EXIT),
            "as {}: {stderr}",
            caller.name
        );
        assert!(
            stderr.contains("init was stopped"),
            "as {}: {stderr}",
            caller.name
        );
        assert!(ended(init), "as {}: the init is gone", caller.name);
    });
}

/// Whether `pid` has ended (gone, or a zombie its new parent has not reaped yet).
fn ended(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        match agent_box::watchdog::seen(pid) {
            None => return true,
            Some(seen) if seen.state == 'Z' => return true,
            Some(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    false
}

/// The box's init: the child of bubblewrap, the child of the outer process `outer`.
fn wait_for_init(outer: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(init) = child_of(outer).and_then(child_of)
            && child_of(init).is_some()
        {
            // The agent is running: the init is past its start.
            return init;
        }
        assert!(Instant::now() < deadline, "the box never started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn child_of(pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .ok()?
        .split_whitespace()
        .find_map(|p| p.parse().ok())
}
