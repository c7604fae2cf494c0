//! `codehands __remote PLAN`: the local process that stands for the agent while its box runs
//! elsewhere (see the crate's doc). Its stdout and stderr are the run's transcript files.

mod agreed;
mod docker;
mod output;
mod pool;
mod swarm;
mod swarm_spec;

/// Removes what the engine's boxes share, and its warm boxes (for a bench or test done with
/// the engine).
pub async fn remove_shared(docker: &Docker) {
    pool::remove_all(docker).await;
    swarm_spec::remove_shared(docker).await;
}

use std::ffi::OsString;
use std::io::Read;

use bollard::Docker;
use runner_contract::Engine;

use crate::plan::RemotePlan;
use output::Output;

/// The most a result may weigh, in bytes, as it crosses the wire.
pub(crate) const RESULT_CAP: u64 = 1 << 30;

pub(crate) fn main(args: &[OsString]) -> i32 {
    let [plan_file] = args else {
        eprintln!("usage: codehands __remote PLAN");
        return 2;
    };
    let run_dir = std::path::Path::new(plan_file)
        .parent()
        .map(|d| d.to_owned());
    let plan = match runner_contract::private::read_no_follow(std::path::Path::new(plan_file)) {
        Ok(Some(bytes)) => match RemotePlan::from_json(&bytes) {
            Ok(plan) => plan,
            Err(e) => return fail(&e),
        },
        _ => {
            return fail(&format!(
                "the remote box's plan {plan_file:?} cannot be read"
            ));
        }
    };
    // Our env is the agent's, as the runner built it: it goes into the box as a file.
    let mut env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    // A base URL that names an address reaches its provider through the box's listener.
    for (name, value) in &plan.egress.env {
        env.retain(|(k, _)| k != name);
        env.push((name.clone(), value.clone()));
    }
    env.push((crate::frame::NONCE_VAR.to_owned(), plan.nonce.clone()));
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return fail(&format!("cannot start: {e}")),
    };
    runtime.block_on(async move {
        let mut clock = crate::phases::Clock::start(plan.engine.as_str(), &plan.box_id);
        let mut stops = Stops::new();
        let stdin = read_input(plan.stdin_lines);
        // The version the engine agreed to a moment ago, when noted: no question first.
        let agreed = run_dir
            .as_deref()
            .and_then(|dir| agreed::connect(&plan, dir));
        let (docker, _dial) = match agreed {
            Some(docker) => (docker, crate::connect::Dial::default()),
            None => match connect(&plan).await {
                Ok(connected) => {
                    if let Some(dir) = run_dir.as_deref() {
                        agreed::note(&plan, dir, &connected.0);
                    }
                    connected
                }
                Err(e) => return fail(&e),
            },
        };
        // The person's image with codehands added, made on the engine (once per image).
        let mut plan = plan;
        if let Err(e) = crate::derive::prepare(&docker, &mut plan).await {
            return fail(&e);
        }
        let mut output = Output::resumed(match plan.engine {
            Engine::Swarm => swarm::collectors(&plan),
            _ => Vec::new(),
        })
        .with_stdout_end(&crate::frame::stdout_end_line(&plan.nonce));
        let ran = match plan.engine {
            Engine::Swarm => {
                let mut turn = swarm::Turn {
                    output: &mut output,
                    stops: &mut stops,
                    clock: &mut clock,
                    run_dir: run_dir.as_deref(),
                };
                swarm::run(&docker, &mut plan, &env, &stdin, &mut turn).await
            }
            _ => {
                docker::run(
                    &docker,
                    &plan,
                    &env,
                    &stdin,
                    &mut output,
                    &mut stops,
                    &mut clock,
                )
                .await
            }
        };
        clock.save(run_dir.as_deref());
        if let Some(dir) = run_dir.as_deref() {
            pool::ended(dir, &plan.box_id);
        }
        // The box is taken apart by a process of its own: the turn ends now.
        if ran.is_ok() {
            let detached = std::env::current_exe()
                .is_ok_and(|exe| remove_detached(&exe, &plan, run_dir.as_deref()));
            if !detached {
                match plan.engine {
                    Engine::Swarm => swarm::remove(&docker, &plan).await,
                    _ => docker::remove(&docker, &plan).await,
                }
            }
        }
        match ran {
            Ok(code) => code,
            Err(e) => {
                // Whatever failed, the next turn asks the engine its version again.
                if let Some(dir) = run_dir.as_deref() {
                    agreed::forget(dir);
                }
                fail(&e)
            }
        }
    })
}

/// The turn's input from our stdin: all of it, or for a conversing agent its first `lines`
/// (the runner keeps stdin open after them; what comes later is read and dropped, so the
/// runner's writes never block).
fn read_input(lines: Option<usize>) -> Vec<u8> {
    use std::io::BufRead;
    let Some(lines) = lines else {
        let mut stdin = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut stdin);
        return stdin;
    };
    let mut input = Vec::new();
    let mut reader = std::io::stdin().lock();
    for _ in 0..lines {
        match reader.read_until(b'\n', &mut input) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    drop(reader);
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    });
    input
}

fn fail(message: &str) -> i32 {
    eprintln!("codehands: the remote box: {message}");
    runner_contract::REMOTE_BOX_FAILED_EXIT
}

/// The engine of `plan`, its API version agreed (keep the dial while it is used).
pub(crate) async fn connect(plan: &RemotePlan) -> Result<(Docker, crate::connect::Dial), String> {
    crate::connect::connect_to(plan.docker_host.as_deref(), &plan.ssh_env).await
}

/// Makes the network `request` describes; one of that name is ours already (made for this box
/// by a driver before, or by a job the swarm turned down) and is fine.
pub(crate) async fn create_network(
    docker: &Docker,
    request: bollard::models::NetworkCreateRequest,
) -> Result<(), bollard::errors::Error> {
    match docker.create_network(request).await {
        Ok(_)
        | Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 409, ..
        }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// `codehands __remote-cleanup [RUN_DIR]`, the plan on stdin: removes what the box left on
/// the engine, and adds how long that took to the phases in `RUN_DIR`. A turn's shim starts it
/// and exits (and the runner's cleanup, for a shim that could not), so no run waits for the
/// engine to take its box apart.
pub(crate) fn cleanup_main(args: &[OsString]) -> i32 {
    let mut bytes = Vec::new();
    let plan = std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())
        .and_then(|_| RemotePlan::from_json(&bytes));
    let plan = match plan {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("codehands __remote-cleanup: {e}");
            return 2;
        }
    };
    // A warm box's removal and refill wait for this machine's runs started with it to end.
    if let [run_dir] = args
        && plan.box_id.starts_with(pool::WARM_PREFIX)
    {
        pool::wait_for_quiet(std::path::Path::new(run_dir));
    }
    let started = std::time::Instant::now();
    remove_leftovers(&plan);
    let removed = started.elapsed();
    if plan.pool > 0 {
        refill(&plan);
    }
    if let [run_dir] = args {
        let run_dir = std::path::Path::new(run_dir);
        pool::unclaim(run_dir, &plan.box_id);
        if let Some(mut phases) =
            crate::phases::Phases::read(run_dir).filter(|p| p.box_id == plan.box_id)
        {
            phases.cleanup_ms = Some(removed.as_millis() as u64);
            phases.write(run_dir);
        }
    }
    0
}

/// Makes the warm box that replaces the one `plan`'s turn took (or one more while the pool
/// is short), after the turn: no run waits for it.
fn refill(plan: &RemotePlan) {
    with_engine(plan, async |docker| pool::refill(docker, plan).await);
}

/// Makes up to `size` warm boxes of `plan`'s kind, less those the swarm holds already: for a
/// caller that starts many runs at once and keeps them warm ahead (`cargo xtask bench scale`).
pub fn fill_pool(plan: &RemotePlan, size: u32) -> Result<u32, String> {
    let mut made = Ok(0);
    with_engine(plan, async |docker| {
        let have = pool::count(docker, plan).await as u32;
        made = pool::make(docker, plan, size.saturating_sub(have)).await;
    });
    made
}

/// Runs `work` with the engine of `plan`, on a runtime of its own; nothing when the engine
/// cannot be reached.
fn with_engine(plan: &RemotePlan, work: impl AsyncFnOnce(&Docker)) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    runtime.block_on(async {
        if let Ok((docker, _dial)) = connect(plan).await {
            work(&docker).await;
        }
    });
}

/// Starts `helper __remote-cleanup` for the box of `plan`, in a process group of its own and
/// not waited for; false when it could not start.
pub(crate) fn remove_detached(
    helper: &std::path::Path,
    plan: &RemotePlan,
    run_dir: Option<&std::path::Path>,
) -> bool {
    use std::io::Write;
    let mut command = runner_process::foreground::Foreground::new(helper);
    command
        .arg(crate::CLEANUP_COMMAND)
        .args(run_dir)
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .own_group();
    let Ok(mut child) = command.spawn() else {
        return false;
    };
    let written = child
        .stdin
        .take()
        .is_some_and(|mut stdin| stdin.write_all(&plan.to_json()).is_ok());
    // Reaped by whoever adopts it once we exit; a runner that lives on reaps it in a thread.
    std::thread::spawn(move || child.wait());
    written
}

/// Removes what the box of `plan` left on the engine (its container, or its service and
/// secrets); nothing when there is nothing.
pub(crate) fn remove_leftovers(plan: &RemotePlan) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    runtime.block_on(async {
        if let Ok((docker, _dial)) = connect(plan).await {
            match plan.engine {
                Engine::Swarm => swarm::remove(&docker, plan).await,
                _ => docker::remove(&docker, plan).await,
            }
        }
    });
}

/// The signals that mean the runner stops the run, taken from the shim's first moment (a
/// signal that came while the box was being made is seen once it runs, and the box removed).
pub(crate) struct Stops {
    signals: Vec<tokio::signal::unix::Signal>,
}

impl Stops {
    /// SIGTERM, SIGINT and SIGHUP, handled from now on.
    pub(crate) fn new() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        let kinds = [
            SignalKind::terminate(),
            SignalKind::interrupt(),
            SignalKind::hangup(),
        ];
        Self {
            signals: kinds
                .into_iter()
                .filter_map(|kind| signal(kind).ok())
                .collect(),
        }
    }

    /// Returns once one of them has come.
    pub(crate) async fn recv(&mut self) {
        if self.signals.is_empty() {
            return std::future::pending().await;
        }
        let waits = self.signals.iter_mut().map(|s| Box::pin(s.recv()));
        futures::future::select_all(waits).await;
    }
}

/// Checks `tar` (a result, with `strip` in front of its paths when the engine's archive API
/// put it there) and applies it to the worktree; nothing is applied when a check fails.
pub(crate) fn apply_result(
    plan: &RemotePlan,
    tar: &[u8],
    strip: Option<&str>,
) -> Result<(), String> {
    let limits = remote_transfer::Limits::default();
    let tree = remote_transfer::read_result(tar, strip, &limits).map_err(|e| e.to_string())?;
    remote_transfer::apply(&tree, &plan.worktree)
        .map_err(|e| format!("applying the box's result: {e}"))
}

/// The base tree of the worktree with the prompt and env, as one tar.
pub(crate) fn inputs(
    plan: &RemotePlan,
    env: &[(String, String)],
    stdin: &[u8],
) -> Result<Vec<u8>, String> {
    let base = remote_transfer::pack_tree(&plan.worktree, &remote_transfer::Limits::default())
        .map_err(|e| format!("packing the worktree for the box: {e}"))?;
    let files = plan
        .files
        .iter()
        .map(|(path, name)| {
            runner_contract::private::read_no_follow(path)
                .ok()
                .flatten()
                .map(|bytes| (name.clone(), bytes))
                .ok_or_else(|| format!("cannot read the run's file {}", path.display()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let home = plan
        .home_file
        .as_deref()
        .and_then(|file| {
            runner_contract::private::read_no_follow(file)
                .ok()
                .flatten()
        })
        .unwrap_or_default();
    // A login file that is not there is left out: the agent may log in by its env.
    let login: Vec<crate::frame::LoginInput> = plan
        .login
        .iter()
        .filter_map(|(path, rel, read_only)| {
            let bytes = runner_contract::private::read_no_follow(path).ok()??;
            Some(crate::frame::LoginInput {
                path: rel.clone(),
                bytes,
                read_only: *read_only,
            })
        })
        .collect();
    Ok(crate::frame::inputs_tar(
        env, stdin, &base, &files, &home, &login,
    ))
}
