//! The repo's own image on a remote engine (docs/remote-box.md, "The repo's own image"): a repo
//! whose `.devcontainer/devcontainer.json` (JSON with comments) builds a Dockerfile that adds a
//! toolchain its base image lacks. A scripted agent (a profile whose program is the image's
//! shell) runs the repo's tests in the box on an engine reached over TCP, and they pass with
//! the toolchain's words; the base image alone (`--image`) has no toolchain, and codehands'
//! own image no shell, so the same run cannot test there. A devcontainer that names a path
//! outside the repo is refused before any box.

use std::collections::BTreeSet;

use crate::support;
use crate::support::remote;

use remote::{TestImage, codehands, docker, docker_ready, tcp_relay};
use support::{World, json_lines, run, text};

/// `FROM scratch` with a static busybox (`cargo xtask images`): a shell, no toolchain.
const BASE: &str = "codehands/sandbox-busybox:1";

/// The toolchain the devcontainer adds: checks each `a+b=c` line of the files given.
const SUMCHECK: &str = r#"#!/bin/sh
echo "sumcheck $SUMCHECK_VERSION"
fail=0
for f in "$@"; do
  while IFS='=' read -r sum want; do
    got=$(($sum))
    if [ "$got" = "$want" ]; then echo "ok $sum=$want"; else echo "FAIL $sum=$want"; fail=1; fi
  done < "$f"
done
exit $fail
"#;

/// The images the engine holds that codehands made (`engine_docker::derive`), by tag.
fn derived_images() -> BTreeSet<String> {
    docker(&[
        "image",
        "ls",
        "--format",
        "{{.Repository}}:{{.Tag}}",
        "--filter",
        "label=codehands.derived",
    ])
    .unwrap_or_default()
    .split_whitespace()
    .map(str::to_owned)
    .collect()
}

/// Removes the images tagged while it lived (an image another tag still names stays).
struct MadeImages(BTreeSet<String>);

impl Drop for MadeImages {
    fn drop(&mut self) {
        for tag in derived_images().difference(&self.0) {
            let _ = docker(&["image", "rm", tag]);
        }
    }
}

/// A profile whose agent is the box image's shell running `script`.
fn shell_profile(world: &World, script: &str) -> std::path::PathBuf {
    let profile = world.dir.path().join("tester.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"tester\"\ndescription = \"runs the repo's tests\"\nprogram = \"sh\"\n\
             args = [\"-c\", {script:?}]\nparser = \"text\"\n"
        ),
    )
    .unwrap();
    profile
}

/// `codehands run` of the tester on the docker engine at `host`, kept: the session, its
/// events' text and the command's output.
fn run_tests(
    world: &World,
    image: &TestImage,
    host: &str,
    extra: &[&str],
) -> (String, String, std::process::Output) {
    let script = "sumcheck cases.txt > test-report.txt 2>&1; echo \"tests exit $?\" >> test-report.txt; cat test-report.txt";
    let profile = shell_profile(world, script);
    let id = runner_contract::SessionId::new_random().to_string();
    let out = run(codehands(world, "replay", 0, Some(host), &image.tag)
        .args(["run", ".", "Run the tests.", "--json", "--engine", "docker"])
        .args(["--then", "keep", "--session-id", &id])
        .arg("--agent-file")
        .arg(&profile)
        .args(["--agent", "tester"])
        .args(extra));
    let said = json_lines(&out)
        .iter()
        .filter_map(|e| e["payload"]["text"].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("\n");
    (id, said, out)
}

fn repo_with_devcontainer(dockerfile_path: &str) -> World {
    let devcontainer = format!(
        "// The box editors open, and codehands' remote box.\n{{\n  \"name\": \"sums\",\n  \
         \"build\": {{\n    \"dockerfile\": \"{dockerfile_path}\",\n    \"context\": \"..\",\n    \
         \"args\": {{ \"SUMCHECK_VERSION\": \"1.2\" }}, /* pinned */\n  }},\n}}\n"
    );
    let dockerfile = format!(
        "FROM {BASE}\nARG SUMCHECK_VERSION\nENV SUMCHECK_VERSION=$SUMCHECK_VERSION\n\
         COPY tools/sumcheck /usr/local/bin/sumcheck\nRUN chmod 755 /usr/local/bin/sumcheck\n"
    );
    World::new(&[
        (".devcontainer/devcontainer.json", &devcontainer),
        (".devcontainer/Dockerfile", &dockerfile),
        ("tools/sumcheck", SUMCHECK),
        ("cases.txt", "2+2=4\n3+4=7\n"),
    ])
}

#[test]
fn a_devcontainer_toolchain_runs_the_repos_tests_in_the_remote_box() {
    if !docker_ready() {
        return;
    }
    if docker(&["image", "inspect", BASE]).is_none() {
        runner_testkit::skip(&format!(
            "{BASE} is not on the engine: `cargo xtask images`"
        ));
        return;
    }
    let _made = MadeImages(derived_images());
    let image = TestImage::build();
    let host = format!("tcp://127.0.0.1:{}", tcp_relay());
    let world = repo_with_devcontainer("Dockerfile");

    let (id, said, out) = run_tests(&world, &image, &host, &[]);
    assert!(
        out.status.success(),
        "{said}\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        said.contains("sumcheck 1.2") && said.contains("ok 2+2=4") && said.contains("ok 3+4=7"),
        "the devcontainer's toolchain (with its build arg) ran the repo's tests: {said}"
    );
    assert!(said.contains("tests exit 0"), "and they passed: {said}");
    let made = derived_images();
    assert_eq!(
        made.len() - _made.0.len(),
        2,
        "the devcontainer's image and ours on top: {made:?}"
    );
    let (_, again, _) = run_tests(&world, &image, &host, &[]);
    assert!(again.contains("tests exit 0"), "{again}");
    assert_eq!(
        derived_images(),
        made,
        "a second session (a fresh worktree) finds both images by their hash"
    );
    let diff =
        text(&run(codehands(&world, "replay", 0, None, &image.tag).args(["diff", &id])).stdout);
    assert!(
        diff.contains("test-report.txt") && diff.contains("+tests exit 0"),
        "the report the box wrote came back as the run's change: {diff}"
    );

    // The same box as Kubernetes objects, from the plan it ran: its image must be named (the
    // engine made it), and the Job runs our init through our loader in it.
    let manifest = |extra: &[&str]| {
        run(codehands(&world, "replay", 0, None, &image.tag)
            .args(["remote", "manifest", &id, "--engine", "k8s"])
            .args(extra))
    };
    let refused = manifest(&[]);
    assert!(
        !refused.status.success() && text(&refused.stderr).contains("--image"),
        "{}",
        text(&refused.stderr)
    );
    let listed = manifest(&["--image", "registry.example.com/team/box:1"]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let list: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let items = list["items"].as_array().unwrap();
    let kinds: Vec<&str> = items.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        ["Secret", "NetworkPolicy", "Job"],
        "no provider: no proxy"
    );
    let container = &items[2]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "registry.example.com/team/box:1");
    assert!(
        container["command"][0]
            .as_str()
            .is_some_and(|c| c.starts_with("/.codehands/")),
        "{container}"
    );
    assert_eq!(items[1]["spec"]["egress"], serde_json::json!([]));

    // The base image alone, named by --image: a shell and no toolchain.
    let (_, said, out) = run_tests(&world, &image, &host, &["--image", BASE]);
    assert!(
        said.contains("sumcheck: not found") && said.contains("tests exit 127"),
        "the base image lacks the toolchain, so the tests cannot run: {said}\n{}",
        text(&out.stderr)
    );

    // codehands' own image, named to skip the devcontainer: no shell, let alone the toolchain.
    let (_, said, out) = run_tests(&world, &image, &host, &["--image", &image.tag]);
    let all = format!("{said}\n{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        !said.contains("tests exit") && all.contains("cannot run sh: it was not found"),
        "the default image has no shell to run the tests with: {all}"
    );
}

#[test]
fn a_devcontainer_that_leaves_the_repo_is_refused_before_any_box() {
    if !docker_ready() {
        return;
    }
    let image = TestImage::build();
    let world = repo_with_devcontainer("../../../etc/passwd");
    let before = derived_images();
    let (_, said, out) = run_tests(&world, &image, "unix:///var/run/docker.sock", &[]);
    let all = format!("{said}\n{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains("leaves the repo") && all.contains("devcontainer"),
        "the reason names the devcontainer's path: {all}"
    );
    assert_eq!(derived_images(), before, "nothing was built");
}

#[test]
fn an_image_for_the_local_box_or_one_that_is_not_a_name_is_refused() {
    let world = World::demo();
    for (args, words) in [
        (&["--image", "node:22"][..], "--engine docker"),
        (
            &["--image=--privileged", "--engine", "docker"][..],
            "not an image name",
        ),
    ] {
        let out = run(world
            .codehands()
            .current_dir(&world.repo)
            .args(["run", ".", "Fix it.", "--agent", "fake"])
            .args(args));
        assert!(!out.status.success(), "{args:?} was taken");
        let said = text(&out.stderr);
        assert!(said.contains(words), "{args:?}: {said}");
    }
}
