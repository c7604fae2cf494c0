//! The box's limits, enforced by a cgroup of its session when the machine gives one.
//!
//! Where the cgroup goes is found from this process's own cgroups (`/proc/self/cgroup`) and
//! the mounted hierarchies (`/proc/self/mountinfo`): a child of our own cgroup, named after
//! the session. cgroup v1 needs the memory and pids controllers mounted and writable; cgroup
//! v2 needs both enabled for our cgroup's children. Otherwise there is no limit, and
//! [`find`] says why (`codehands doctor` prints it): never a limit claimed but not applied.

use std::path::{Path, PathBuf};

use crate::plan::{Cgroup, Limits};

/// A setting: the controller's folder it goes in, the file, the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The cgroup folder (one of [`Cgroup::dirs`]).
    pub dir: PathBuf,
    /// The file in it.
    pub file: &'static str,
    /// What is written.
    pub value: String,
    /// Whether the kernel may lack the file (swap accounting off): then it is skipped.
    pub optional: bool,
}

/// The files `limits` writes in `cgroup`, in order (v1 wants the memory limit before the
/// memory+swap one).
pub fn settings(cgroup: &Cgroup, limits: &Limits) -> Vec<Setting> {
    let set = |dir: &Path, file, value: String, optional| Setting {
        dir: dir.to_owned(),
        file,
        value,
        optional,
    };
    let mut out = Vec::new();
    match cgroup {
        Cgroup::V1 { memory, pids } => {
            if let Some(bytes) = limits.memory_bytes {
                out.push(set(
                    memory,
                    "memory.limit_in_bytes",
                    bytes.to_string(),
                    false,
                ));
                out.push(set(
                    memory,
                    "memory.memsw.limit_in_bytes",
                    bytes.to_string(),
                    true,
                ));
            }
            if let Some(n) = limits.pids {
                out.push(set(pids, "pids.max", n.to_string(), false));
            }
        }
        Cgroup::V2 { dir } => {
            if let Some(bytes) = limits.memory_bytes {
                out.push(set(dir, "memory.max", bytes.to_string(), false));
                out.push(set(dir, "memory.swap.max", "0".into(), true));
            }
            if let Some(n) = limits.pids {
                out.push(set(dir, "pids.max", n.to_string(), false));
            }
        }
    }
    out
}

/// Makes the cgroup, writes the limits and moves this process (and so everything it starts)
/// into it.
pub fn enter(cgroup: &Cgroup, limits: &Limits) -> Result<(), String> {
    for dir in cgroup.dirs() {
        match std::fs::create_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot make the cgroup {}: {e}", dir.display())),
        }
    }
    for setting in settings(cgroup, limits) {
        let path = setting.dir.join(setting.file);
        if setting.optional && !path.exists() {
            continue;
        }
        std::fs::write(&path, &setting.value)
            .map_err(|e| format!("cannot write {} to {}: {e}", setting.value, path.display()))?;
    }
    let me = std::process::id().to_string();
    for dir in cgroup.dirs() {
        let procs = dir.join("cgroup.procs");
        std::fs::write(&procs, &me)
            .map_err(|e| format!("cannot join the cgroup {}: {e}", dir.display()))?;
    }
    Ok(())
}

/// Moves this process back to the parent cgroups and removes the box's (which fails,
/// harmlessly, while a process of the box is left: `recover` tries again).
pub fn leave(cgroup: &Cgroup) {
    let me = std::process::id().to_string();
    for dir in cgroup.dirs() {
        if let Some(parent) = dir.parent() {
            let _ = std::fs::write(parent.join("cgroup.procs"), &me);
        }
    }
    remove(cgroup);
}

/// Removes the box's cgroup folders that are there and empty; whether none is left.
pub fn remove(cgroup: &Cgroup) -> bool {
    cgroup.dirs().into_iter().all(|dir| {
        // A cgroup folder is removed with rmdir, its control files and all.
        std::fs::remove_dir(dir).is_ok() || !dir.exists()
    })
}

/// Where the cgroup of session `name` would go on this machine, or why there is none.
pub fn find(name: &str) -> Result<Cgroup, String> {
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let mounts = parse_mounts(&mounts);
    let folder = format!("codehands-{name}");
    let v1 = |controller: &str| -> Option<PathBuf> {
        let mount = mounts
            .iter()
            .find(|m| m.fstype == "cgroup" && m.options.split(',').any(|o| o == controller))?;
        let path = own_path(&own, |controllers| {
            controllers.split(',').any(|c| c == controller)
        })?;
        let dir = mount.under(&path)?;
        writable(&dir).then(|| dir.join(&folder))
    };
    if let (Some(memory), Some(pids)) = (v1("memory"), v1("pids")) {
        return Ok(Cgroup::V1 { memory, pids });
    }
    let Some(mount) = mounts.iter().find(|m| m.fstype == "cgroup2") else {
        return Err(
            "neither cgroup v1 (memory and pids) nor cgroup v2 is mounted writable here".into(),
        );
    };
    let path = own_path(&own, str::is_empty).ok_or("this process is in no cgroup v2")?;
    let dir = mount
        .under(&path)
        .ok_or("this process's cgroup v2 is outside the mounted hierarchy")?;
    let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
    let has = |c: &str| enabled.split_whitespace().any(|e| e == c);
    if !(has("memory") && has("pids")) {
        return Err(format!(
            "cgroup v2 at {} does not hand the memory and pids controllers to its children \
             (cgroup.subtree_control is {:?}): run codehands in a cgroup delegated to you, \
             such as `systemd-run --user --scope -p Delegate=yes`",
            dir.display(),
            enabled.trim()
        ));
    }
    if !writable(&dir) {
        return Err(format!(
            "cgroup v2 at {} is not writable by this user",
            dir.display()
        ));
    }
    Ok(Cgroup::V2 {
        dir: dir.join(folder),
    })
}

fn writable(dir: &Path) -> bool {
    nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// The path of our cgroup in the hierarchy whose controller list passes `which`.
fn own_path(text: &str, which: impl Fn(&str) -> bool) -> Option<String> {
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        which(controllers).then(|| path.to_owned())
    })
}

/// A mounted file system, as `/proc/self/mountinfo` says.
#[derive(Debug, PartialEq, Eq)]
struct Mount {
    /// The folder of the file system mounted here (a cgroup namespace's root).
    root: String,
    point: PathBuf,
    fstype: String,
    options: String,
}

impl Mount {
    /// Where the cgroup at `path` (from `/proc/self/cgroup`) is in this mount.
    fn under(&self, path: &str) -> Option<PathBuf> {
        let rest = if self.root == "/" {
            path
        } else {
            path.strip_prefix(self.root.as_str())?
        };
        let rest = rest.trim_start_matches('/');
        if rest.split('/').any(|c| c == "..") {
            return None;
        }
        Some(if rest.is_empty() {
            self.point.clone()
        } else {
            self.point.join(rest)
        })
    }
}

/// The cgroup file systems in a mountinfo text (the others are of no interest).
fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let left: Vec<&str> = left.split(' ').collect();
            let mut right = right.split(' ');
            let fstype = right.next()?;
            let _source = right.next()?;
            let options = right.next().unwrap_or("");
            if !fstype.starts_with("cgroup") {
                return None;
            }
            Some(Mount {
                root: left.get(3)?.to_string(),
                point: PathBuf::from(left.get(4)?),
                fstype: fstype.to_owned(),
                options: options.to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1() -> Cgroup {
        Cgroup::V1 {
            memory: "/sys/fs/cgroup/memory/codehands-S".into(),
            pids: "/sys/fs/cgroup/pids/codehands-S".into(),
        }
    }

    fn v2() -> Cgroup {
        Cgroup::V2 {
            dir: "/sys/fs/cgroup/user/codehands-S".into(),
        }
    }

    fn limits() -> Limits {
        Limits {
            memory_bytes: Some(1 << 30),
            pids: Some(512),
        }
    }

    fn find_setting(cgroup: &Cgroup, file: &str) -> Option<Setting> {
        settings(cgroup, &limits())
            .into_iter()
            .find(|s| s.file == file)
    }

    #[test]
    fn v1_memory_limit() {
        let s = find_setting(&v1(), "memory.limit_in_bytes").unwrap();
        assert_eq!(s.value, (1u64 << 30).to_string());
        assert_eq!(s.dir, PathBuf::from("/sys/fs/cgroup/memory/codehands-S"));
        assert!(!s.optional);
    }

    #[test]
    fn v1_swap_counts_against_the_same_limit_where_the_kernel_accounts_it() {
        let s = find_setting(&v1(), "memory.memsw.limit_in_bytes").unwrap();
        assert_eq!(s.value, (1u64 << 30).to_string());
        assert!(s.optional);
        let files: Vec<_> = settings(&v1(), &limits()).iter().map(|s| s.file).collect();
        let plain = files.iter().position(|f| *f == "memory.limit_in_bytes");
        let swap = files
            .iter()
            .position(|f| *f == "memory.memsw.limit_in_bytes");
        assert!(plain < swap, "v1 refuses memsw below the memory limit");
    }

    #[test]
    fn v1_pids_limit() {
        let s = find_setting(&v1(), "pids.max").unwrap();
        assert_eq!(s.value, "512");
        assert_eq!(s.dir, PathBuf::from("/sys/fs/cgroup/pids/codehands-S"));
    }

    #[test]
    fn v2_memory_limit_and_no_swap() {
        assert_eq!(
            find_setting(&v2(), "memory.max").unwrap().value,
            (1u64 << 30).to_string()
        );
        let swap = find_setting(&v2(), "memory.swap.max").unwrap();
        assert_eq!(swap.value, "0");
        assert!(swap.optional);
    }

    #[test]
    fn v2_pids_limit() {
        assert_eq!(find_setting(&v2(), "pids.max").unwrap().value, "512");
    }

    #[test]
    fn no_limit_writes_nothing() {
        let none = Limits {
            memory_bytes: None,
            pids: None,
        };
        assert!(settings(&v1(), &none).is_empty());
        assert!(settings(&v2(), &none).is_empty());
    }

    #[test]
    fn mounts_and_own_paths_give_the_folders() {
        let mountinfo = "\
30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
31 25 0:27 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
32 25 0:28 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
33 25 0:29 / /proc rw - proc proc rw";
        let mounts = parse_mounts(mountinfo);
        assert_eq!(mounts.len(), 3);
        let own = "8:pids:/\n4:memory:/box/a\n0::/";
        let memory = own_path(own, |c| c.split(',').any(|c| c == "memory")).unwrap();
        assert_eq!(memory, "/box/a");
        assert_eq!(
            mounts[0].under(&memory).unwrap(),
            PathBuf::from("/sys/fs/cgroup/memory/box/a")
        );
        assert_eq!(
            mounts[1].under("/").unwrap(),
            PathBuf::from("/sys/fs/cgroup/pids")
        );
        assert_eq!(own_path(own, str::is_empty).unwrap(), "/");
    }

    #[test]
    fn a_namespaced_root_is_taken_off_and_dot_dot_refused() {
        let mount = Mount {
            root: "/outer".into(),
            point: "/sys/fs/cgroup".into(),
            fstype: "cgroup2".into(),
            options: String::new(),
        };
        assert_eq!(
            mount.under("/outer/me").unwrap(),
            PathBuf::from("/sys/fs/cgroup/me")
        );
        assert!(mount.under("/elsewhere").is_none());
        assert!(mount.under("/outer/../x").is_none());
    }
}
