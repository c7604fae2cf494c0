//! [`BwrapBox`]: the contract's `Confinement` with bubblewrap.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use runner_contract::private::PrivateRoot;
use runner_contract::{ConfineRequest, Confinement, Engine, Error, ErrorKind, Invocation, Result};

use crate::plan::{BoxPlan, Limits};

/// Boxes made with bubblewrap, their outer process and init being `helper`'s `__box` and
/// `__box-init` (the `codehands` binary, or `codehands-box`).
#[derive(Debug, Clone)]
pub struct BwrapBox {
    helper: Option<PathBuf>,
    bwrap: Option<PathBuf>,
    limits: Limits,
}

impl BwrapBox {
    /// Boxes with `bwrap` (found on the caller's PATH by the facade) and `helper`; either
    /// missing makes [`Confinement::available`] say what to install.
    pub fn new(helper: Option<PathBuf>, bwrap: Option<PathBuf>) -> Self {
        Self {
            helper,
            bwrap,
            limits: Limits::default(),
        }
    }

    /// The limits of every box.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits of every box.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The helper program, when there is one.
    pub fn helper(&self) -> Option<&Path> {
        self.helper.as_deref()
    }

    fn parts(&self) -> Result<(&Path, &Path)> {
        let bwrap = self.bwrap.as_deref().ok_or_else(|| {
            unavailable(format!(
                "the agent's box needs bubblewrap (`bwrap`), which is not on PATH: {}, or pass \
                 --isolation none to run the agent unconfined",
                crate::probe::INSTALL_HINT
            ))
        })?;
        let helper = self
            .helper
            .as_deref()
            .filter(|h| h.is_file())
            .ok_or_else(|| {
                unavailable(
                    "the agent's box needs its helper program (the `codehands` binary, or \
                 `codehands-box` for a program that links codehands), which was not found: \
                 put it on PATH, or pass --isolation none"
                        .to_owned(),
                )
            })?;
        Ok((bwrap, helper))
    }
}

/// The cgroup's name: the session's, and its run folder's (two homes may hold sessions of
/// one id: tests do).
fn cgroup_name(session: &str, run_dir: &Path) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    run_dir.hash(&mut hasher);
    format!("{session}-{:08x}", hasher.finish() as u32)
}

/// The plan of the box of `run_dir`, when there is one.
fn plan_in(run_dir: &Path) -> Option<BoxPlan> {
    let bytes = runner_contract::private::read_no_follow(&BoxPlan::file_in(run_dir)).ok()??;
    BoxPlan::from_json(&bytes).ok()
}

fn unavailable(message: String) -> Error {
    Error::new(ErrorKind::Unsupported, message)
}

/// This box is on this machine: a session on another engine is never boxed here instead.
fn local_only(engine: Engine) -> Result<()> {
    if engine == Engine::Local {
        return Ok(());
    }
    Err(unavailable(format!(
        "the local box runs no box on the {} engine: build the runner with a confinement \
         for it (codehands' `remote` feature), or pass --engine local",
        engine.as_str()
    )))
}

impl Confinement for BwrapBox {
    fn available(&self) -> Result<()> {
        let (bwrap, _) = self.parts()?;
        let dir = bwrap.parent().map(|d| d.display().to_string());
        crate::probe::support(dir.as_deref())
            .map(drop)
            .map_err(unavailable)
    }

    fn available_on(&self, engine: Engine) -> Result<()> {
        local_only(engine)?;
        self.available()
    }

    fn wrap(&self, request: &ConfineRequest<'_>) -> Result<Invocation> {
        local_only(request.engine)?;
        let (bwrap, helper) = self.parts()?;
        let session = request.session_id.to_string();
        let mut needs = request.needs.clone();
        needs.read_only.extend(request.files.iter().cloned());
        let plan = crate::planner::plan(&crate::BoxInputs {
            session: &session,
            run_dir: request.run_dir,
            worktree: request.worktree,
            worktree_read_only: request.worktree_read_only,
            helper,
            bwrap,
            program: &request.invocation.program,
            args: &request.invocation.args,
            env: request.env,
            needs: &needs,
            git: request.git.clone(),
            limits: self.limits,
            // No cgroup here: the box runs without limits, and `codehands doctor` says why.
            cgroup: crate::cgroup::find(&cgroup_name(&session, request.run_dir)).ok(),
        })?;
        let file = BoxPlan::file_in(request.run_dir);
        let root = PrivateRoot::new(request.run_dir);
        root.ensure_dir(request.run_dir)?;
        root.replace_file(&file, &plan.to_json())?;
        Ok(Invocation {
            program: helper.to_owned(),
            // The runner's supervisor cleans up at the turn's end ([`Confinement::cleanup`]).
            args: vec![
                OsString::from(crate::OUTER_COMMAND),
                OsString::from(crate::outer::RUNNER_CLEANS),
                file.into_os_string(),
            ],
            env: request.invocation.env.clone(),
            stdin: request.invocation.stdin.clone(),
            close_stdin: request.invocation.close_stdin,
        })
    }

    fn cleanup(&self, run_dir: &Path) {
        let Some(plan) = plan_in(run_dir) else {
            return;
        };
        let _ = crate::outer::remove_sockets(&plan);
        if let Some(cgroup) = &plan.cgroup {
            crate::cgroup::remove(cgroup);
        }
    }

    fn discard(&self, run_dir: &Path) {
        self.cleanup(run_dir);
        let Some(plan) = plan_in(run_dir) else {
            return;
        };
        // Only folders of the run's own (the plan is read strictly, but it is a file on
        // disk): never anything outside `run_dir`.
        for dir in [&plan.home, &plan.tmp, &plan.state] {
            if dir.parent() == Some(run_dir) {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        let _ = std::fs::remove_file(BoxPlan::file_in(run_dir));
    }
}
