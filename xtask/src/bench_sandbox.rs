//! `cargo xtask bench sandbox`: box start to exit for `true`, through
//! `DockerSandbox`, against `docker run` with the same flags and image.
//! Prints the ratio and writes `target/bench/sandbox.json`.

use std::process::Command;
use std::time::{Duration, Instant};

use runner_contract::{BoxLimits, Language, RepoProfile, Sandbox, SandboxRequest, SessionId};
use sandbox_docker::flags::{BoxSpec, docker_run_args, test_box};
use sandbox_docker::{DockerSandbox, LOCAL_BUSYBOX_IMAGE, host_timezone};

const ROUNDS: usize = 10;

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(arg) = args.first() {
        return Err(format!("bench sandbox takes no arguments, got {arg:?}"));
    }
    let image = LOCAL_BUSYBOX_IMAGE;
    let ok = Command::new("docker")
        .args(["image", "inspect", image])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        return Err(format!(
            "the image {image} is missing: run `cargo xtask images` first"
        ));
    }
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let worktree = tempfile::tempdir().map_err(|e| e.to_string())?;
    // The box runs as nobody when root owns the worktree: let it in.
    let open = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(worktree.path(), open).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let sandbox = DockerSandbox::new(home.path()).with_tz_variable(std::env::var("TZ").ok());
    let sandbox = match std::env::var("DOCKER_HOST").ok().filter(|h| !h.is_empty()) {
        Some(host) => sandbox.with_docker_host(host),
        None => sandbox,
    };
    let session_id = SessionId::new_random();
    let request = SandboxRequest {
        session_id,
        worktree: worktree.path().to_path_buf(),
        profile: RepoProfile {
            language: Language::Unknown,
            ..Default::default()
        },
        test_command: Some("true".into()),
        image: Some(image.into()),
        timezone: None,
        limits: BoxLimits::default(),
    };
    // The baseline: the identical container through the docker CLI.
    let spec = BoxSpec {
        session_id: SessionId::new_random(),
        n: 1,
        image: image.into(),
        command: "true".into(),
        worktree: worktree.path().to_path_buf(),
        owner: (0, 0),
        timezone: host_timezone(std::env::var("TZ").ok().as_deref()),
        limits: BoxLimits::default(),
        extra_env: Vec::new(),
    };
    let cli_args = docker_run_args(&spec.test_name(), &test_box(&spec));

    // One warm-up of each, so neither pays for a cold engine cache.
    let warm = runtime.block_on(sandbox.run_tests(&request));
    if !warm.passed {
        return Err(format!("the sandbox did not pass `true`: {:?}", warm.error));
    }
    docker_run(&cli_args)?;

    let mut ours = Vec::with_capacity(ROUNDS);
    let mut theirs = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let result = runtime.block_on(sandbox.run_tests(&request));
        ours.push(started.elapsed());
        if !result.passed {
            return Err(format!(
                "the sandbox did not pass `true`: {:?}",
                result.error
            ));
        }
        let started = Instant::now();
        docker_run(&cli_args)?;
        theirs.push(started.elapsed());
    }
    let (ours, theirs) = (median(&mut ours), median(&mut theirs));
    let ratio = ours.as_secs_f64() / theirs.as_secs_f64();
    println!(
        "bench sandbox: `true` in the box, median of {ROUNDS}: DockerSandbox {:.0} ms, docker run {:.0} ms, ratio {ratio:.2}x (target at most 1.0x)",
        ours.as_secs_f64() * 1e3,
        theirs.as_secs_f64() * 1e3
    );
    let report = serde_json::json!({
        "bench": "sandbox",
        "what": "box start to exit for `true` (busybox image), DockerSandbox::run_tests against `docker run` with the same flags",
        "rounds": ROUNDS,
        "oursMedianMs": ours.as_secs_f64() * 1e3,
        "baselineMedianMs": theirs.as_secs_f64() * 1e3,
        "ratio": ratio,
        "target": 1.0,
    });
    let dir = crate::workspace_root().join("target/bench");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join("sandbox.json");
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&report).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("bench sandbox: wrote {}", path.display());
    Ok(())
}

fn docker_run(args: &[String]) -> Result<(), String> {
    let out = Command::new("docker")
        .arg("run")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run docker: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "docker run failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}
