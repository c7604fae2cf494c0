//! The box's `/etc`: its own `/etc/passwd`, `/etc/group` and `/etc/hosts`, and the host's
//! selected files ([`crate::planner::ETC`]), in one folder outside the box that bubblewrap
//! binds read-only at `/etc` whole.
//!
//! Generated rather than bound: the agent's uid needs an entry with the private home (tools
//! such as Node's `os.userInfo()` fail without one), and the host names of the allowed
//! endpoints must resolve to the loopback addresses the init listens on, while every other
//! name resolves to nothing (the box has no resolver).
//!
//! One folder rather than a bind per file: bubblewrap reads the whole mount table again for
//! every read-only bind, so each mount costs more than the one before (the box's ~50 mounts
//! cost ~50 ms over bubblewrap's own start, issue 45). The host's plain files of the selection
//! are copied into the folder at every box's start (through their links, as a bind would
//! follow them: the box sees what it saw before, and nothing the selection does not name);
//! its folders (`/etc/ssl`…) are still bound, each over an empty folder made in the copy.

use std::path::{Path, PathBuf};

use runner_contract::private::PrivateRoot;

use crate::argv::HOSTNAME;
use crate::plan::BoxPlan;

/// The user name of the agent inside.
pub const USER: &str = "codehands";

/// `/etc/passwd`: root, the agent's user with the private home, nobody.
pub fn passwd(plan: &BoxPlan) -> String {
    format!(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n\
         {USER}:x:{}:{}:codehands agent:{}:/bin/sh\n\
         nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        plan.uid,
        plan.gid,
        plan.home.display()
    )
}

/// `/etc/group`.
pub fn group(plan: &BoxPlan) -> String {
    format!("root:x:0:\n{USER}:x:{}:\nnogroup:x:65534:\n", plan.gid)
}

/// `/etc/hosts`: localhost (IPv4 only, where the init listens), the box's own name, and
/// each allowed name at its loopback address.
pub fn hosts(plan: &BoxPlan) -> String {
    let mut text =
        format!("127.0.0.1\tlocalhost\n::1\tip6-localhost ip6-loopback\n127.0.1.1\t{HOSTNAME}\n");
    for entry in &plan.network.hosts {
        text.push_str(&format!("{}\t{}\n", entry.ip, entry.name));
    }
    text
}

/// Each generated file's name and content.
pub fn files(plan: &BoxPlan) -> [(&'static str, String); 3] {
    [
        ("passwd", passwd(plan)),
        ("group", group(plan)),
        ("hosts", hosts(plan)),
    ]
}

/// The host's entries of the selection that are folders (through links), in the plan's
/// order: bound over the copy, each at its own path.
pub fn host_folders(plan: &BoxPlan) -> Vec<PathBuf> {
    plan.etc.iter().filter(|p| p.is_dir()).cloned().collect()
}

/// Where `host` (a path of `/etc`) goes in the folder `dir` the box gets as its `/etc`.
fn place_of(dir: &Path, host: &Path) -> Option<PathBuf> {
    let rest = host.strip_prefix("/etc").ok()?;
    (rest.components().count() == 1).then(|| dir.join(rest))
}

/// Makes the box's `/etc` folder afresh (outside, `plan.etc_dir()`; never bound writable):
/// the generated files, a copy of each host file of the selection, an empty folder where
/// each host folder of it is bound. A file that cannot be read is left out, as one the host
/// lacks is.
pub fn fill(root: &PrivateRoot, plan: &BoxPlan) -> Result<(), String> {
    let dir = plan.etc_dir();
    // Afresh: a file the host no longer has must not stay from an earlier turn (the box's
    // folder is the caller's; no box runs while the next one starts).
    match std::fs::symlink_metadata(&dir) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&dir),
        Ok(_) => std::fs::remove_file(&dir),
        Err(_) => Ok(()),
    }
    .map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
    root.ensure_dir(&dir).map_err(|e| e.to_string())?;
    for host in &plan.etc {
        let Some(place) = place_of(&dir, host) else {
            return Err(format!(
                "the box plan names {}, which is not a file or folder of /etc itself",
                host.display()
            ));
        };
        if host.is_dir() {
            root.ensure_dir(&place).map_err(|e| e.to_string())?;
        } else if let Ok(bytes) = std::fs::read(host) {
            root.replace_file(&place, &bytes)
                .map_err(|e| e.to_string())?;
        }
    }
    // Last: the generated files win over any host file of the same name.
    for (name, text) in files(plan) {
        root.replace_file(&dir.join(name), text.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::HostEntry;
    use crate::plan::tests::sample;

    #[test]
    fn the_agents_user_has_the_private_home() {
        let text = passwd(&sample());
        assert!(text.contains(
            "codehands:x:1000:1000:codehands agent:/home/me/.codehands/runs/S/home:/bin/sh\n"
        ));
        assert!(!text.contains("/home/me:"), "not the caller's home");
    }

    #[test]
    fn the_group_matches() {
        assert!(group(&sample()).contains("codehands:x:1000:\n"));
    }

    #[test]
    fn hosts_maps_the_allowed_names_and_nothing_else() {
        let mut plan = sample();
        plan.network.hosts.push(HostEntry {
            name: "models.internal".into(),
            ip: "127.0.0.2".parse().unwrap(),
        });
        let text = hosts(&plan);
        assert!(text.contains("127.0.0.2\tmodels.internal\n"));
        assert!(text.starts_with("127.0.0.1\tlocalhost\n"));
        assert_eq!(text.lines().count(), 4);
    }

    #[test]
    fn the_folder_holds_copies_places_for_folders_and_the_generated_files() {
        let scratch = tempfile::tempdir().unwrap();
        let mut plan = sample();
        plan.state = scratch.path().join("runs/S/box");
        // This host's own: /etc/hostname is a file on any Linux, /etc/ssl a folder here
        // when there is one.
        plan.etc = vec!["/etc/hostname".into(), "/etc/ssl".into()];
        let root = PrivateRoot::new(scratch.path().join("runs/S"));
        fill(&root, &plan).unwrap();
        let dir = plan.etc_dir();
        if let Ok(host) = std::fs::read("/etc/hostname") {
            assert_eq!(std::fs::read(dir.join("hostname")).unwrap(), host);
        }
        assert_eq!(dir.join("ssl").is_dir(), Path::new("/etc/ssl").is_dir());
        if dir.join("ssl").is_dir() {
            assert_eq!(std::fs::read_dir(dir.join("ssl")).unwrap().count(), 0);
        }
        assert!(
            std::fs::read_to_string(dir.join("passwd"))
                .unwrap()
                .contains("codehands:x:1000")
        );
        // A file of an earlier turn that the selection no longer names goes.
        std::fs::write(dir.join("stale"), "x").unwrap();
        fill(&root, &plan).unwrap();
        assert!(!dir.join("stale").exists());
    }

    #[test]
    fn only_entries_of_etc_itself_are_copied() {
        let scratch = tempfile::tempdir().unwrap();
        let mut plan = sample();
        plan.state = scratch.path().join("runs/S/box");
        plan.etc = vec!["/etc/ssl/certs".into()];
        let root = PrivateRoot::new(scratch.path().join("runs/S"));
        assert!(fill(&root, &plan).is_err());
    }
}
