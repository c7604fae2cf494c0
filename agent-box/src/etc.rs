//! The box's own `/etc/passwd`, `/etc/group` and `/etc/hosts`.
//!
//! Generated rather than bound: the agent's uid needs an entry with the private home (tools
//! such as Node's `os.userInfo()` fail without one), and the host names of the allowed
//! endpoints must resolve to the loopback addresses the init listens on, while every other
//! name resolves to nothing (the box has no resolver).

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
}
