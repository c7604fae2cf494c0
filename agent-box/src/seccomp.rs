//! The box's system call filter: the calls a box refuses, as data ([`ENTRIES`]), compiled
//! to one classic-BPF program that bubblewrap installs last, after its own set-up
//! (`--seccomp FD`), for the init and everything it starts.
//!
//! Namespaces, mounts and a dropped capability set already keep most of the kernel out of
//! reach; the filter closes what stays open to a process without capabilities: reading or
//! steering another process (ptrace, `process_vm_*`), kernel interfaces with a long record
//! of escapes (io_uring, bpf, perf, userfaultfd, the key rings), new namespaces (a nested
//! user namespace is root over itself) and mounts, loading kernel code, and the two
//! terminal requests that type into another program's input. A refused call answers
//! `EPERM` (or `ENOSYS` for `clone3`), never a kill, so a program that tries one falls back
//! the way it does on a kernel without it.
//!
//! An agent that runs its own sandbox inside the box (`BoxNeeds::nested_sandbox`, Codex's
//! bubblewrap) keeps new namespaces and mounts ([`Entry::nested`]); the rest stays refused.
//! `/proc` stays read-only for it too: the box's masks over `/proc` are locked into every
//! namespace it makes, and the kernel refuses it a fresh `/proc` while they are there.
//!
//! Built with `seccompiler` (one filter per answer), then chained into one program:
//! first a guard that refuses the x32 ABI on x86_64 (its calls carry the x86_64
//! architecture with bit 30 set in their number, which no rule of the list would match),
//! then the filters. A call of another architecture (i386's `int 0x80`) ends the process:
//! `seccompiler`'s check, and no agent runs 32-bit code.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

/// The name of the memory file the outer process hands the program in (`memfd:` and this
/// in `/proc/<pid>/fd`): a process in the box never holds it.
pub const MEMFD_NAME: &std::ffi::CStr = c"codehands-seccomp";

/// How a refused call answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Answer {
    /// `EPERM`: not allowed here.
    Refused,
    /// `ENOSYS`: as if the kernel had no such call (the caller falls back to an older one).
    Missing,
}

impl Answer {
    /// The error number the call returns.
    pub fn errno(self) -> u32 {
        match self {
            Self::Refused => libc::EPERM as u32,
            Self::Missing => libc::ENOSYS as u32,
        }
    }
}

/// Which calls of a system call an entry refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Every call.
    Always,
    /// Calls whose argument `arg` has any of these bits set (each with its name).
    AnyFlag {
        /// The argument's index.
        arg: u8,
        /// The bits, each refused on its own.
        flags: &'static [(&'static str, u64)],
    },
    /// Calls whose argument `arg`, as the kernel reads it (its low 32 bits: an ioctl's
    /// request is an `unsigned int`), is one of these values.
    ArgIs {
        /// The argument's index.
        arg: u8,
        /// The values, each with its name.
        values: &'static [(&'static str, u64)],
    },
}

/// One refused system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Its name, as `man 2` spells it.
    pub name: &'static str,
    /// Its number on this architecture.
    pub nr: i64,
    /// Which of its calls are refused.
    pub when: When,
    /// How they answer.
    pub answer: Answer,
    /// Allowed for an agent that runs its own sandbox in the box (namespaces and mounts).
    pub nested: bool,
    /// Why it is refused.
    pub why: &'static str,
}

/// The namespace flags of `unshare` and `clone`: each makes a namespace the caller is
/// root of (with a new user namespace) or needs one.
const CLONE_NEW: &[(&str, u64)] = &[
    ("CLONE_NEWUSER", libc::CLONE_NEWUSER as u64),
    ("CLONE_NEWNS", libc::CLONE_NEWNS as u64),
    ("CLONE_NEWPID", libc::CLONE_NEWPID as u64),
    ("CLONE_NEWNET", libc::CLONE_NEWNET as u64),
    ("CLONE_NEWUTS", libc::CLONE_NEWUTS as u64),
    ("CLONE_NEWIPC", libc::CLONE_NEWIPC as u64),
    ("CLONE_NEWCGROUP", libc::CLONE_NEWCGROUP as u64),
];

/// `unshare` takes `CLONE_NEWTIME` too (in `clone`'s flags that bit is part of the exit
/// signal, so `clone` cannot take it).
const UNSHARE_NEW: &[(&str, u64)] = &[
    ("CLONE_NEWUSER", libc::CLONE_NEWUSER as u64),
    ("CLONE_NEWNS", libc::CLONE_NEWNS as u64),
    ("CLONE_NEWPID", libc::CLONE_NEWPID as u64),
    ("CLONE_NEWNET", libc::CLONE_NEWNET as u64),
    ("CLONE_NEWUTS", libc::CLONE_NEWUTS as u64),
    ("CLONE_NEWIPC", libc::CLONE_NEWIPC as u64),
    ("CLONE_NEWCGROUP", libc::CLONE_NEWCGROUP as u64),
    ("CLONE_NEWTIME", CLONE_NEWTIME),
];

/// `CLONE_NEWTIME` (not in every libc).
const CLONE_NEWTIME: u64 = 0x80;

/// The terminal requests that push input into a terminal another program reads.
const TTY_INJECTION: &[(&str, u64)] = &[("TIOCSTI", libc::TIOCSTI), ("TIOCLINUX", libc::TIOCLINUX)];

/// An entry refusing every call of `nr` with `EPERM`.
const fn always(name: &'static str, nr: i64, nested: bool, why: &'static str) -> Entry {
    Entry {
        name,
        nr,
        when: When::Always,
        answer: Answer::Refused,
        nested,
        why,
    }
}

const PTRACE: &str = "reads and steers another process of the box (the init and its relays)";
const IO_URING: &str = "io_uring: a second way into most of the kernel, past this filter";
const KEYS: &str = "the kernel's key rings are shared with the caller's other processes";
const NAMESPACE: &str = "a new user namespace makes the agent root over it";
const MOUNT: &str = "mounts change what the box's paths lead to";
const MODULES: &str = "loads or replaces kernel code";

/// Every system call the box refuses, and how.
pub const ENTRIES: &[Entry] = &[
    always("ptrace", libc::SYS_ptrace, false, PTRACE),
    always(
        "process_vm_readv",
        libc::SYS_process_vm_readv,
        false,
        PTRACE,
    ),
    always(
        "process_vm_writev",
        libc::SYS_process_vm_writev,
        false,
        PTRACE,
    ),
    always("pidfd_getfd", libc::SYS_pidfd_getfd, false, PTRACE),
    always("process_madvise", libc::SYS_process_madvise, false, PTRACE),
    always(
        "kcmp",
        libc::SYS_kcmp,
        false,
        "compares another process's kernel objects",
    ),
    always("io_uring_setup", libc::SYS_io_uring_setup, false, IO_URING),
    always("io_uring_enter", libc::SYS_io_uring_enter, false, IO_URING),
    always(
        "io_uring_register",
        libc::SYS_io_uring_register,
        false,
        IO_URING,
    ),
    always("keyctl", libc::SYS_keyctl, false, KEYS),
    always("add_key", libc::SYS_add_key, false, KEYS),
    always("request_key", libc::SYS_request_key, false, KEYS),
    always(
        "bpf",
        libc::SYS_bpf,
        false,
        "eBPF programs run in the kernel",
    ),
    always(
        "perf_event_open",
        libc::SYS_perf_event_open,
        false,
        "observes the kernel and other processes",
    ),
    always(
        "userfaultfd",
        libc::SYS_userfaultfd,
        false,
        "stalls the kernel mid-copy: the usual help of a kernel exploit",
    ),
    always("syslog", libc::SYS_syslog, false, "the host's kernel log"),
    always("kexec_load", libc::SYS_kexec_load, false, MODULES),
    always("kexec_file_load", libc::SYS_kexec_file_load, false, MODULES),
    always("init_module", libc::SYS_init_module, false, MODULES),
    always("finit_module", libc::SYS_finit_module, false, MODULES),
    always("delete_module", libc::SYS_delete_module, false, MODULES),
    Entry {
        name: "unshare",
        nr: libc::SYS_unshare,
        when: When::AnyFlag {
            arg: 0,
            flags: UNSHARE_NEW,
        },
        answer: Answer::Refused,
        nested: true,
        why: NAMESPACE,
    },
    Entry {
        name: "clone",
        nr: libc::SYS_clone,
        when: When::AnyFlag {
            arg: 0,
            flags: CLONE_NEW,
        },
        answer: Answer::Refused,
        nested: true,
        why: NAMESPACE,
    },
    Entry {
        name: "clone3",
        nr: libc::SYS_clone3,
        when: When::Always,
        answer: Answer::Missing,
        nested: false,
        why: "its flags are in memory a filter cannot read: `ENOSYS` makes the C library use `clone`, whose flags the filter checks",
    },
    always("setns", libc::SYS_setns, true, NAMESPACE),
    always("mount", libc::SYS_mount, true, MOUNT),
    always("umount2", libc::SYS_umount2, true, MOUNT),
    always("pivot_root", libc::SYS_pivot_root, true, MOUNT),
    always("move_mount", libc::SYS_move_mount, true, MOUNT),
    always("open_tree", libc::SYS_open_tree, true, MOUNT),
    always("fsopen", libc::SYS_fsopen, true, MOUNT),
    always("fsmount", libc::SYS_fsmount, true, MOUNT),
    always("fsconfig", libc::SYS_fsconfig, true, MOUNT),
    always("fspick", libc::SYS_fspick, true, MOUNT),
    always("mount_setattr", libc::SYS_mount_setattr, true, MOUNT),
    Entry {
        name: "ioctl",
        nr: libc::SYS_ioctl,
        when: When::ArgIs {
            arg: 1,
            values: TTY_INJECTION,
        },
        answer: Answer::Refused,
        nested: false,
        why: "types into the input of another program on the same terminal",
    },
];

/// Which list a box gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Every entry.
    Agent,
    /// Every entry but namespaces and mounts, for an agent that runs its own sandbox.
    NestedSandbox,
}

impl Policy {
    /// The policy of a box whose agent does (or does not) run its own sandbox.
    pub fn for_box(nested_sandbox: bool) -> Self {
        if nested_sandbox {
            Self::NestedSandbox
        } else {
            Self::Agent
        }
    }

    /// The entries this policy refuses.
    pub fn entries(self) -> impl Iterator<Item = &'static Entry> {
        ENTRIES
            .iter()
            .filter(move |e| self == Self::Agent || !e.nested)
    }
}

/// The program of `policy` for this machine's architecture.
pub fn program(policy: Policy) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|_| {
        format!(
            "the box's system call filter is not made for {} (only x86_64, aarch64 and \
             riscv64): run with --isolation none",
            std::env::consts::ARCH
        )
    })?;
    program_for(policy, arch)
}

/// The program of `policy` for `arch`, which must be this machine's (the entries' numbers
/// are this machine's).
fn program_for(policy: Policy, arch: TargetArch) -> Result<BpfProgram, String> {
    let mut parts = Vec::new();
    if arch == TargetArch::x86_64 {
        parts.push(x32_guard());
    }
    for answer in [Answer::Refused, Answer::Missing] {
        let rules = rules(policy.entries().filter(|e| e.answer == answer))?;
        if rules.is_empty() {
            continue;
        }
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(answer.errno()),
            arch,
        )
        .map_err(|e| format!("the box's system call filter cannot be built: {e}"))?;
        let compiled: BpfProgram = filter
            .try_into()
            .map_err(|e| format!("the box's system call filter cannot be compiled: {e}"))?;
        parts.push(compiled);
    }
    Ok(chain(parts))
}

/// The rules of `entries`, by system call.
fn rules<'a>(
    entries: impl Iterator<Item = &'a Entry>,
) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let bad = |e: seccompiler::BackendError| format!("a rule of the box's filter is wrong: {e}");
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for entry in entries {
        let chain = rules.entry(entry.nr).or_default();
        let (arg, values, masked) = match entry.when {
            When::Always => continue,
            When::AnyFlag { arg, flags } => (arg, flags, true),
            When::ArgIs { arg, values } => (arg, values, false),
        };
        for (_, value) in values {
            let op = if masked {
                SeccompCmpOp::MaskedEq(*value)
            } else {
                SeccompCmpOp::Eq
            };
            // The low 32 bits: every flag and request here fits, and the kernel reads
            // these arguments as 32-bit, so bits above cannot hide a match.
            let condition =
                SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, *value).map_err(bad)?;
            chain.push(SeccompRule::new(vec![condition]).map_err(bad)?);
        }
    }
    Ok(rules)
}

// Classic BPF, for the guard and the chaining (`linux/bpf_common.h`, `linux/seccomp.h`).
/// `BPF_LD | BPF_W | BPF_ABS` (the first two are 0).
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JA: u16 = 0x05;
const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
const BPF_JMP_JGE_K: u16 = 0x05 | 0x30;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
/// The x32 ABI's mark in a system call's number.
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// Refuses every call of the x32 ABI (x86_64's architecture, bit 30 of the number set);
/// lets everything else through to the next part.
fn x32_guard() -> BpfProgram {
    vec![
        // The architecture (offset 4 of `seccomp_data`).
        stmt(BPF_LD_W_ABS, 4),
        jump(BPF_JMP_JEQ_K, AUDIT_ARCH_X86_64, 0, 3),
        // The number (offset 0).
        stmt(BPF_LD_W_ABS, 0),
        jump(BPF_JMP_JGE_K, X32_SYSCALL_BIT, 0, 1),
        stmt(BPF_RET_K, SECCOMP_RET_ERRNO | libc::EPERM as u32),
        stmt(BPF_RET_K, SECCOMP_RET_ALLOW),
    ]
}

/// One program that runs `parts` in turn: each part's "allow" jumps to the next part, and
/// any other answer ends the program (every part is a list of refusals over "allow").
fn chain(parts: Vec<BpfProgram>) -> BpfProgram {
    let total: usize = parts.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total + 1);
    for part in parts {
        let end = out.len() + part.len();
        for instruction in part {
            let here = out.len();
            if instruction.code == BPF_RET_K && instruction.k == SECCOMP_RET_ALLOW {
                // To the next part (a jump always, by its offset from the next instruction).
                out.push(stmt(BPF_JMP_JA, (end - here - 1) as u32));
            } else {
                out.push(instruction);
            }
        }
    }
    out.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW));
    out
}

/// The program as bubblewrap reads it: `struct sock_filter` after `struct sock_filter`, in
/// this machine's byte order.
pub fn to_bytes(program: &[sock_filter]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for instruction in program {
        bytes.extend_from_slice(&instruction.code.to_ne_bytes());
        bytes.push(instruction.jt);
        bytes.push(instruction.jf);
        bytes.extend_from_slice(&instruction.k.to_ne_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a program answers a call: runs it as the kernel does, on a `seccomp_data` of
    /// `arch`, number `nr` and `args` (little-endian, as on every architecture here).
    fn run(program: &[sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = Vec::with_capacity(64);
        data.extend_from_slice(&nr.to_le_bytes());
        data.extend_from_slice(&arch.to_le_bytes());
        data.extend_from_slice(&0u64.to_le_bytes());
        for arg in args {
            data.extend_from_slice(&arg.to_le_bytes());
        }
        let load = |at: u32| {
            let at = at as usize;
            u32::from_le_bytes(data[at..at + 4].try_into().unwrap())
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = &program[pc];
            pc += 1;
            match i.code {
                BPF_LD_W_ABS => acc = load(i.k),
                0x54 => acc &= i.k, // BPF_ALU | BPF_AND | BPF_K
                BPF_JMP_JA => pc += i.k as usize,
                BPF_JMP_JEQ_K | 0x25 | BPF_JMP_JGE_K => {
                    let taken = match i.code {
                        BPF_JMP_JEQ_K => acc == i.k,
                        0x25 => acc > i.k, // BPF_JGT
                        _ => acc >= i.k,
                    };
                    pc += usize::from(if taken { i.jt } else { i.jf });
                }
                BPF_RET_K => return i.k,
                other => panic!("instruction {other:#x} is not one the filters use"),
            }
        }
    }

    /// This machine's architecture as `seccomp_data` gives it.
    fn audit_arch() -> u32 {
        match std::env::consts::ARCH {
            "x86_64" => AUDIT_ARCH_X86_64,
            "aarch64" => 183 | 0x8000_0000 | 0x4000_0000,
            "riscv64" => 243 | 0x8000_0000 | 0x4000_0000,
            other => panic!("no filter for {other}"),
        }
    }

    fn native() -> BpfProgram {
        program(Policy::Agent).unwrap()
    }

    fn answer(program: &[sock_filter], nr: i64, args: [u64; 6]) -> u32 {
        run(program, audit_arch(), nr as u32, args)
    }

    fn errno(n: i32) -> u32 {
        SECCOMP_RET_ERRNO | n as u32
    }

    /// The arguments that make `entry` match: the first flag or value of each kind, and
    /// every one of them in turn.
    fn matching_args(entry: &Entry) -> Vec<(String, [u64; 6])> {
        match entry.when {
            When::Always => vec![(String::new(), [0; 6])],
            When::AnyFlag { arg, flags } | When::ArgIs { arg, values: flags } => flags
                .iter()
                .map(|(name, value)| {
                    let mut args = [0u64; 6];
                    args[arg as usize] = *value;
                    (name.to_string(), args)
                })
                .collect(),
        }
    }

    /// Checks the entry `name`: each of its calls (each flag or value) answers as the
    /// entry says in both programs (allowed for a nested sandbox when the entry says so).
    fn check_entry(name: &str) {
        let entry = ENTRIES
            .iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("{name} is not in the list"));
        let program = native();
        let nested = super::program(Policy::NestedSandbox).unwrap();
        for (what, args) in matching_args(entry) {
            let expected = errno(entry.answer.errno() as i32);
            assert_eq!(
                answer(&program, entry.nr, args),
                expected,
                "{name} {what}: {}",
                entry.why
            );
            let for_nested = if entry.nested {
                SECCOMP_RET_ALLOW
            } else {
                expected
            };
            assert_eq!(
                answer(&nested, entry.nr, args),
                for_nested,
                "{name} {what} for a nested sandbox"
            );
        }
    }

    /// One test per entry of the list, named after its system call.
    macro_rules! entry_tests {
        ($($name:ident),* $(,)?) => {
            /// The entries that have a test of their own.
            const TESTED: &[&str] = &[$(stringify!($name)),*];
            $(
                #[test]
                fn $name() {
                    check_entry(stringify!($name));
                }
            )*
        };
    }

    entry_tests!(
        ptrace,
        process_vm_readv,
        process_vm_writev,
        pidfd_getfd,
        process_madvise,
        kcmp,
        io_uring_setup,
        io_uring_enter,
        io_uring_register,
        keyctl,
        add_key,
        request_key,
        bpf,
        perf_event_open,
        userfaultfd,
        syslog,
        kexec_load,
        kexec_file_load,
        init_module,
        finit_module,
        delete_module,
        unshare,
        clone,
        clone3,
        setns,
        mount,
        umount2,
        pivot_root,
        move_mount,
        open_tree,
        fsopen,
        fsmount,
        fsconfig,
        fspick,
        mount_setattr,
        ioctl,
    );

    #[test]
    fn every_entry_has_its_test() {
        for entry in ENTRIES {
            assert!(TESTED.contains(&entry.name), "{} has no test", entry.name);
        }
    }

    #[test]
    fn a_new_user_namespace_is_refused_with_any_other_flags() {
        let program = native();
        let flags = (libc::CLONE_NEWUSER | libc::CLONE_NEWNS) as u64 | libc::SIGCHLD as u64;
        let refused = errno(libc::EPERM);
        assert_eq!(
            answer(&program, libc::SYS_clone, [flags, 0, 0, 0, 0, 0]),
            refused
        );
        assert_eq!(
            answer(&program, libc::SYS_unshare, [flags, 0, 0, 0, 0, 0]),
            refused
        );
    }

    #[test]
    fn threads_forks_and_plain_calls_pass() {
        let program = native();
        let thread = (libc::CLONE_VM
            | libc::CLONE_FS
            | libc::CLONE_FILES
            | libc::CLONE_SIGHAND
            | libc::CLONE_THREAD
            | libc::CLONE_SYSVSEM
            | libc::CLONE_SETTLS
            | libc::CLONE_PARENT_SETTID
            | libc::CLONE_CHILD_CLEARTID) as u64;
        let fork = libc::SIGCHLD as u64;
        for (what, nr, args) in [
            ("a thread", libc::SYS_clone, [thread, 0, 0, 0, 0, 0]),
            ("a fork", libc::SYS_clone, [fork, 0, 0, 0, 0, 0]),
            (
                "unshare(CLONE_FS)",
                libc::SYS_unshare,
                [libc::CLONE_FS as u64, 0, 0, 0, 0, 0],
            ),
            (
                "ioctl(TCGETS)",
                libc::SYS_ioctl,
                [0, libc::TCGETS, 0, 0, 0, 0],
            ),
            ("read", libc::SYS_read, [0; 6]),
            ("openat", libc::SYS_openat, [0; 6]),
            ("execve", libc::SYS_execve, [0; 6]),
            ("seccomp", libc::SYS_seccomp, [0; 6]),
        ] {
            assert_eq!(answer(&program, nr, args), SECCOMP_RET_ALLOW, "{what}");
        }
    }

    #[test]
    fn an_ioctl_request_with_high_bits_is_still_tiocsti() {
        let program = native();
        let hidden = (1u64 << 32) | libc::TIOCSTI;
        assert_eq!(
            answer(&program, libc::SYS_ioctl, [0, hidden, 0, 0, 0, 0]),
            errno(libc::EPERM),
            "the kernel reads the request as 32 bits"
        );
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_x32_abi_is_refused_not_killed() {
        let (program, arch) = (native(), audit_arch());
        for nr in [0u32, 1, 101 /* ptrace's x86_64 number */, 512, 547] {
            assert_eq!(
                run(&program, arch, X32_SYSCALL_BIT | nr, [0; 6]),
                errno(libc::EPERM),
                "x32 call {nr}"
            );
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn another_architecture_ends_the_process() {
        let program = native();
        const AUDIT_ARCH_I386: u32 = 3 | 0x4000_0000;
        assert_eq!(
            run(&program, AUDIT_ARCH_I386, 26, [0; 6]),
            libc::SECCOMP_RET_KILL_PROCESS
        );
    }

    #[test]
    fn the_bytes_are_eight_per_instruction_in_kernel_layout() {
        let program = vec![jump(0x15, 0x0102_0304, 7, 9)];
        let bytes = to_bytes(&program);
        assert_eq!(bytes.len(), 8);
        assert_eq!(u16::from_ne_bytes([bytes[0], bytes[1]]), 0x15);
        assert_eq!((bytes[2], bytes[3]), (7, 9));
        assert_eq!(
            u32::from_ne_bytes(bytes[4..8].try_into().unwrap()),
            0x0102_0304
        );
    }

    #[test]
    fn the_program_fits_the_kernels_limit() {
        for policy in [Policy::Agent, Policy::NestedSandbox] {
            assert!(program(policy).unwrap().len() < 4096);
        }
    }
}
