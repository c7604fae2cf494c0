//! The box plan: everything one box is made of, as plain data.
//!
//! The runner writes it to `runs/<id>/box.json` before the spawn, and the outer process
//! (`codehands __box runs/<id>/box.json`) reads it back strictly and does exactly what it
//! says. It holds paths, names and numbers, never a secret: the agent's provider keys reach
//! it through the environment, as they reach an agent without a box.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use runner_contract::{Error, Result};
use serde::{Deserialize, Serialize};

/// The plan's format; another number is refused when read.
pub const PLAN_VERSION: u32 = 1;

/// Where the unix sockets of the relays appear inside the box (a short path: a socket's
/// path is limited to 107 bytes).
pub const SOCKETS_INSIDE: &str = "/run/codehands";

/// One box.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BoxPlan {
    /// [`PLAN_VERSION`].
    pub version: u32,
    /// The session this box belongs to (names its cgroup).
    pub session: String,
    /// The bubblewrap program, outside.
    pub bwrap: PathBuf,
    /// The program that answers `__box-init` inside the box (bound read-only at its path).
    pub helper: PathBuf,
    /// The agent's program (absolute, as it is found inside) and its arguments.
    pub command: BoxCommand,
    /// The worktree, bound read-write at its own path; the agent starts there.
    pub worktree: PathBuf,
    /// Bind the worktree read-only instead (a workflow's read-only phase).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub worktree_read_only: bool,
    /// The private HOME of the session (kept across turns), read-write at its own path.
    pub home: PathBuf,
    /// The private TMPDIR of the session (kept across turns), read-write at its own path;
    /// `/tmp` is a fresh one per box.
    pub tmp: PathBuf,
    /// The box's own files outside (`runs/<id>/box/`): its `/etc` files and its sockets.
    pub state: PathBuf,
    /// The uid and gid inside (never 0).
    pub uid: u32,
    /// The gid inside.
    pub gid: u32,
    /// System folders: bound read-only, or a symbolic link where the host has one.
    pub system: Vec<SystemPath>,
    /// Files and folders of `/etc` bound read-only (a selection, never `/etc` whole).
    pub etc: Vec<PathBuf>,
    /// More folders and files bound read-only at their own path: PATH folders outside the
    /// caller's home, the agent's program or install folder.
    pub tools: Vec<PathBuf>,
    /// Symbolic links the host has on the way to a tool as the agent names it (an install
    /// linked into place), made the same in the box so that name leads to the tool.
    pub links: Vec<SymLink>,
    /// The repository's git folders a worktree needs, when there are.
    pub git: Option<GitDirs>,
    /// The agent's login, handed in file by file.
    pub login: Vec<LoginFile>,
    /// Variables the box sets for the agent over its environment (HOME, TMPDIR, the
    /// proxy): names and paths, no secret.
    pub env: Vec<(String, String)>,
    /// The network: what the agent may reach, and how.
    pub network: Network,
    /// The limits of the box's processes.
    pub limits: Limits,
    /// The cgroup that enforces them, when the machine gives one (else no limit, and
    /// `codehands doctor` says so).
    pub cgroup: Option<Cgroup>,
    /// The agent runs its own sandbox inside the box (`BoxNeeds::nested_sandbox`): its
    /// system call filter allows new namespaces and mounts ([`crate::seccomp::Policy`]).
    /// Absent in a plan is `false`, the stricter filter.
    #[serde(default)]
    pub nested_sandbox: bool,
    /// The person's checkout's dependency folders the worktree lacks, read-only in the box
    /// ([`crate::deps`]), mounted after the worktree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deps: Vec<Mount>,
}

/// A folder of the host mounted read-only somewhere in the box.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Mount {
    /// The host's folder.
    pub source: PathBuf,
    /// Where it appears in the box.
    pub dest: PathBuf,
}

/// The agent's program and arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BoxCommand {
    /// The program, absolute, as found inside the box.
    pub program: PathBuf,
    /// What the program sees as its name (`argv[0]`): the path the agent asked for.
    pub argv0: String,
    /// Its arguments.
    pub args: Vec<String>,
}

/// A system folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SystemPath {
    /// Its path (`/usr`, `/lib64` …).
    pub path: PathBuf,
    /// Where it points, when the host has it as a symbolic link (`usr/lib`).
    pub link: Option<PathBuf>,
}

/// A symbolic link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SymLink {
    /// Where the link is.
    pub path: PathBuf,
    /// What it points at, as the host's link says.
    pub target: PathBuf,
}

/// The git folders of a worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitDirs {
    /// The repository's common git folder, read-only.
    pub common: PathBuf,
    /// The worktree's own folder under it (`worktrees/<name>`), read-write.
    pub admin: PathBuf,
    /// Files kept read-only over `admin` and the worktree: what git reads there as
    /// configuration (`gitdir`, `commondir`, `config.worktree`, `info/`, `modules/`, the
    /// worktree's `.git` file; [`crate::git_admin`] says why each).
    pub keep: Vec<PathBuf>,
}

/// One file of the agent's login.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoginFile {
    /// The caller's file.
    pub source: PathBuf,
    /// Where it goes in the private home.
    pub dest: PathBuf,
    /// Bound read-only, or copied once (the agent may change its copy).
    pub how: LoginHow,
}

/// How a login file reaches the box.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoginHow {
    /// Bound read-only over its place in the private home.
    ReadOnly,
    /// Copied into the private home when it is not there yet (kept across turns).
    Copy,
}

/// The box's network: a namespace of its own with only `lo`, and these relays.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Network {
    /// What the init listens on inside, and where each leads.
    pub endpoints: Vec<Endpoint>,
    /// Names the box's own `/etc/hosts` maps to a loopback address.
    pub hosts: Vec<HostEntry>,
}

/// One address the agent can connect to inside the box.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Endpoint {
    /// Where the init listens, inside.
    pub listen: SocketAddr,
    /// The unix socket's file name under `state/sockets/` (and [`SOCKETS_INSIDE`]).
    pub socket: String,
    /// Where the outer end sends what arrives.
    pub to: Destination,
}

/// Where the outer end of a relay connects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Destination {
    /// Always this one host and port (the provider's base URL).
    Direct(HostPort),
    /// An HTTP CONNECT proxy that connects only to these.
    Proxy(Vec<HostPort>),
}

/// A host name or address, and a port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostPort {
    /// A name or an IP address (without brackets).
    pub host: String,
    /// The port.
    pub port: u16,
}

impl HostPort {
    /// Reads `host:port` (`[v6]:port` for an IPv6 address); refuses anything else.
    pub fn parse(text: &str) -> Result<Self> {
        let bad = || {
            Error::invalid_input(format!(
                "{text:?} is not host:port: write it like \"api.example.com:443\""
            ))
        };
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (host, port) = rest.split_once("]:").ok_or_else(bad)?;
            (host, port)
        } else {
            text.rsplit_once(':').ok_or_else(bad)?
        };
        let port: u16 = port.parse().map_err(|_| bad())?;
        let host_ok = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
        if !host_ok || port == 0 {
            return Err(bad());
        }
        Ok(Self {
            host: host.to_ascii_lowercase(),
            port,
        })
    }
}

impl std::fmt::Display for HostPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// A line of the box's `/etc/hosts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostEntry {
    /// The name.
    pub name: String,
    /// The loopback address it stands for inside.
    pub ip: std::net::IpAddr,
}

/// The limits of a box, as data; `None` is no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Limits {
    /// Memory of every process in the box together, swap included, in bytes.
    pub memory_bytes: Option<u64>,
    /// Processes and threads in the box together.
    pub pids: Option<u64>,
}

impl Default for Limits {
    /// 8 GiB and 4096 tasks: far above what an agent and a test suite use, low enough that
    /// a fork bomb or a runaway build cannot take the machine.
    fn default() -> Self {
        Self {
            memory_bytes: Some(8 << 30),
            pids: Some(4096),
        }
    }
}

/// The cgroup of a box (one per session).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Cgroup {
    /// cgroup v1: one folder per controller.
    V1 {
        /// Under the memory controller.
        memory: PathBuf,
        /// Under the pids controller.
        pids: PathBuf,
    },
    /// cgroup v2: one folder.
    V2 {
        /// The folder.
        dir: PathBuf,
    },
}

impl Cgroup {
    /// Its folders.
    pub fn dirs(&self) -> Vec<&Path> {
        match self {
            Self::V1 { memory, pids } => vec![memory, pids],
            Self::V2 { dir } => vec![dir],
        }
    }
}

impl BoxPlan {
    /// The plan's file in a run's folder.
    pub fn file_in(run_dir: &Path) -> PathBuf {
        run_dir.join(runner_contract::run_folder::BOX_PLAN)
    }

    /// The folder of the relays' sockets, outside.
    pub fn sockets_dir(&self) -> PathBuf {
        self.state.join("sockets")
    }

    /// The folder of the box's generated `/etc` files, outside.
    pub fn etc_dir(&self) -> PathBuf {
        self.state.join("etc")
    }

    /// Reads a plan strictly: unknown fields, another version, a relative path or a uid of
    /// 0 are refused.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        let plan: Self = serde_json::from_slice(bytes).map_err(|e| {
            Error::invalid_input(format!(
                "the box plan cannot be read: {e}; start the run again"
            ))
        })?;
        plan.check()?;
        Ok(plan)
    }

    /// The plan as JSON.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("a plan is plain data")
    }

    /// What every plan keeps: version, absolute paths, a non-root uid, socket names that are
    /// plain file names.
    pub fn check(&self) -> Result<()> {
        if self.version != PLAN_VERSION {
            return Err(Error::invalid_input(format!(
                "the box plan is version {}, this codehands reads {PLAN_VERSION}: start the run again with one codehands",
                self.version
            )));
        }
        if self.uid == 0 || self.gid == 0 {
            return Err(Error::invalid_input(
                "the box plan runs the agent as root: never",
            ));
        }
        let mut paths: Vec<&Path> = vec![
            &self.bwrap,
            &self.helper,
            &self.command.program,
            &self.worktree,
            &self.home,
            &self.tmp,
            &self.state,
        ];
        paths.extend(self.system.iter().map(|s| s.path.as_path()));
        paths.extend(self.etc.iter().map(PathBuf::as_path));
        paths.extend(self.tools.iter().map(PathBuf::as_path));
        paths.extend(self.links.iter().map(|l| l.path.as_path()));
        paths.extend(self.login.iter().flat_map(|l| [&*l.source, &*l.dest]));
        paths.extend(self.deps.iter().flat_map(|d| [&*d.source, &*d.dest]));
        if let Some(git) = &self.git {
            paths.extend([git.common.as_path(), git.admin.as_path()]);
            paths.extend(git.keep.iter().map(PathBuf::as_path));
            let dot_git = self.worktree.join(".git");
            if let Some(bad) = git
                .keep
                .iter()
                .find(|k| !k.starts_with(&git.admin) && **k != dot_git)
            {
                return Err(Error::invalid_input(format!(
                    "the box plan keeps {} read-only, which is neither in the worktree's git \
                     folder nor its .git file",
                    bad.display()
                )));
            }
        }
        if let Some(cgroup) = &self.cgroup {
            paths.extend(cgroup.dirs());
        }
        if let Some(bad) = paths.iter().find(|p| !is_plain_absolute(p)) {
            return Err(Error::invalid_input(format!(
                "the box plan names {}, which is not a plain absolute path",
                bad.display()
            )));
        }
        if let Some(login) = self.login.iter().find(|l| !l.dest.starts_with(&self.home)) {
            return Err(Error::invalid_input(format!(
                "the box plan puts a login file at {}, outside the private home",
                login.dest.display()
            )));
        }
        for endpoint in &self.network.endpoints {
            let name = &endpoint.socket;
            let plain = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                && !name.starts_with('.');
            if !plain {
                return Err(Error::invalid_input(format!(
                    "the box plan names the socket {name:?}, which is not a plain file name"
                )));
            }
            if !endpoint.listen.ip().is_loopback() {
                return Err(Error::invalid_input(format!(
                    "the box plan listens on {}, which is not a loopback address",
                    endpoint.listen
                )));
            }
        }
        Ok(())
    }
}

/// Absolute, and without `.` or `..` components.
fn is_plain_absolute(path: &Path) -> bool {
    path.is_absolute()
        && path.components().all(|c| {
            matches!(
                c,
                std::path::Component::RootDir | std::path::Component::Normal(_)
            )
        })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A plan as the planner makes one, for the tests of every module.
    pub(crate) fn sample() -> BoxPlan {
        BoxPlan {
            version: PLAN_VERSION,
            session: "0b5e2a1c-7d1f-4f5e-9a39-1b0c8f1d2e3f".into(),
            bwrap: "/usr/bin/bwrap".into(),
            helper: "/opt/codehands/bin/codehands".into(),
            command: BoxCommand {
                program: "/opt/agent/bin/agent".into(),
                argv0: "agent".into(),
                args: vec!["-p".into(), "--json".into()],
            },
            worktree: "/home/me/.codehands/worktrees/0123456789ab/0b5e2a1c".into(),
            worktree_read_only: false,
            home: "/home/me/.codehands/runs/S/home".into(),
            tmp: "/home/me/.codehands/runs/S/tmp".into(),
            state: "/home/me/.codehands/runs/S/box".into(),
            uid: 1000,
            gid: 1000,
            system: vec![
                SystemPath {
                    path: "/usr".into(),
                    link: None,
                },
                SystemPath {
                    path: "/lib".into(),
                    link: Some("usr/lib".into()),
                },
            ],
            etc: vec!["/etc/ld.so.cache".into(), "/etc/ssl".into()],
            tools: vec!["/opt/agent".into()],
            links: vec![SymLink {
                path: "/home/me/.cache/agent".into(),
                target: ".agent-1.2.3".into(),
            }],
            git: Some(GitDirs {
                common: "/home/me/repo/.git".into(),
                admin: "/home/me/repo/.git/worktrees/0b5e2a1c".into(),
                keep: vec![
                    "/home/me/repo/.git/worktrees/0b5e2a1c/gitdir".into(),
                    "/home/me/.codehands/worktrees/0123456789ab/0b5e2a1c/.git".into(),
                ],
            }),
            login: vec![
                LoginFile {
                    source: "/home/me/.agent/credentials.json".into(),
                    dest: "/home/me/.codehands/runs/S/home/.agent/credentials.json".into(),
                    how: LoginHow::ReadOnly,
                },
                LoginFile {
                    source: "/home/me/.agent.json".into(),
                    dest: "/home/me/.codehands/runs/S/home/.agent.json".into(),
                    how: LoginHow::Copy,
                },
            ],
            env: vec![("HOME".into(), "/home/me/.codehands/runs/S/home".into())],
            network: Network {
                endpoints: vec![Endpoint {
                    listen: "127.0.0.1:8080".parse().unwrap(),
                    socket: "0.sock".into(),
                    to: Destination::Direct(HostPort {
                        host: "127.0.0.1".into(),
                        port: 8080,
                    }),
                }],
                hosts: Vec::new(),
            },
            limits: Limits::default(),
            cgroup: Some(Cgroup::V1 {
                memory: "/sys/fs/cgroup/memory/codehands-S".into(),
                pids: "/sys/fs/cgroup/pids/codehands-S".into(),
            }),
            nested_sandbox: false,
            deps: Vec::new(),
        }
    }

    #[test]
    fn a_plan_reads_back_the_same() {
        let plan = sample();
        assert_eq!(BoxPlan::from_json(&plan.to_json()).unwrap(), plan);
    }

    #[test]
    fn unknown_fields_and_other_versions_are_refused() {
        let mut json: serde_json::Value = serde_json::from_slice(&sample().to_json()).unwrap();
        json["extra"] = true.into();
        assert!(BoxPlan::from_json(json.to_string().as_bytes()).is_err());
        let mut plan = sample();
        plan.version = 2;
        let err = BoxPlan::from_json(&plan.to_json()).unwrap_err();
        assert!(err.to_string().contains("version 2"), "{err}");
    }

    #[test]
    fn a_plan_without_the_nested_sandbox_field_gets_the_stricter_filter() {
        let mut json: serde_json::Value = serde_json::from_slice(&sample().to_json()).unwrap();
        json.as_object_mut().unwrap().remove("nestedSandbox");
        let plan = BoxPlan::from_json(json.to_string().as_bytes()).unwrap();
        assert!(!plan.nested_sandbox);
        let mut nested = sample();
        nested.nested_sandbox = true;
        assert!(
            BoxPlan::from_json(&nested.to_json())
                .unwrap()
                .nested_sandbox
        );
    }

    #[test]
    fn root_inside_is_refused() {
        let mut plan = sample();
        plan.uid = 0;
        assert!(plan.check().is_err());
    }

    #[test]
    fn relative_or_dotted_paths_are_refused() {
        for bad in ["relative/path", "/home/me/../etc"] {
            let mut plan = sample();
            plan.tools.push(bad.into());
            assert!(plan.check().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_kept_file_outside_the_git_folder_and_the_dot_git_is_refused() {
        let mut plan = sample();
        plan.git
            .as_mut()
            .unwrap()
            .keep
            .push("/home/me/.ssh/id_rsa".into());
        assert!(plan.check().is_err());
    }

    #[test]
    fn a_login_file_outside_the_home_is_refused() {
        let mut plan = sample();
        plan.login[0].dest = "/etc/passwd".into();
        assert!(plan.check().is_err());
    }

    #[test]
    fn socket_names_are_plain_and_listeners_loopback() {
        let mut plan = sample();
        plan.network.endpoints[0].socket = "../x".into();
        assert!(plan.check().is_err());
        let mut plan = sample();
        plan.network.endpoints[0].listen = "0.0.0.0:80".parse().unwrap();
        assert!(plan.check().is_err());
    }

    #[test]
    fn host_port_reads_names_addresses_and_v6() {
        assert_eq!(
            HostPort::parse("API.example.com:443").unwrap(),
            HostPort {
                host: "api.example.com".into(),
                port: 443
            }
        );
        assert_eq!(HostPort::parse("[::1]:8080").unwrap().host, "::1");
        assert_eq!(
            HostPort::parse("[::1]:8080").unwrap().to_string(),
            "[::1]:8080"
        );
        for bad in ["example.com", "example.com:0", ":443", "a b:1", "x:99999"] {
            assert!(HostPort::parse(bad).is_err(), "{bad}");
        }
    }
}
