//! The exact flag sets of the test box and the install box, as plain data.
//!
//! Nothing here talks to Docker, so a unit test catches a lost flag in
//! milliseconds. [`docker_run_args`] spells the same body as `docker run`
//! flags, for people reading it and for the benchmark's baseline.

use std::collections::HashMap;
use std::path::PathBuf;

use bollard::models::{
    ContainerCreateBody, HostConfig, HostConfigLogConfig, Mount, MountType, ResourcesUlimits,
};
use runner_contract::{BoxLimits, SessionId};

/// Where the worktree appears inside a box.
pub const WORKDIR: &str = "/work";

/// The label every box carries, valued with its session id; `remove_leftovers` looks for it.
pub const SESSION_LABEL: &str = "codehands.session";
/// The label naming the box's role (`test` or `install`).
pub const ROLE_LABEL: &str = "codehands.box";
/// The label carrying the run number `n`.
pub const RUN_LABEL: &str = "codehands.run";

/// The uid:gid a test box runs as when the worktree's owner is root (nobody:nogroup).
pub const NOBODY: &str = "65534:65534";

/// Everything that varies between two boxes; the flags are derived from it.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxSpec {
    /// The session the box belongs to (names and labels it).
    pub session_id: SessionId,
    /// The run number within the session.
    pub n: u32,
    /// The image.
    pub image: String,
    /// The shell command run inside with `sh -c`.
    pub command: String,
    /// The worktree on the engine's host, bound at [`WORKDIR`].
    pub worktree: PathBuf,
    /// The `uid:gid` of the worktree's owner.
    pub owner: (u32, u32),
    /// The IANA timezone, passed as `TZ`.
    pub timezone: String,
    /// The limits.
    pub limits: BoxLimits,
    /// More environment (`NAME=value`), such as what makes installed dependencies visible.
    pub extra_env: Vec<String>,
}

impl BoxSpec {
    /// The test box's container name: `ch-<id8>-<n>`.
    pub fn test_name(&self) -> String {
        format!("ch-{}-{}", self.session_id.short(), self.n)
    }

    /// The install box's container name: `ch-<id8>-<n>-install`.
    pub fn install_name(&self) -> String {
        format!("{}-install", self.test_name())
    }
}

/// The test box: no network, read-only worktree and root, a small tmpfs /tmp,
/// non-root, no capabilities, no new privileges, an init that reaps orphans,
/// memory without swap, one CPU, bounded processes and open files.
pub fn test_box(spec: &BoxSpec) -> ContainerCreateBody {
    // Never root: the worktree's owner when that is a normal user (so it can
    // read files only its owner may), nobody otherwise.
    let user = match spec.owner {
        (0, _) => NOBODY.to_owned(),
        (uid, gid) => format!("{uid}:{gid}"),
    };
    let mut env = common_env(spec);
    // Tests must not try to write caches into the read-only worktree.
    env.push("PYTHONDONTWRITEBYTECODE=1".into());
    env.push("PYTEST_ADDOPTS=-p no:cacheprovider".into());
    env.push("CARGO_TARGET_DIR=/tmp/target".into());
    env.push("CARGO_NET_OFFLINE=true".into());
    body(spec, "test", user, env, "none", true)
}

/// The install box: like the test box but with the network on and the worktree
/// writable, so the dependencies land in it. It runs as the worktree's owner so
/// that what it writes can be removed with the worktree; install scripts are
/// off through the command and through `npm_config_ignore_scripts`.
pub fn install_box(spec: &BoxSpec) -> ContainerCreateBody {
    let user = format!("{}:{}", spec.owner.0, spec.owner.1);
    let mut env = common_env(spec);
    env.push("npm_config_ignore_scripts=true".into());
    env.push("npm_config_audit=false".into());
    env.push("npm_config_fund=false".into());
    body(spec, "install", user, env, "bridge", false)
}

fn common_env(spec: &BoxSpec) -> Vec<String> {
    let mut env = vec![
        format!("TZ={}", spec.timezone),
        "HOME=/tmp".into(),
        "CI=true".into(),
        "npm_config_cache=/tmp/.npm".into(),
        "npm_config_update_notifier=false".into(),
    ];
    env.extend(spec.extra_env.iter().cloned());
    env
}

fn body(
    spec: &BoxSpec,
    role: &str,
    user: String,
    env: Vec<String>,
    network: &str,
    read_only_worktree: bool,
) -> ContainerCreateBody {
    let limits = &spec.limits;
    let labels = HashMap::from([
        (SESSION_LABEL.to_owned(), spec.session_id.to_string()),
        (ROLE_LABEL.to_owned(), role.to_owned()),
        (RUN_LABEL.to_owned(), spec.n.to_string()),
    ]);
    let memory = i64::try_from(limits.memory_bytes).unwrap_or(i64::MAX);
    let host_config = HostConfig {
        network_mode: Some(network.to_owned()),
        memory: Some(memory),
        // Equal to memory: no swap on top.
        memory_swap: Some(memory),
        nano_cpus: Some((limits.cpus * 1e9) as i64),
        pids_limit: Some(i64::from(limits.pids)),
        ulimits: Some(vec![ResourcesUlimits {
            name: Some("nofile".into()),
            soft: Some(i64::from(limits.open_files)),
            hard: Some(i64::from(limits.open_files)),
        }]),
        mounts: Some(vec![Mount {
            target: Some(WORKDIR.into()),
            source: Some(spec.worktree.to_string_lossy().into_owned()),
            typ: Some(MountType::BIND),
            read_only: Some(read_only_worktree),
            ..Default::default()
        }]),
        readonly_rootfs: Some(true),
        tmpfs: Some(HashMap::from([(
            "/tmp".to_owned(),
            // exec: tests run what they build there (cargo's test binaries);
            // the engine's default for --tmpfs is noexec.
            format!("rw,exec,nosuid,nodev,size={},mode=1777", limits.tmp_bytes),
        )])),
        cap_drop: Some(vec!["ALL".into()]),
        security_opt: Some(vec!["no-new-privileges".into()]),
        init: Some(true),
        // Output is read by attaching; nothing is written to the engine's disk,
        // so a test printing gigabytes costs neither disk nor memory.
        log_config: Some(HostConfigLogConfig {
            typ: Some("none".into()),
            config: None,
        }),
        ..Default::default()
    };
    ContainerCreateBody {
        image: Some(spec.image.clone()),
        cmd: Some(vec!["sh".into(), "-c".into(), spec.command.clone()]),
        entrypoint: Some(Vec::new()),
        user: Some(user),
        env: Some(env),
        working_dir: Some(WORKDIR.into()),
        labels: Some(labels),
        network_disabled: Some(network == "none"),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        tty: Some(false),
        host_config: Some(host_config),
        ..Default::default()
    }
}

/// The same box as `docker run` flags (without `docker run` itself), image and
/// command last: what a person would type to get the identical container.
pub fn docker_run_args(name: &str, body: &ContainerCreateBody) -> Vec<String> {
    let mut args: Vec<String> = vec!["--rm".into(), "--name".into(), name.into()];
    let mut flag = |k: &str, v: Option<String>| {
        args.push(k.to_owned());
        args.extend(v);
    };
    if let Some(user) = &body.user {
        flag("--user", Some(user.clone()));
    }
    if let Some(dir) = &body.working_dir {
        flag("--workdir", Some(dir.clone()));
    }
    for e in body.env.iter().flatten() {
        flag("--env", Some(e.clone()));
    }
    let mut labels: Vec<_> = body.labels.iter().flatten().collect();
    labels.sort();
    for (k, v) in labels {
        flag("--label", Some(format!("{k}={v}")));
    }
    if body.entrypoint.as_ref().is_some_and(Vec::is_empty) {
        flag("--entrypoint=", None);
    }
    if let Some(h) = &body.host_config {
        if let Some(v) = &h.network_mode {
            flag("--network", Some(v.clone()));
        }
        if let Some(v) = h.memory {
            flag("--memory", Some(v.to_string()));
        }
        if let Some(v) = h.memory_swap {
            flag("--memory-swap", Some(v.to_string()));
        }
        if let Some(v) = h.nano_cpus {
            flag("--cpus", Some(format!("{}", v as f64 / 1e9)));
        }
        if let Some(v) = h.pids_limit {
            flag("--pids-limit", Some(v.to_string()));
        }
        for u in h.ulimits.iter().flatten() {
            let name = u.name.clone().unwrap_or_default();
            let (soft, hard) = (u.soft.unwrap_or(0), u.hard.unwrap_or(0));
            flag("--ulimit", Some(format!("{name}={soft}:{hard}")));
        }
        for m in h.mounts.iter().flatten() {
            let mut spec = format!(
                "type=bind,source={},target={}",
                m.source.clone().unwrap_or_default(),
                m.target.clone().unwrap_or_default()
            );
            if m.read_only == Some(true) {
                spec.push_str(",readonly");
            }
            flag("--mount", Some(spec));
        }
        if h.readonly_rootfs == Some(true) {
            flag("--read-only", None);
        }
        let mut tmpfs: Vec<_> = h.tmpfs.iter().flatten().collect();
        tmpfs.sort();
        for (path, opts) in tmpfs {
            flag("--tmpfs", Some(format!("{path}:{opts}")));
        }
        for c in h.cap_drop.iter().flatten() {
            flag("--cap-drop", Some(c.clone()));
        }
        for s in h.security_opt.iter().flatten() {
            flag("--security-opt", Some(s.clone()));
        }
        if h.init == Some(true) {
            flag("--init", None);
        }
        if let Some(t) = h.log_config.as_ref().and_then(|l| l.typ.clone()) {
            flag("--log-driver", Some(t));
        }
    }
    args.push(body.image.clone().unwrap_or_default());
    args.extend(body.cmd.iter().flatten().cloned());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(owner: (u32, u32)) -> BoxSpec {
        BoxSpec {
            session_id: SessionId::parse("3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42").unwrap(),
            n: 7,
            image: "img:1".into(),
            command: "npm test".into(),
            worktree: PathBuf::from("/home/me/.codehands/worktrees/abc/3f2a9c1e"),
            owner,
            timezone: "Asia/Karachi".into(),
            limits: BoxLimits::default(),
            extra_env: Vec::new(),
        }
    }

    fn host(body: &ContainerCreateBody) -> &HostConfig {
        body.host_config.as_ref().expect("a host config")
    }

    /// Every lock both boxes share.
    fn assert_common_locks(body: &ContainerCreateBody) {
        let h = host(body);
        assert_eq!(h.memory, Some(1 << 30), "1 GB of memory");
        assert_eq!(h.memory_swap, Some(1 << 30), "no swap on top of memory");
        assert_eq!(h.nano_cpus, Some(1_000_000_000), "one CPU");
        assert_eq!(h.pids_limit, Some(256), "256 processes");
        let nofile = h
            .ulimits
            .as_ref()
            .unwrap()
            .iter()
            .find(|u| u.name.as_deref() == Some("nofile"))
            .unwrap();
        assert_eq!(
            (nofile.soft, nofile.hard),
            (Some(1024), Some(1024)),
            "open files bounded"
        );
        assert_eq!(h.readonly_rootfs, Some(true), "read-only root");
        let tmp = &h.tmpfs.as_ref().unwrap()["/tmp"];
        assert!(
            tmp.contains("size=67108864"),
            "tmpfs /tmp with a size: {tmp}"
        );
        assert!(tmp.contains("nosuid") && tmp.contains("nodev"), "{tmp}");
        assert_eq!(
            h.cap_drop.as_deref(),
            Some(&["ALL".to_owned()][..]),
            "cap-drop ALL"
        );
        assert_eq!(h.cap_add, None, "no capability added back");
        assert_eq!(h.privileged, None, "never privileged");
        assert_eq!(
            h.security_opt.as_deref(),
            Some(&["no-new-privileges".to_owned()][..])
        );
        assert_eq!(h.init, Some(true), "an init that reaps orphans");
        assert_eq!(
            h.log_config.as_ref().unwrap().typ.as_deref(),
            Some("none"),
            "no log on the engine's disk"
        );
        assert_eq!(h.pid_mode, None, "own pid namespace");
        assert_eq!(h.ipc_mode, None);
        assert_eq!(h.binds, None, "only the one mount");
        let mounts = h.mounts.as_ref().unwrap();
        assert_eq!(mounts.len(), 1);
        assert_eq!(
            mounts[0].source.as_deref(),
            Some("/home/me/.codehands/worktrees/abc/3f2a9c1e")
        );
        assert_eq!(mounts[0].target.as_deref(), Some(WORKDIR));
        assert_eq!(mounts[0].typ, Some(MountType::BIND));
        let env = body.env.as_ref().unwrap();
        assert!(
            env.contains(&"TZ=Asia/Karachi".to_owned()),
            "the timezone: {env:?}"
        );
        assert!(env.contains(&"HOME=/tmp".to_owned()));
        assert_eq!(body.working_dir.as_deref(), Some(WORKDIR));
        assert_eq!(
            body.cmd.as_deref(),
            Some(&["sh".to_owned(), "-c".to_owned(), "npm test".to_owned()][..])
        );
        assert_eq!(
            body.entrypoint.as_deref(),
            Some(&[][..]),
            "the image's entrypoint cannot wrap the command"
        );
        let labels = body.labels.as_ref().unwrap();
        assert_eq!(
            labels[SESSION_LABEL],
            "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42"
        );
        assert_eq!(labels[RUN_LABEL], "7");
    }

    #[test]
    fn the_test_box_is_locked() {
        let s = spec((1000, 1000));
        let body = test_box(&s);
        assert_common_locks(&body);
        let h = host(&body);
        assert_eq!(h.network_mode.as_deref(), Some("none"), "no network");
        assert_eq!(body.network_disabled, Some(true));
        assert_eq!(
            h.mounts.as_ref().unwrap()[0].read_only,
            Some(true),
            "the worktree is read-only"
        );
        assert_eq!(
            body.user.as_deref(),
            Some("1000:1000"),
            "the worktree's owner, not root"
        );
        assert_eq!(body.labels.as_ref().unwrap()[ROLE_LABEL], "test");
        assert_eq!(s.test_name(), "ch-3f2a9c1e-7");
        // A root-owned worktree still gets a non-root box.
        assert_eq!(test_box(&spec((0, 0))).user.as_deref(), Some(NOBODY));
    }

    #[test]
    fn the_install_box_has_network_but_no_scripts() {
        let s = spec((1000, 1000));
        let body = install_box(&s);
        assert_common_locks(&body);
        let h = host(&body);
        assert_eq!(
            h.network_mode.as_deref(),
            Some("bridge"),
            "the install box fetches"
        );
        assert_eq!(
            h.mounts.as_ref().unwrap()[0].read_only,
            Some(false),
            "dependencies land in the worktree"
        );
        assert!(
            body.env
                .as_ref()
                .unwrap()
                .contains(&"npm_config_ignore_scripts=true".to_owned())
        );
        assert_eq!(
            body.user.as_deref(),
            Some("1000:1000"),
            "writes as the worktree's owner"
        );
        assert_eq!(body.labels.as_ref().unwrap()[ROLE_LABEL], "install");
        assert_eq!(s.install_name(), "ch-3f2a9c1e-7-install");
    }

    #[test]
    fn docker_run_args_spell_every_lock() {
        let s = spec((1000, 1000));
        let args = docker_run_args(&s.test_name(), &test_box(&s)).join(" ");
        for flag in [
            "--network none",
            "--memory 1073741824",
            "--memory-swap 1073741824",
            "--cpus 1",
            "--pids-limit 256",
            "--ulimit nofile=1024:1024",
            "--mount type=bind,source=/home/me/.codehands/worktrees/abc/3f2a9c1e,target=/work,readonly",
            "--read-only",
            "--tmpfs /tmp:rw,exec,nosuid,nodev,size=67108864,mode=1777",
            "--cap-drop ALL",
            "--security-opt no-new-privileges",
            "--init",
            "--user 1000:1000",
            "--env TZ=Asia/Karachi",
            "--label codehands.session=3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42",
            "--name ch-3f2a9c1e-7",
        ] {
            assert!(args.contains(flag), "missing {flag:?} in {args}");
        }
        assert!(args.ends_with("img:1 sh -c npm test"), "{args}");
    }
}
