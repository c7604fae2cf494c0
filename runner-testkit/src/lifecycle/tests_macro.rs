//! [`lifecycle_tests!`](crate::lifecycle_tests): one test per step of the suite.

/// One test per step of the lifecycle suite for the agent `make()` gives (`None`: skipped,
/// having said why). Use once in a test file: `runner_testkit::lifecycle_tests!(my_agent);`
/// where `fn my_agent() -> Option<impl RealAgent>`.
#[macro_export]
macro_rules! lifecycle_tests {
    ($make:expr) => {
        mod lifecycle {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_change_is_approved_as_one_commit_on_its_branch() {
                if let Some(agent) = ($make)() {
                    $crate::lifecycle::approve(&agent).await;
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_rejected_change_leaves_nothing() {
                if let Some(agent) = ($make)() {
                    $crate::lifecycle::reject(&agent).await;
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_stopped_run_ends_its_command_and_resumes_where_it_can() {
                if let Some(agent) = ($make)() {
                    $crate::lifecycle::stop_and_resume(&agent).await;
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_401_fails_at_the_first_sign_and_approve_is_refused() {
                if let Some(agent) = ($make)() {
                    $crate::lifecycle::unauthorized(&agent).await;
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn the_callers_secrets_never_reach_the_agent_and_its_key_no_reader() {
                if let Some(agent) = ($make)() {
                    $crate::lifecycle::secrets(&agent).await;
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_follow_up_continues_the_conversation_where_it_can() {
                if let Some(agent) = ($make)() {
                    $crate::lifecycle::follow_up(&agent).await;
                }
            }
        }
    };
}
