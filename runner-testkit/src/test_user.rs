//! The unprivileged user the box's tests run codehands as when they run as root (as CI and
//! containers do): made once per machine, shared by every test binary.

use std::process::Command;
use std::sync::OnceLock;

/// The test user's name.
pub const TEST_USER: &str = "codehands-hostile";

/// The test user's uid and gid, made on first use (`useradd`; the tests run as root).
pub fn test_user() -> (u32, u32) {
    static USER: OnceLock<(u32, u32)> = OnceLock::new();
    *USER.get_or_init(|| {
        let find = || nix::unistd::User::from_name(TEST_USER).ok().flatten();
        if find().is_none() {
            let status = Command::new("useradd")
                .args([
                    "--system",
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                ])
                .arg(TEST_USER)
                .status()
                .expect("useradd runs");
            // Another test binary may have made it meanwhile (exit code 9: it exists).
            assert!(
                status.success() || status.code() == Some(9),
                "cannot make the test user {TEST_USER}: {status}"
            );
        }
        let user = find().expect("the test user exists");
        (user.uid.as_raw(), user.gid.as_raw())
    })
}
