//! Warm boxes under contention (docs/remote-box.md, "Warm boxes"): steps of `engine_swarm`'s
//! one test, on its swarm and image. The callers are the real shim (`codehands __remote PLAN`),
//! each with its run folder in a home of its own (a machine), its worktree in the pool's folder.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::support::remote::{docker, wait_until};
use crate::support::{World, text};

/// What marks a racer's worktree as its own (its base goes into the box it runs in).
const MARKER: &str = "racer.txt";

/// One warm box, two shims of two machines (no note of one keeps the other away, only the
/// box's own claim does) going on at the same instant: the box names one claim and only that
/// shim hands its inputs in; the other, not named, sends nothing and makes a box of its own.
/// Both turns succeed, and each worktree gets its own result: the fix, and its own marker (a
/// box that read the other's inputs would send back the other's).
pub(crate) fn two_callers_race_for_one_warm_box(world: &World, cold_id: &str) {
    let template = template(world, cold_id);
    assert_eq!(engine_docker::fill_pool(&template, 1), Ok(1));
    wait_until("the warm box runs", || warm_boxes().len() == 1);
    let ahead = warm_boxes();
    let racers: Vec<Racer> = ["a", "b"]
        .iter()
        .map(|name| Racer::new(world, &template, name, name))
        .collect();
    let started: Vec<Started> = racers.iter().map(|racer| racer.start(0)).collect();
    // A shim reads its whole prompt before it asks the engine anything: both go on together.
    let shims: Vec<Child> = started.into_iter().map(go).collect();
    for (racer, shim) in racers.iter().zip(shims) {
        racer.ends_with_its_own_result(shim);
    }
    let took: Vec<String> = racers.iter().map(Racer::box_taken).collect();
    let winners = took.iter().filter(|taken| ahead.contains(taken)).count();
    assert_eq!(
        winners, 1,
        "one racer took the warm box: {took:?} {ahead:?}"
    );
    for (racer, taken) in racers.iter().zip(&took) {
        let won = ahead.contains(taken);
        assert_eq!(warm_turn(racer), won, "racer {}'s phases", racer.name);
        if !won {
            assert_eq!(taken, &racer.own_box, "the loser made a box of its own");
        }
    }
    for racer in &racers {
        wait_for_cleanup(racer);
    }
    remove_warm_boxes();
}

/// A warm box whose claimer went away before it sent its inputs (as a shim killed mid-hand-in)
/// fails and runs again under its old id, and the runs of that claimer's machine take it again
/// (the note it left is of a container gone); meanwhile a run in a box claimed longer ago than
/// the box's wait for inputs (120 s) runs on to its end.
pub(crate) fn a_box_whose_claimer_left_is_taken_again(world: &World, cold_id: &str) {
    let template = template(world, cold_id);
    assert_eq!(engine_docker::fill_pool(&template, 1), Ok(1));
    wait_until("the warm box runs", || warm_boxes().len() == 1);
    let left = warm_boxes().remove(0);
    let first = container_of(&left).unwrap();
    // The claimer: a claim line through an attach, the box's answer, and gone.
    let token = uuid_hex();
    let mut claimer = Command::new("docker")
        .args(["attach", "--sig-proxy=false", &first])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut claim = claimer.stdin.take().unwrap();
    let line = format!("{} {token}\n", engine_docker::handin::CLAIM);
    claim.write_all(line.as_bytes()).unwrap();
    let answer = format!("{} {token}", engine_docker::handin::CLAIMED);
    wait_until("the box names the claim", || {
        Command::new("docker")
            .args(["logs", &first])
            .output()
            .is_ok_and(|out| text(&out.stderr).contains(&answer))
    });
    claimer.kill().unwrap();
    let _ = claimer.wait();
    // What the claimer's machine noted (`remote-pool-claims/BOX@CONTAINER`, its run going).
    let long = Racer::new(world, &template, "long", "c");
    let notes = long.run_dir.join("../../remote-pool-claims");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join(format!("{left}@{first}")), "").unwrap();
    // A run of the same machine meanwhile takes another warm box, and lasts past 120 s (13
    // lines, 11 s apart).
    assert_eq!(engine_docker::fill_pool(&template, 2), Ok(1));
    wait_until("a second warm box runs", || warm_boxes().len() == 2);
    let long_shim = go(long.start(11_000));
    wait_until("the long run took a warm box", || {
        long.box_taken() != long.own_box
    });
    assert_ne!(
        long.box_taken(),
        left,
        "the box its machine claimed is skipped"
    );
    wait_until("the box its claimer left runs again under its id", || {
        container_of(&left).is_some_and(|now| now != first)
    });
    let again = Racer::new(world, &template, "again", "c");
    again.ends_with_its_own_result(go(again.start(0)));
    assert_eq!(again.box_taken(), left, "the box started again is taken");
    long.ends_with_its_own_result(long_shim);
    assert!(
        warm_turn(&long) && warm_turn(&again),
        "both turns in warm boxes"
    );
    for racer in [&long, &again] {
        wait_for_cleanup(racer);
    }
    remove_warm_boxes();
}

/// The plan of the cold run `cold_id`, the pattern of the racers' plans.
fn template(world: &World, cold_id: &str) -> engine_docker::RemotePlan {
    let run_dir = world
        .home
        .run_dir(&runner_contract::SessionId::parse(cold_id).unwrap());
    let plan = std::fs::read(engine_docker::RemotePlan::file_in(&run_dir)).unwrap();
    engine_docker::RemotePlan::from_json(&plan).unwrap()
}

/// A shim started, its prompt not yet written.
type Started = (Child, ChildStdin);

/// Writes the shim's prompt: from now on it asks the engine.
fn go((child, mut prompt): Started) -> Child {
    prompt.write_all(b"Fix the failing test.\n").unwrap();
    drop(prompt);
    child
}

/// A caller: a run folder in the home of its machine, a worktree in the pool's folder (the
/// warm box's tmpfs) holding the demo repo and its marker, and a plan for it.
struct Racer {
    name: &'static str,
    run_dir: PathBuf,
    worktree: PathBuf,
    own_box: String,
}

impl Racer {
    fn new(
        world: &World,
        template: &engine_docker::RemotePlan,
        name: &'static str,
        machine: &str,
    ) -> Self {
        let folder = template.worktree.parent().unwrap();
        let worktree = folder.join(format!("race-{name}-{}", &uuid_hex()[..8]));
        for (path, content) in runner_fake::demo_repo::FILES {
            let path = worktree.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        std::fs::write(worktree.join(MARKER), name).unwrap();
        let run_dir = world
            .dir
            .path()
            .join(format!("machine-{machine}"))
            .join("runs")
            .join(uuid_hex());
        std::fs::create_dir_all(&run_dir).unwrap();
        let plan = engine_docker::RemotePlan {
            box_id: uuid_hex(),
            nonce: uuid_hex(),
            session: uuid_hex(),
            worktree: worktree.clone(),
            home_file: None,
            pool: 1,
            driven: false,
            ..template.clone()
        };
        write_private(
            &engine_docker::RemotePlan::file_in(&run_dir),
            &plan.to_json(),
        );
        Self {
            name,
            run_dir,
            worktree,
            own_box: plan.box_id,
        }
    }

    /// Starts its shim (`codehands __remote PLAN`), the fake agent pausing `delay_ms` between
    /// lines; the shim waits for its prompt ([`go`]).
    fn start(&self, delay_ms: u64) -> Started {
        let mut child = Command::new(env!("CARGO_BIN_EXE_codehands"))
            .arg(engine_docker::SHIM_COMMAND)
            .arg(engine_docker::RemotePlan::file_in(&self.run_dir))
            .env_clear()
            .env("PATH", engine_docker::plan::DEFAULT_PATH)
            .env("CODEHANDS_FAKE_MODE", "replay")
            .env("CODEHANDS_FAKE_DELAY_MS", delay_ms.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let prompt = child.stdin.take().unwrap();
        (child, prompt)
    }

    /// Waits for its shim to end: it succeeded, and the worktree has the fix and its own
    /// marker.
    fn ends_with_its_own_result(&self, shim: Child) {
        let out = shim.wait_with_output().unwrap();
        let name = self.name;
        assert!(
            out.status.success(),
            "racer {name}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        let fixed = std::fs::read_to_string(self.worktree.join("src/date.js")).unwrap();
        assert!(fixed.contains("getMonth() + 1"), "racer {name}: {fixed}");
        assert_eq!(
            std::fs::read_to_string(self.worktree.join(MARKER)).unwrap(),
            name,
            "racer {name}'s worktree has its own result"
        );
    }

    /// The box the turn ran in (the shim writes its plan again naming a warm box it took).
    fn box_taken(&self) -> String {
        let plan = std::fs::read(engine_docker::RemotePlan::file_in(&self.run_dir)).unwrap();
        engine_docker::RemotePlan::from_json(&plan).unwrap().box_id
    }
}

/// Whether the racer's turn took a warm box (its phases say).
fn warm_turn(racer: &Racer) -> bool {
    engine_docker::Phases::read(&racer.run_dir).is_some_and(|p| p.warm)
}

/// Waits for the removal of the racer's box (and the making of one for the pool), in a
/// process of its own, to end; the box is gone.
fn wait_for_cleanup(racer: &Racer) {
    let run_dir = racer.run_dir.display().to_string();
    wait_until("the racer's box is removed", || {
        !std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .any(|entry| {
                std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| {
                    let cmdline = String::from_utf8_lossy(&cmdline);
                    cmdline.contains(engine_docker::CLEANUP_COMMAND) && cmdline.contains(&run_dir)
                })
            })
    });
    let service = format!("codehands-{}", racer.box_taken());
    let gone = docker(&["service", "inspect", &service]).is_none();
    assert!(gone, "{service} is gone after its turn");
}

fn uuid_hex() -> String {
    runner_contract::SessionId::new_random()
        .to_string()
        .replace('-', "")
}

fn write_private(path: &Path, bytes: &[u8]) {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .unwrap();
}

/// The running container of warm box `box_id`.
fn container_of(box_id: &str) -> Option<String> {
    let label = format!("label=codehands.box={box_id}");
    let running = ["--filter", "status=running"];
    let found = docker(
        &[
            &["ps", "--no-trunc", "--quiet", "--filter", &label][..],
            &running,
        ]
        .concat(),
    )?;
    found.split_whitespace().next().map(str::to_owned)
}

/// The box ids of the running warm boxes.
fn warm_boxes() -> Vec<String> {
    docker(&[
        "ps",
        "--filter",
        "label=codehands.pool",
        "--filter",
        "status=running",
        "--format",
        "{{.Label \"codehands.box\"}}",
    ])
    .unwrap_or_default()
    .split_whitespace()
    .map(str::to_owned)
    .collect()
}

/// Removes every warm box and its container (a job's container outlives its service on
/// Docker 20.10).
fn remove_warm_boxes() {
    let services = docker(&[
        "service",
        "ls",
        "--quiet",
        "--filter",
        "label=codehands.pool",
    ]);
    for service in services.unwrap_or_default().split_whitespace() {
        let _ = docker(&["service", "rm", service]);
    }
    let left = docker(&["ps", "--all", "--quiet", "--filter", "label=codehands.pool"]);
    for container in left.unwrap_or_default().split_whitespace() {
        let _ = docker(&["rm", "--force", container]);
    }
}
