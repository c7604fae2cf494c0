//! [`DockerEngine`]: the contract's `Confinement` with the box on a Docker engine or swarm.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use runner_contract::private::PrivateRoot;
use runner_contract::{
    ConfineRequest, Confinement, Engine, Error, ErrorKind, Invocation, Result, StdinClose,
};

use crate::plan::{RemoteLimits, RemotePlan};

/// The image a remote box runs by default, built by `cargo xtask images`: a small root with
/// `codehands` (the box's init, and the fake agent) and the agent programs installed in it.
pub const REMOTE_IMAGE: &str = "codehands/remote:1";

/// Boxes on the Docker engine `DOCKER_HOST` names, or on the swarm it manages.
#[derive(Debug, Clone)]
pub struct DockerEngine {
    helper: Option<PathBuf>,
    docker_host: Option<String>,
    image: String,
    limits: RemoteLimits,
    constraints: Vec<String>,
    ssh_env: Vec<(String, String)>,
    tls_verify: bool,
    caller_home: Option<PathBuf>,
    pool: u32,
}

impl DockerEngine {
    /// Boxes driven by `helper` (the `codehands` binary, whose `__remote` is the shim) on the
    /// engine `docker_host` names (the caller's `DOCKER_HOST`; `None`: the local socket).
    pub fn new(helper: Option<PathBuf>, docker_host: Option<String>) -> Self {
        Self {
            helper,
            docker_host,
            image: REMOTE_IMAGE.to_owned(),
            limits: RemoteLimits::default(),
            constraints: Vec::new(),
            ssh_env: Vec::new(),
            tls_verify: false,
            caller_home: None,
            pool: 0,
        }
    }

    /// On a swarm, `size` warm boxes kept started ahead of the runs, each taking one run
    /// (docs/remote-box.md, "Warm boxes"); 0: none.
    pub fn with_pool(mut self, size: u32) -> Self {
        self.pool = size;
        self
    }

    /// The caller's home, where the agents' login files are (`~/.claude/.credentials.json`).
    pub fn with_caller_home(mut self, home: Option<PathBuf>) -> Self {
        self.caller_home = home;
        self
    }

    /// What `ssh` is given to reach an `ssh://` engine: the caller's `HOME` and
    /// `SSH_AUTH_SOCK` (its keys, agent and known hosts).
    pub fn with_ssh_env(mut self, env: Vec<(String, String)>) -> Self {
        self.ssh_env = env;
        self
    }

    /// Whether the caller set `DOCKER_TLS_VERIFY` (a TLS engine, which this build refuses
    /// with what to do instead).
    pub fn with_tls_verify(mut self, tls_verify: bool) -> Self {
        self.tls_verify = tls_verify;
        self
    }

    /// Another image (one the user pushed to a registry the cluster pulls from).
    pub fn with_image(mut self, image: impl Into<String>) -> Self {
        self.image = image.into();
        self
    }

    /// Other limits.
    pub fn with_limits(mut self, limits: RemoteLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Swarm placement constraints (`node.labels.codehands == runs`).
    pub fn with_constraints(mut self, constraints: Vec<String>) -> Self {
        self.constraints = constraints;
        self
    }

    fn helper(&self) -> Result<&Path> {
        self.helper
            .as_deref()
            .filter(|h| h.is_file())
            .ok_or_else(|| {
                unsupported(
                "a remote box needs the `codehands` binary to drive it, which was not found: put \
                 it on PATH, or pass --engine local"
                    .to_owned(),
            )
            })
    }
}

fn unsupported(message: String) -> Error {
    Error::new(ErrorKind::Unsupported, message)
}

/// A local session is never boxed on an engine.
fn remote_only(engine: Engine) -> Result<()> {
    if engine == Engine::Local {
        return Err(unsupported(
            "the Docker engine runs no local box: use the local confinement".to_owned(),
        ));
    }
    Ok(())
}

/// The plan of `run_dir`, when there is one.
pub(crate) fn plan_in(run_dir: &Path) -> Option<RemotePlan> {
    let bytes = runner_contract::private::read_no_follow(&RemotePlan::file_in(run_dir)).ok()??;
    RemotePlan::from_json(&bytes).ok()
}

impl Confinement for DockerEngine {
    fn available(&self) -> Result<()> {
        self.helper().map(drop)
    }

    fn available_on(&self, engine: Engine) -> Result<()> {
        remote_only(engine)?;
        self.available()
    }

    fn wrap(&self, request: &ConfineRequest<'_>) -> Result<Invocation> {
        remote_only(request.engine)?;
        let helper = self.helper()?;
        crate::connect::check_host(self.docker_host.as_deref(), self.tls_verify)
            .map_err(unsupported)?;
        let invocation = request.invocation;
        // A conversing agent's first lines are its turn's input; what the runner writes later
        // (steering, answers) cannot reach a box elsewhere: a swarm's task has no stdin at
        // all. The command line refuses that input for remote sessions (README.md, "Where
        // runs run").
        let stdin_lines = match invocation.close_stdin {
            StdinClose::AfterWrite => None,
            StdinClose::AfterResult | StdinClose::Conversation => Some(invocation.stdin.len()),
        };
        let egress = crate::egress::plan(request.needs, request.env, request.engine)?;
        let program = invocation
            .program
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| {
                unsupported(format!(
                    "the agent's program {:?} has no name a box can look up",
                    invocation.program
                ))
            })?
            .to_owned();
        // The run's files are not on the box's machine: each goes in with the inputs, and an
        // argument that names one names its copy in the box.
        let files: Vec<(std::path::PathBuf, String)> = request
            .files
            .iter()
            .enumerate()
            .map(|(i, file)| {
                let name = file
                    .file_name()
                    .and_then(|n| n.to_str())
                    .filter(|n| crate::frame::is_file_name(n))
                    .unwrap_or("file");
                (file.clone(), format!("{i}-{name}"))
            })
            .collect();
        // Likewise a base URL the agent was handed in an argument (Codex's provider is set by
        // `-c` overrides) names the box's listener, as its variable does (`egress::plan`).
        let mut renames: Vec<(String, String)> = files
            .iter()
            .map(|(file, name)| {
                (
                    file.display().to_string(),
                    format!("{}/{name}", crate::plan::BOX_FILES),
                )
            })
            .collect();
        renames.extend(egress.env.iter().filter_map(|(name, value)| {
            let before = request.env.iter().rev().find(|(k, _)| k == name)?;
            Some((before.1.clone(), value.clone()))
        }));
        let args = invocation
            .args
            .iter()
            .map(|a| {
                a.to_str().map(|text| {
                    renames
                        .iter()
                        .filter(|(from, _)| !from.is_empty())
                        .fold(text.to_owned(), |text, (from, to)| text.replace(from, to))
                })
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                unsupported(
                    "the agent's arguments are not UTF-8, which a box's command must be".to_owned(),
                )
            })?;
        // The agent's login files go in with its inputs, as the local box hands them in.
        let login = self.caller_home.as_deref().map_or_else(Vec::new, |home| {
            request
                .needs
                .login
                .iter()
                .filter_map(|l| {
                    let rel = l.path.to_str().filter(|p| crate::frame::is_home_path(p))?;
                    Some((home.join(&l.path), rel.to_owned(), !l.copy))
                })
                .collect()
        });
        // The person's image (`--image`, `[box] image`), else the repo's devcontainer's, with
        // codehands added on the engine; naming our own image runs it as it is.
        let user_image = match request.image {
            Some(name) if name == self.image => None,
            Some(name) => Some(crate::plan::UserImage::Named {
                name: name.to_owned(),
            }),
            None => crate::devcontainer::read(request.worktree).map_err(|e| {
                Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "the repo's devcontainer cannot be the box's image: {e} (or run in \
                         codehands' own: --image {})",
                        self.image
                    ),
                )
            })?,
        };
        let user_image_is_none = user_image.is_none();
        let plan = RemotePlan {
            engine: request.engine,
            box_id: uuid::Uuid::new_v4().simple().to_string(),
            nonce: uuid::Uuid::new_v4().simple().to_string(),
            session: request.session_id.to_string(),
            image: self.image.clone(),
            docker_host: self.docker_host.clone(),
            ssh_env: self.ssh_env.clone(),
            worktree: request.worktree.to_owned(),
            program,
            args,
            limits: self.limits,
            constraints: self.constraints.clone(),
            egress,
            stdin_lines,
            files,
            login,
            home_file: Some(RemotePlan::home_file_in(request.run_dir)),
            user_image,
            derived: None,
            nested_sandbox: request.needs.nested_sandbox,
            // Warm boxes are a swarm's (an engine's box is one container, made as fast), and only
            // for codehands' own image without a nested sandbox: a warm box is started before
            // its run, so it cannot know the person's image or the nested-sandbox settings.
            pool: if request.engine == Engine::Swarm
                && user_image_is_none
                && !request.needs.nested_sandbox
            {
                self.pool
            } else {
                0
            },
            driven: false,
        };
        let file = RemotePlan::file_in(request.run_dir);
        let root = PrivateRoot::new(request.run_dir);
        root.ensure_dir(request.run_dir)?;
        root.replace_file(&file, &plan.to_json())?;
        Ok(Invocation {
            program: helper.to_owned(),
            args: vec![OsString::from(crate::SHIM_COMMAND), file.into_os_string()],
            env: invocation.env.clone(),
            stdin: invocation.stdin.clone(),
            close_stdin: invocation.close_stdin,
        })
    }

    fn cleanup(&self, run_dir: &Path) {
        let Some(plan) = plan_in(run_dir) else {
            return;
        };
        // A shim that saw its turn's end started the box's removal itself.
        if crate::phases::Phases::read(run_dir).is_some_and(|p| p.box_id == plan.box_id) {
            return;
        }
        // One killed (a stop, a watchdog) could not: a process of its own does it, so the
        // turn's end does not wait for the engine; without the helper, this thread waits.
        let detached = self
            .helper
            .as_deref()
            .is_some_and(|helper| crate::shim::remove_detached(helper, &plan, Some(run_dir)));
        if !detached {
            // The runner calls this from its own runtime: the engine is asked from a thread
            // of its own, with a runtime of its own.
            let _ = std::thread::spawn(move || crate::shim::remove_leftovers(&plan)).join();
        }
    }

    fn discard(&self, run_dir: &Path) {
        self.cleanup(run_dir);
        let _ = std::fs::remove_file(RemotePlan::file_in(run_dir));
        let _ = std::fs::remove_file(RemotePlan::home_file_in(run_dir));
    }
}
