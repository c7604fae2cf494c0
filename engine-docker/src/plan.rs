//! A remote box as plain data: `runs/<id>/remote.json`, written by `wrap`, read by the shim.

use std::path::{Path, PathBuf};

use runner_contract::Engine;
use serde::{Deserialize, Serialize};

/// Where the box's inputs are inside it: a folder of its own (a tmpfs on a swarm, a volume
/// on an engine), never the image's.
pub const BOX_DIR: &str = "/box";
/// Where the run's files handed to the agent are in the box.
pub const BOX_FILES: &str = "/box/files";
/// The private home of the agent in the box.
pub const BOX_HOME: &str = "/box/home";
/// The label every container, service, config and secret of ours carries (value: the box id),
/// so a shim started again finds its box, and cleanup finds what a dead one left.
pub const LABEL_BOX: &str = "codehands.box";
/// The label naming the session.
pub const LABEL_SESSION: &str = "codehands.session";

/// Where codehands' own root (the init, its loader and C libraries) is in an image made from
/// the person's (`derive`): the init runs through that loader, never the image's C library,
/// so any Linux image of the same machine type takes it (musl, an older glibc, none at all).
pub const OWN_ROOT: &str = "/.codehands";

/// The loader of our image's programs, and where its libraries are, under [`OWN_ROOT`].
#[cfg(target_arch = "aarch64")]
const LOADER: (&str, &str) = ("/lib/ld-linux-aarch64.so.1", "aarch64-linux-gnu");
#[cfg(not(target_arch = "aarch64"))]
const LOADER: (&str, &str) = ("/lib64/ld-linux-x86-64.so.2", "x86_64-linux-gnu");

/// The PATH of a box in codehands' own image.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// How a program of our image (under [`OWN_ROOT`]) is started in the person's image: the
/// loader of ours with its library folders, then the program.
pub fn own_program(program: &str) -> Vec<String> {
    let (loader, triplet) = LOADER;
    let libraries = [
        format!("{OWN_ROOT}/lib/{triplet}"),
        format!("{OWN_ROOT}/usr/lib/{triplet}"),
        format!("{OWN_ROOT}/lib64"),
        format!("{OWN_ROOT}/lib"),
        format!("{OWN_ROOT}/usr/lib"),
    ];
    vec![
        format!("{OWN_ROOT}{loader}"),
        "--library-path".to_owned(),
        libraries.join(":"),
        format!("{OWN_ROOT}/usr/local/bin/{program}"),
    ]
}

/// The person's image a box runs in (docs/remote-box.md, "The repo's own image").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum UserImage {
    /// An image by name (`--image`, `[box] image`, a devcontainer's `image`), which the engine
    /// has or pulls.
    Named {
        /// As `docker pull` takes it.
        name: String,
    },
    /// A devcontainer's Dockerfile, built by the engine from a context packed from the worktree.
    #[serde(rename_all = "camelCase")]
    Build {
        /// The context folder, relative to the worktree (checked inside it, no link on the way).
        context: String,
        /// The Dockerfile, relative to the worktree (same checks).
        dockerfile: String,
        /// `build.args`.
        #[serde(default)]
        args: std::collections::BTreeMap<String, String>,
        /// `build.target`.
        #[serde(default)]
        target: Option<String>,
    },
}

/// Limits of the box, the same as the local box's where the engine has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoteLimits {
    /// Memory (and memory + swap: no swap), in bytes.
    pub memory_bytes: i64,
    /// Processes and threads.
    pub pids: i64,
    /// CPUs, in billionths.
    pub nano_cpus: i64,
    /// What a Kubernetes Job requests (memory, in bytes), so a node does not take more runs
    /// than it holds (a swarm job reserves nothing: README.md, "Where runs run").
    pub reserve_memory_bytes: i64,
    /// CPUs reserved, in billionths.
    pub reserve_nano_cpus: i64,
}

impl Default for RemoteLimits {
    /// 2 GiB, 512 processes, 2 CPUs; 256 MiB and a fortieth of a CPU reserved (an agent mostly
    /// waits for its provider: a 2-CPU node with 24 GiB takes up to 80 runs at once).
    fn default() -> Self {
        Self {
            memory_bytes: 2 << 30,
            pids: 512,
            nano_cpus: 2_000_000_000,
            reserve_memory_bytes: 256 << 20,
            reserve_nano_cpus: 25_000_000,
        }
    }
}

/// One turn's box elsewhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemotePlan {
    /// `docker` or `swarm`.
    pub engine: Engine,
    /// A fresh id per turn: the name and label of everything the engine holds for it.
    pub box_id: String,
    /// Marks the result lines of a swarm box's log (`frame`); the agent never sees it.
    pub nonce: String,
    /// The session, as a label (who started what, on a shared cluster).
    pub session: String,
    /// The image holding the agent programs and `codehands` (`codehands/remote:1`).
    pub image: String,
    /// The engine (`DOCKER_HOST` of the caller when the runner was built; none: the local
    /// socket).
    pub docker_host: Option<String>,
    /// What the `ssh` program reaching an `ssh://` engine is given: the caller's `HOME` and
    /// `SSH_AUTH_SOCK` (its keys, agent and known hosts; the shim's own env is the agent's).
    #[serde(default)]
    pub ssh_env: Vec<(String, String)>,
    /// The worktree: the box gets a checkout of its own at the same path, so the agent's
    /// arguments that name it hold there too.
    pub worktree: PathBuf,
    /// The agent's program, by name, on the image's PATH.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The limits.
    pub limits: RemoteLimits,
    /// Swarm placement constraints besides `node.platform.os == linux`
    /// (`node.labels.codehands == runs`).
    pub constraints: Vec<String>,
    /// The provider endpoints the box reaches through its egress proxy; none: no network.
    #[serde(default)]
    pub egress: crate::egress::Egress,
    /// For an agent that converses: how many lines of the shim's stdin are its input for the
    /// turn (the runner writes them first); the box gets them and then end of input. `None`:
    /// stdin to its end.
    #[serde(default)]
    pub stdin_lines: Option<usize>,
    /// The run's files the agent is handed (its notes): where each is on this machine, and
    /// its name under [`BOX_FILES`] in the box, where the agent's arguments name it.
    #[serde(default)]
    pub files: Vec<(PathBuf, String)>,
    /// The agent's login files: where each is on this machine, where under its home in the box,
    /// and whether read-only there. They travel with the inputs (Swarm secrets on a swarm).
    #[serde(default)]
    pub login: Vec<(PathBuf, String, bool)>,
    /// Where the shim keeps the agent's home as the box left it (`runs/<id>/remote-home.tar`,
    /// bytes never unpacked here), for the next turn's box to start from.
    #[serde(default)]
    pub home_file: Option<PathBuf>,
    /// The person's image the box runs in, with `image`'s codehands added on the engine at run
    /// time; `None`: `image` itself.
    #[serde(default)]
    pub user_image: Option<UserImage>,
    /// The image the shim made of `user_image` on the engine for this turn, and its PATH: set
    /// before the box is made, never written to the plan's file.
    #[serde(skip)]
    pub derived: Option<(String, String)>,
    /// The agent runs its own sandbox in the box (`BoxNeeds::nested_sandbox`): the box gets
    /// the settings `security.rs` gives such an agent, or is refused where it cannot.
    #[serde(default)]
    pub nested_sandbox: bool,
    /// On a swarm: how many warm boxes of this plan's kind to keep started ahead of the runs
    /// (docs/remote-box.md, "Warm boxes"); 0: none, every turn makes its own.
    #[serde(default)]
    pub pool: u32,
    /// Whether a shim has driven this turn before (it notes so in the plan before it makes or
    /// takes a box): only then may the box exist already, and a shim started again asks the
    /// engine for it; a first shim asks nothing (on a loaded swarm the question took 3 s).
    #[serde(default)]
    pub driven: bool,
}

impl RemotePlan {
    /// Where the plan of `run_dir` is.
    pub fn file_in(run_dir: &Path) -> PathBuf {
        run_dir.join(runner_contract::run_folder::REMOTE)
    }

    /// Where the agent's home is kept between the turns of the session of `run_dir`.
    pub fn home_file_in(run_dir: &Path) -> PathBuf {
        run_dir.join(runner_contract::run_folder::REMOTE_HOME)
    }

    /// Keeps `home` (the box's packed home) for the next turn; a failure is said, and the
    /// next turn starts without it.
    pub fn keep_home(&self, home: &[u8]) {
        let Some(file) = &self.home_file else {
            return;
        };
        let kept = file.parent().map_or(Ok(()), |dir| {
            runner_contract::private::PrivateRoot::new(dir).replace_file(file, home)
        });
        if let Err(e) = kept {
            eprintln!("codehands: the agent's home could not be kept for a follow-up: {e}");
        }
    }

    /// The container's or service's name.
    pub fn name(&self) -> String {
        format!("codehands-{}", self.box_id)
    }

    /// The plan as JSON.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// A plan read back, strictly.
    pub fn from_json(bytes: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(bytes)
            .map_err(|e| format!("the remote box's plan is unreadable: {e}"))
    }

    /// The command the box runs: the init, where the worktree is, then the agent.
    pub fn command(&self, result_in_log: bool) -> Vec<String> {
        let mut command = if self.user_image.is_some() {
            own_program("codehands")
        } else {
            vec!["codehands".to_owned()]
        };
        command.extend([
            crate::INIT_COMMAND.to_owned(),
            self.worktree.display().to_string(),
            if result_in_log { "log" } else { "keep" }.to_owned(),
        ]);
        if self.user_image.is_some() {
            command.extend(["--root".to_owned(), OWN_ROOT.to_owned()]);
        }
        for forward in self.egress.forward_args() {
            command.push("--forward".to_owned());
            command.push(forward);
        }
        if let Some(user) = crate::security::hardening(self).agent_user {
            command.extend(["--user".to_owned(), user]);
        }
        if self.nested_sandbox {
            command.push("--nested-sandbox".to_owned());
        }
        command.extend(["--".to_owned(), self.program.clone()]);
        command.extend(self.args.iter().cloned());
        command
    }

    /// The name of the box's egress proxy (a service or a container).
    pub fn egress_name(&self) -> String {
        format!("{}-egress", self.name())
    }

    /// The name of the network with a way out that only the egress proxy is on.
    pub fn outside_network(&self) -> String {
        format!("{}-out", self.name())
    }

    /// The labels of everything made for this box.
    pub fn labels(&self) -> std::collections::HashMap<String, String> {
        std::collections::HashMap::from([
            (LABEL_BOX.to_owned(), self.box_id.clone()),
            (LABEL_SESSION.to_owned(), self.session.clone()),
            (
                "codehands.engine".to_owned(),
                self.engine.as_str().to_owned(),
            ),
        ])
    }

    /// The environment the container is created with: nothing of the agent's (that goes in as
    /// a file), only where its home is and the image's PATH.
    pub fn public_env(&self) -> Vec<String> {
        vec![format!("HOME={BOX_HOME}"), format!("PATH={}", self.path())]
    }

    /// The image the box runs: the one made of the person's for this turn, else `image`.
    pub fn box_image(&self) -> &str {
        self.derived
            .as_ref()
            .map_or(&self.image, |(image, _)| image)
    }

    /// The box's PATH: the person's image's (then ours, for the egress proxy of our image),
    /// else ours.
    pub fn path(&self) -> String {
        match &self.derived {
            Some((_, path)) if !path.is_empty() => format!("{path}:{DEFAULT_PATH}"),
            _ => DEFAULT_PATH.to_owned(),
        }
    }
}
