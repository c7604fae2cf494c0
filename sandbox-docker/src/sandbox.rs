//! `DockerSandbox`: the `Sandbox` trait over the Docker engine.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bollard::Docker;
use bollard::errors::Error as DockerError;
use bollard::query_parameters::CreateImageOptionsBuilder;
use futures::StreamExt;
use runner_contract::{
    Sandbox, SandboxError, SandboxErrorKind, SandboxRequest, SandboxResult, SessionId,
};
use tokio::sync::OnceCell;

use crate::flags::{BoxSpec, install_box, test_box};
use crate::images::ImageMap;
use crate::install::{ignored, install_plan, not_ignored_message};
use crate::run::{BoxOutcome, engine_message, run_box};
use crate::timezone::{host_timezone, is_iana_name};
use crate::{leftovers, results};

/// How long the engine may take to answer before it counts as unavailable.
const ENGINE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long pulling a missing image may take.
const PULL_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs a repo's tests in a locked Docker box; results go to
/// `<home>/runs/<sessionId>/test-<n>.json`.
///
/// Connects lazily, on first use, to the engine [`DockerSandbox::with_docker_host`] names, else
/// to the local socket ([`LOCAL_ENGINE`]); the API version is negotiated so older engines
/// work. It reads no environment variable: the facade passes `DOCKER_HOST` and `TZ`
/// (ARCHITECTURE.md, "codehands").
pub struct DockerSandbox {
    home: PathBuf,
    images: ImageMap,
    host: Option<String>,
    tz_variable: Option<String>,
    docker: OnceCell<Docker>,
}

/// The engine a sandbox talks to when no host is given: the local socket.
pub const LOCAL_ENGINE: &str = "unix:///var/run/docker.sock";

impl DockerSandbox {
    /// A sandbox writing its results under the codehands home, with the
    /// official images of [`ImageMap::default`].
    pub fn new(home: impl Into<PathBuf>) -> Self {
        Self {
            home: home.into(),
            images: ImageMap::default(),
            host: None,
            tz_variable: None,
            docker: OnceCell::new(),
        }
    }

    /// Uses another image map (for example [`ImageMap::local`]).
    pub fn with_images(mut self, images: ImageMap) -> Self {
        self.images = images;
        self
    }

    /// Talks to the engine at `host` (`unix:///path` or `tcp://host:port`, as `DOCKER_HOST`
    /// spells it) instead of the local socket.
    pub fn with_docker_host(mut self, host: impl Into<String>) -> Self {
        self.host = Some(host.into());
        self
    }

    /// The caller's `TZ`: a box whose request names no timezone gets the host's, and `TZ`
    /// names it before `/etc/timezone` does ([`crate::host_timezone`]).
    pub fn with_tz_variable(mut self, tz: Option<String>) -> Self {
        self.tz_variable = tz;
        self
    }

    /// Removes the boxes a crashed run left behind: those of `session`, or of
    /// every session when `None`. Returns the names removed. The runner's
    /// `recover()` calls this.
    pub async fn remove_leftovers(
        &self,
        session: Option<&SessionId>,
    ) -> Result<Vec<String>, SandboxError> {
        let docker = self
            .docker()
            .await
            .map_err(|m| error(SandboxErrorKind::Unavailable, m))?;
        leftovers::remove_leftovers(docker, session)
            .await
            .map_err(|m| error(SandboxErrorKind::Failed, m))
    }

    async fn docker(&self) -> Result<&Docker, String> {
        let host = self.host.as_deref().unwrap_or(LOCAL_ENGINE);
        self.docker
            .get_or_try_init(|| async {
                let docker = Docker::connect_with_host(host).map_err(|e| {
                    format!("cannot reach the Docker engine at {host}: {e}. Start Docker (or set DOCKER_HOST) and try again")
                })?;
                match tokio::time::timeout(ENGINE_TIMEOUT, docker.negotiate_version()).await {
                    Ok(Ok(docker)) => Ok(docker),
                    Ok(Err(e)) => Err(format!(
                        "the Docker engine at {host} does not answer: {}. Start Docker (or set DOCKER_HOST) and try again",
                        engine_message(&e)
                    )),
                    Err(_) => Err(format!(
                        "the Docker engine at {host} did not answer within 5 s. Start Docker (or set DOCKER_HOST) and try again"
                    )),
                }
            })
            .await
    }

    async fn run(
        &self,
        request: &SandboxRequest,
        result: &mut SandboxResult,
    ) -> Result<(), SandboxError> {
        use SandboxErrorKind::{Failed, InstallFailed, Unavailable, Unsupported};
        let profile = &request.profile;
        result.command = request
            .test_command
            .clone()
            .or_else(|| profile.test_command.clone())
            .ok_or_else(|| error(Unsupported, format!(
                "no test command for this {:?} repo: add one (for npm, a \"test\" script in package.json) or pass a test command",
                profile.language
            )))?;
        result.image = request.image.clone().or_else(|| self.images.pick(profile)).ok_or_else(|| {
            error(Unsupported, "the sandbox does not know which image tests a repo of unknown language: pass an image".to_owned())
        })?;
        let timezone = request
            .timezone
            .clone()
            .unwrap_or_else(|| host_timezone(self.tz_variable.as_deref()));
        if !is_iana_name(&timezone) {
            return Err(error(
                Failed,
                format!(
                    "the timezone {timezone:?} is not an IANA name: pass one like Asia/Karachi or UTC"
                ),
            ));
        }
        let worktree = std::fs::canonicalize(&request.worktree)
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| {
                error(
                    Failed,
                    format!(
                        "the worktree {} is not a folder: pass the repo's folder",
                        request.worktree.display()
                    ),
                )
            })?;
        let docker = self.docker().await.map_err(|m| error(Unavailable, m))?;
        ensure_image(docker, &result.image)
            .await
            .map_err(|m| error(Failed, m))?;
        let mut spec = BoxSpec {
            session_id: request.session_id,
            n: result.n,
            image: result.image.clone(),
            command: result.command.clone(),
            owner: owner(&worktree),
            worktree,
            timezone,
            limits: request.limits.clone(),
            extra_env: Vec::new(),
        };
        let cap = request.limits.output_bytes;
        if profile.needs_install {
            let plan = install_plan(profile, &spec.worktree).map_err(|m| error(Unsupported, m))?;
            match ignored(&spec.worktree, plan.folder) {
                Ok(true) => {}
                Ok(false) => return Err(error(Unsupported, not_ignored_message(plan.folder))),
                Err(m) => return Err(error(Failed, m)),
            }
            let install = BoxSpec {
                command: plan.command.clone(),
                ..spec.clone()
            };
            let limit = Duration::from_secs(request.limits.install_timeout_secs);
            let outcome = run_box(
                docker,
                &install.install_name(),
                install_box(&install),
                limit,
                cap,
            )
            .await
            .map_err(|m| error(InstallFailed, format!("the install box could not run: {m}")))?;
            if let Some(e) = could_not_start(&install.command, &result.image, outcome.exit_code) {
                result.output = outcome.output;
                return Err(e);
            }
            if let Some(why) = failure(&outcome, limit) {
                result.output = outcome.output;
                return Err(error(
                    InstallFailed,
                    format!(
                        "installing the dependencies with `{}` failed ({why}): the output says why; fix the dependencies, then try again",
                        install.command
                    ),
                ));
            }
            spec.extra_env = plan.test_env;
        }
        let limit = Duration::from_secs(request.limits.timeout_secs);
        let outcome = run_box(docker, &spec.test_name(), test_box(&spec), limit, cap)
            .await
            .map_err(|m| error(Failed, m))?;
        result.passed = failure(&outcome, limit).is_none();
        result.exit_code = outcome.exit_code;
        if let Some(e) = could_not_start(&spec.command, &result.image, outcome.exit_code) {
            result.passed = false;
            result.output = outcome.output;
            return Err(e);
        }
        result.timed_out = outcome.timed_out;
        result.out_of_memory = outcome.out_of_memory;
        result.output = outcome.output;
        Ok(())
    }
}

#[async_trait]
impl Sandbox for DockerSandbox {
    async fn available(&self) -> bool {
        match self.docker().await {
            Ok(docker) => tokio::time::timeout(ENGINE_TIMEOUT, docker.ping())
                .await
                .is_ok_and(|r| r.is_ok()),
            Err(_) => false,
        }
    }

    async fn run_tests(&self, request: &SandboxRequest) -> SandboxResult {
        let started = Instant::now();
        let mut result = SandboxResult {
            n: 0,
            command: String::new(),
            image: String::new(),
            passed: false,
            exit_code: None,
            timed_out: false,
            out_of_memory: false,
            output: String::new(),
            duration_ms: 0,
            error: None,
        };
        match results::reserve(&self.home, &request.session_id) {
            Ok(n) => result.n = n,
            Err(m) => {
                result.error = Some(error(SandboxErrorKind::Failed, m));
                return result;
            }
        }
        if let Err(e) = self.run(request, &mut result).await {
            result.passed = false;
            result.error = Some(e);
        }
        result.duration_ms = started.elapsed().as_millis() as u64;
        if let Err(m) = results::write(&self.home, &request.session_id, &result) {
            result.passed = false;
            result.error.get_or_insert(error(
                SandboxErrorKind::Failed,
                format!("the result could not be saved: {m}"),
            ));
        }
        result
    }
}

/// Why a finished box counts as failed, or `None` when it passed.
fn failure(outcome: &BoxOutcome, limit: Duration) -> Option<String> {
    if outcome.timed_out {
        Some(format!("killed after {} s", limit.as_secs()))
    } else if outcome.out_of_memory {
        Some("out of memory".into())
    } else {
        match outcome.exit_code {
            Some(0) => None,
            Some(code) => Some(format!("exit code {code}")),
            None => Some("no exit code".into()),
        }
    }
}

/// A box whose command could not start (the shell's 127, "not found", or 126, "not
/// executable") did not run the tests at all: that is the box's failing, never the code's.
/// pnpm and yarn are the usual cause: codehands' local images carry npm only.
fn could_not_start(command: &str, image: &str, exit_code: Option<i64>) -> Option<SandboxError> {
    let why = match exit_code {
        Some(127) => "is not in the image",
        Some(126) => "cannot be executed in the image",
        _ => return None,
    };
    let program = command.split_whitespace().next().unwrap_or(command);
    let hint = if matches!(program, "pnpm" | "yarn") {
        format!(
            "; pnpm and yarn are not in codehands' local images (npm is): use npm for the tests, \
             or an image that has {program} (CODEHANDS_SANDBOX_IMAGES=hub, or an image map of your own)"
        )
    } else {
        String::new()
    };
    Some(error(
        SandboxErrorKind::Unsupported,
        format!(
            "the box could not run `{command}`: `{program}` {why} {image} (exit code {}){hint}",
            exit_code.unwrap_or_default()
        ),
    ))
}

/// Makes sure the engine has `image`, pulling it when it can.
async fn ensure_image(docker: &Docker, image: &str) -> Result<(), String> {
    match docker.inspect_image(image).await {
        Ok(_) => return Ok(()),
        Err(DockerError::DockerResponseServerError {
            status_code: 404, ..
        }) => {}
        Err(e) => {
            return Err(format!(
                "the engine could not look up the image {image}: {}",
                engine_message(&e)
            ));
        }
    }
    let options = CreateImageOptionsBuilder::default()
        .from_image(image)
        .build();
    let pull = async {
        let mut stream = docker.create_image(Some(options), None, None);
        while let Some(step) = stream.next().await {
            step.map_err(|e| engine_message(&e))?;
        }
        Ok::<(), String>(())
    };
    let why = match tokio::time::timeout(PULL_TIMEOUT, pull).await {
        Ok(Ok(())) => return Ok(()),
        Ok(Err(m)) => m,
        Err(_) => format!("no answer within {} s", PULL_TIMEOUT.as_secs()),
    };
    Err(format!(
        "the image {image} is not on the engine and could not be pulled ({why}). Provide it: \
         `cargo xtask images` builds codehands' local images, `docker load -i FILE` loads a saved one, \
         or choose an image the engine has in the image map"
    ))
}

#[cfg(unix)]
fn owner(path: &Path) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .map(|m| (m.uid(), m.gid()))
        .unwrap_or((65534, 65534))
}

#[cfg(not(unix))]
fn owner(_path: &Path) -> (u32, u32) {
    (65534, 65534)
}

fn error(kind: SandboxErrorKind, message: String) -> SandboxError {
    SandboxError { kind, message }
}

#[cfg(test)]
mod could_not_start_tests {
    use super::*;

    #[test]
    fn a_missing_program_is_a_box_that_could_not_run_not_failing_tests() {
        let e = could_not_start("pnpm test", "codehands/sandbox-node:22", Some(127)).unwrap();
        assert_eq!(e.kind, SandboxErrorKind::Unsupported);
        assert!(
            e.message.contains("`pnpm` is not in the image"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("pnpm and yarn are not in"),
            "{}",
            e.message
        );
        assert!(could_not_start("npm test", "img", Some(1)).is_none());
        assert!(could_not_start("npm test", "img", Some(0)).is_none());
    }
}
