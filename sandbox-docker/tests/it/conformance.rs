//! runner-testkit's `Sandbox` conformance suite, against the real engine.

use crate::common;

use runner_testkit::sandbox::{SandboxFixture, run_all};

#[tokio::test]
async fn docker_sandbox_conforms() {
    let Some((sandbox, home)) = common::sandbox().await else {
        return;
    };
    run_all(&SandboxFixture {
        sandbox: &sandbox,
        home: home.path(),
        image: common::BUSYBOX,
    })
    .await;
}
