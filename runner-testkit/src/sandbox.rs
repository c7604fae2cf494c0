//! The `Sandbox` conformance suite.
//!
//! Every function takes the sandbox, the codehands home it writes results
//! under, and an image that has a POSIX `sh` (the backend's difference).

use std::path::{Path, PathBuf};

use runner_contract::{
    BoxLimits, Language, RepoProfile, Sandbox, SandboxErrorKind, SandboxRequest, SandboxResult,
    SessionId,
};

/// What a backend gives the suite.
pub struct SandboxFixture<'a> {
    /// The sandbox under test.
    pub sandbox: &'a dyn Sandbox,
    /// The codehands home it writes `runs/<sessionId>/test-<n>.json` under.
    pub home: &'a Path,
    /// An image with `sh`, `echo`, `sleep` and `exit`.
    pub image: &'a str,
}

/// Runs every check of the suite.
pub async fn run_all(f: &SandboxFixture<'_>) {
    passes_and_fails(f).await;
    writes_numbered_results(f).await;
    kills_at_the_time_limit(f).await;
    never_errs_on_what_it_cannot_test(f).await;
}

/// A folder the box's user can read, with one file.
fn worktree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    std::fs::write(dir.path().join("marker.txt"), "in the worktree").expect("a file");
    dir
}

fn request(worktree: &Path, command: &str, image: &str) -> SandboxRequest {
    SandboxRequest {
        session_id: SessionId::new_random(),
        worktree: worktree.to_path_buf(),
        profile: RepoProfile {
            language: Language::Unknown,
            ..Default::default()
        },
        test_command: Some(command.to_owned()),
        image: Some(image.to_owned()),
        timezone: Some("UTC".into()),
        limits: BoxLimits::default(),
    }
}

fn result_path(home: &Path, id: &SessionId, n: u32) -> PathBuf {
    home.join("runs")
        .join(id.to_string())
        .join(format!("test-{n}.json"))
}

/// Exit 0 passes; any other exit fails with its code and output, and no error.
pub async fn passes_and_fails(f: &SandboxFixture<'_>) {
    let dir = worktree();
    let pass = f
        .sandbox
        .run_tests(&request(dir.path(), "cat marker.txt", f.image))
        .await;
    assert!(pass.passed, "exit 0 passes: {pass:?}");
    assert_eq!(pass.exit_code, Some(0), "exit code 0: {pass:?}");
    assert!(pass.error.is_none(), "a pass has no error: {pass:?}");
    assert!(
        pass.output.contains("in the worktree"),
        "the worktree is the working directory: {pass:?}"
    );
    let fail = f
        .sandbox
        .run_tests(&request(dir.path(), "echo failing; exit 5", f.image))
        .await;
    assert!(!fail.passed, "exit 5 fails: {fail:?}");
    assert_eq!(fail.exit_code, Some(5), "the exit code is kept: {fail:?}");
    assert!(
        fail.error.is_none(),
        "failing tests are not a sandbox error: {fail:?}"
    );
    assert!(
        fail.output.contains("failing"),
        "the output is kept: {fail:?}"
    );
}

/// Each run of a session gets the next number and its result file.
pub async fn writes_numbered_results(f: &SandboxFixture<'_>) {
    let dir = worktree();
    let req = request(dir.path(), "exit 0", f.image);
    let first = f.sandbox.run_tests(&req).await;
    let second = f.sandbox.run_tests(&req).await;
    assert_eq!((first.n, second.n), (1, 2), "runs are numbered 1, 2 …");
    let text = std::fs::read(result_path(f.home, &req.session_id, 2))
        .expect("runs/<id>/test-2.json is written");
    let saved: SandboxResult =
        serde_json::from_slice(&text).expect("the result file is a SandboxResult");
    assert_eq!(saved, second, "the file holds the returned result");
}

/// A test that never ends is stopped at the limit and reported as timed out.
pub async fn kills_at_the_time_limit(f: &SandboxFixture<'_>) {
    let dir = worktree();
    let mut req = request(dir.path(), "sleep 600", f.image);
    req.limits.timeout_secs = 1;
    let result = f.sandbox.run_tests(&req).await;
    assert!(result.timed_out, "timed out: {result:?}");
    assert!(!result.passed, "a timeout never passes: {result:?}");
}

/// What the box cannot run comes back as an error in the result, never a panic or a pass.
pub async fn never_errs_on_what_it_cannot_test(f: &SandboxFixture<'_>) {
    let dir = worktree();
    let mut unknown = request(dir.path(), "true", f.image);
    unknown.test_command = None;
    unknown.image = None;
    let result = f.sandbox.run_tests(&unknown).await;
    assert!(!result.passed, "no test command never passes: {result:?}");
    let error = result
        .error
        .expect("an unknown repo without a test command is an error");
    assert_eq!(
        error.kind,
        SandboxErrorKind::Unsupported,
        "{}",
        error.message
    );
    assert!(!error.message.is_empty(), "the message says what to do");

    let gone = request(&dir.path().join("no-such-folder"), "true", f.image);
    let result = f.sandbox.run_tests(&gone).await;
    assert!(
        !result.passed,
        "a missing worktree never passes: {result:?}"
    );
    assert!(
        result.error.is_some(),
        "a missing worktree is an error: {result:?}"
    );
}
