//! The runner's parts, in one leaf module: [`LocalRunner`] itself, built here, and the narrow
//! handles its methods give the parts ([`Records`]: the home and the session store;
//! [`Adapters`]: version control, memory, sandbox, box; [`Supervision`]: what a supervisor
//! needs; [`Launcher`]: what starts one). A part takes the handle it uses, never the runner
//! whole, and nothing here names another module of the runner, so no part reaches back up
//! to a hub (ARCHITECTURE.md, "runner-core").

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::registry::{AgentOrigin, AgentRegistry};
use crate::store::SessionStore;
use runner_contract::home::Home;
use runner_contract::traits::agent::Agent;
use runner_contract::traits::memory::MemoryStore;
use runner_contract::traits::sandbox::Sandbox;
use runner_contract::traits::vcs::Vcs;

/// The longest prompt accepted, in bytes.
pub const MAX_PROMPT_BYTES: usize = 8 << 20;

/// The watchdog's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watchdog {
    /// No output for this long ends the run (`task.failed` with reason `idle`).
    pub idle: Duration,
    /// A result printed but no exit within this long ends the run (reason `linger`).
    pub linger: Duration,
}

impl Default for Watchdog {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(10 * 60),
            linger: Duration::from_secs(30),
        }
    }
}

/// How a `LocalRunner` behaves; every field has a sensible default.
#[derive(Debug, Clone)]
pub struct RunnerSettings {
    /// The watchdog.
    pub watchdog: Watchdog,
    /// Between SIGTERM and SIGKILL when ending an agent's tree.
    pub stop_grace: Duration,
    /// End the run at the first sign of an authentication failure (default), rather than
    /// letting the agent retry for minutes.
    pub fail_fast_on_auth: bool,
    /// Names of caller variables the agent may also receive (for example
    /// an agent's retry setting); each by exact name, never a prefix or a copy of everything.
    pub extra_env: Vec<String>,
    /// The caller environment the agent's is built from (filtered by name); empty by
    /// default, as runner-core reads no configuration: the facade passes the process's own.
    pub caller_env: Vec<(String, String)>,
    /// A program that supervises one run when given its session id (the `codehands` binary's
    /// hidden `__supervise`): runs are then supervised by a detached process of their own
    /// that outlives this one. `None` (the default): by a task of this runner, and a runner
    /// built later adopts what is left running (`recover`).
    pub supervisor: Option<SupervisorCommand>,
    /// Where a start finds what the person's settings allow a session in its repository
    /// (folders the box reads, tool rules), added to its options' own; `None` (the default):
    /// only the options'.
    pub allowances: Option<runner_contract::AllowancesSource>,
}

/// How to start the supervisor of one run: `program args… <sessionId>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupervisorCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments before the session id.
    pub args: Vec<OsString>,
}

impl Default for RunnerSettings {
    fn default() -> Self {
        Self {
            watchdog: Watchdog::default(),
            stop_grace: Duration::from_secs(3),
            fail_fast_on_auth: true,
            extra_env: Vec::new(),
            caller_env: Vec::new(),
            supervisor: None,
            allowances: None,
        }
    }
}

/// The session records and their run folders (`runs/<id>/`): the home and the session
/// store. Cheap to clone: one store (and its in-process lock) behind every clone.
#[derive(Clone)]
pub(super) struct Records {
    pub(super) home: Home,
    pub(super) store: Arc<SessionStore>,
}

/// The adapters a session works through: version control, the repo's memory, the sandbox
/// `verify` runs tests in and the box agents run in. Cheap to clone.
#[derive(Clone)]
pub(super) struct Adapters {
    pub(super) vcs: Arc<dyn Vcs>,
    pub(super) memory: Arc<dyn MemoryStore>,
    pub(super) sandbox: Option<Arc<dyn Sandbox>>,
    /// The box agents run in (`Isolation::Box`); `None` in a build without one.
    pub(super) confinement: Option<Arc<dyn runner_contract::Confinement>>,
}

/// What a supervisor needs to run one turn to its end: the records, the adapters, the agents
/// and the settings. Cheap to clone: a supervisor task outlives the call that starts it.
#[derive(Clone)]
pub(super) struct Supervision {
    pub(super) records: Records,
    pub(super) adapters: Adapters,
    pub(super) agents: Arc<AgentRegistry>,
    pub(super) settings: Arc<RunnerSettings>,
}

/// What starting a supervisor (or a workflow's driver) needs: what the supervisor gets, and
/// this runner's supervisor tasks, ended when the runner is dropped (their agents go on, for
/// the next runner to adopt). Cheap to clone.
#[derive(Clone)]
pub(super) struct Launcher {
    pub(super) run: Supervision,
    pub(super) tasks: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Launcher {
    /// Keeps `task` among this runner's supervisor tasks (forgetting those that ended).
    pub(super) fn keep(&self, task: tokio::task::AbortHandle) {
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }
}

/// The real runner: agents in private worktrees, records under `$CODEHANDS_HOME`.
///
/// Its parts never take it whole: its methods hand each part the narrow handle it needs
/// (`Records`, `Adapters`, `Supervision`, `Launcher`; a tidy test checks).
pub struct LocalRunner {
    launcher: Launcher,
    /// Whether dropping this runner ends its supervisor tasks: false for the handle a
    /// workflow's driver keeps (`workflow/`), which is not the runner the caller holds.
    owns_tasks: bool,
}

impl LocalRunner {
    /// A runner keeping everything under `home`, with these adapters. Add agents with
    /// [`LocalRunner::with_agent`] and a sandbox with [`LocalRunner::with_sandbox`].
    pub fn new(
        home: Home,
        vcs: Arc<dyn Vcs>,
        memory: Arc<dyn MemoryStore>,
        settings: RunnerSettings,
    ) -> Self {
        let store = Arc::new(SessionStore::in_home(&home));
        Self {
            owns_tasks: true,
            launcher: Launcher {
                run: Supervision {
                    records: Records { home, store },
                    adapters: Adapters {
                        vcs,
                        memory,
                        sandbox: None,
                        confinement: None,
                    },
                    agents: Arc::new(AgentRegistry::new()),
                    settings: Arc::new(settings),
                },
                tasks: Arc::default(),
            },
        }
    }

    /// The runner a workflow's driver keeps: the same parts, and dropping it ends no
    /// supervisor task (the caller's runner owns them).
    pub(super) fn driver(launcher: &Launcher) -> Self {
        Self {
            launcher: launcher.clone(),
            owns_tasks: false,
        }
    }

    fn agents_mut(&mut self) -> &mut AgentRegistry {
        Arc::get_mut(&mut self.launcher.run.agents).expect("configure a runner before using it")
    }

    /// Adds an agent the caller brings (replacing one of the same name).
    pub fn with_agent(mut self, agent: Arc<dyn Agent>) -> Self {
        self.agents_mut().replace(agent, AgentOrigin::Registered);
        self
    }

    /// Uses `agents` as this runner's agents (replacing any added before).
    pub fn with_agents(mut self, agents: AgentRegistry) -> Self {
        *self.agents_mut() = agents;
        self
    }

    /// The agents this runner knows.
    pub fn agents(&self) -> &AgentRegistry {
        &self.launcher.run.agents
    }

    /// Adds the sandbox used by `verify`.
    pub fn with_sandbox(mut self, sandbox: Arc<dyn Sandbox>) -> Self {
        self.launcher.run.adapters.sandbox = Some(sandbox);
        self
    }

    /// Adds the box agents run in when a session's isolation is `box`.
    pub fn with_confinement(mut self, confinement: Arc<dyn runner_contract::Confinement>) -> Self {
        self.launcher.run.adapters.confinement = Some(confinement);
        self
    }

    /// Where this runner keeps its files.
    pub fn home(&self) -> &Home {
        &self.launcher.run.records.home
    }

    /// The session records and run folders.
    pub(super) fn records(&self) -> &Records {
        &self.launcher.run.records
    }

    /// The adapters.
    pub(super) fn adapters(&self) -> &Adapters {
        &self.launcher.run.adapters
    }

    /// The settings.
    pub(super) fn settings(&self) -> &RunnerSettings {
        &self.launcher.run.settings
    }

    /// What a supervisor of this runner gets.
    pub(super) fn supervision(&self) -> &Supervision {
        &self.launcher.run
    }

    /// What starts this runner's supervisors.
    pub(super) fn launcher(&self) -> &Launcher {
        &self.launcher
    }
}

impl Drop for LocalRunner {
    /// A runner that goes away takes its supervisor tasks with it, as a process that ends
    /// would; the agents go on, and the next runner adopts them.
    fn drop(&mut self) {
        if !self.owns_tasks {
            return;
        }
        for task in self
            .launcher
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            task.abort();
        }
    }
}
