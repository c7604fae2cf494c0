//! `codehands remote manifest ID`: a session's remote box as Kubernetes objects, rendered from
//! the plan its last remote turn ran (`runs/<id>/remote.json`), the one the Docker and Swarm
//! engines run (docs/kubernetes.md).

use std::process::ExitCode;

use clap::{Args, Subcommand};
use runner_contract::{Error, ErrorKind, Result};

use super::output;

/// Arguments of `codehands remote`.
#[derive(Debug, Args)]
pub struct RemoteArgs {
    #[command(subcommand)]
    command: RemoteCommand,
}

#[derive(Debug, Subcommand)]
enum RemoteCommand {
    /// Print a session's remote box as Kubernetes objects (the inputs' Secret, empty; the
    /// egress proxy; the NetworkPolicies; the Job), one `v1` List as JSON, which is YAML and
    /// which `kubectl apply -f -` takes. See docs/kubernetes.md.
    Manifest(ManifestArgs),
}

/// Arguments of `codehands remote manifest`.
#[derive(Debug, Args)]
pub struct ManifestArgs {
    /// The session (run once with `--engine docker` or `--engine swarm`): its id, or the
    /// first 8 or more characters of it.
    #[arg(value_parser = super::session_ref)]
    id: String,
    /// The engine to render for: `k8s` (Kubernetes).
    #[arg(long, value_name = "k8s", value_parser = ["k8s"], default_value = "k8s")]
    engine: String,
    /// The box's image as the cluster pulls it: by default the plan's (codehands/remote:1, or
    /// `CODEHANDS_REMOTE_IMAGE`); needed when the box ran your image, which the engine made
    /// into `codehands/box:…` (push that one and name it here).
    #[arg(long, value_name = "IMAGE", value_parser = super::image)]
    image: Option<String>,
}

/// Runs `codehands remote …`.
pub async fn run(args: RemoteArgs) -> Result<ExitCode> {
    match args.command {
        RemoteCommand::Manifest(args) => manifest(args).await,
    }
}

#[cfg(feature = "remote")]
async fn manifest(args: ManifestArgs) -> Result<ExitCode> {
    let runner = super::runner()?;
    let id = runner_contract::Runner::resolve_session(&runner, &args.id).await?;
    let file = engine_docker::RemotePlan::file_in(&runner.home().run_dir(&id));
    let bytes = runner_contract::private::read_no_follow(&file)?.ok_or_else(|| {
        Error::new(
            ErrorKind::NotFound,
            format!(
                "session {} has no remote plan: it ran on the local box. Run it with --engine \
                 docker or --engine swarm first (README.md, \"Where runs run\")",
                id.short()
            ),
        )
    })?;
    let mut plan = engine_docker::RemotePlan::from_json(&bytes)
        .map_err(|e| Error::new(ErrorKind::CorruptRecord, e))?;
    match (args.image, &plan.user_image) {
        (Some(image), _) => plan.derived = Some((image, String::new())),
        (None, Some(_)) => {
            return Err(Error::invalid_input(
                "this session's box ran your image, which its engine made into codehands/box:… \
                 (`docker image ls codehands/box`): push that image where the cluster pulls \
                 from and name it with --image",
            ));
        }
        (None, None) => {}
    }
    let objects = engine_docker::k8s::manifest(&plan, None);
    let text = serde_json::to_string_pretty(&engine_docker::k8s::list(objects))
        .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
    output::line(&text)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "remote"))]
async fn manifest(_args: ManifestArgs) -> Result<ExitCode> {
    Err(Error::new(
        ErrorKind::NotInBuild,
        "this build has no remote engines (the `remote` feature)",
    ))
}
