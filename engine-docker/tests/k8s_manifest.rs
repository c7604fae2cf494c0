//! The Kubernetes manifest of a box (docs/kubernetes.md) is what the Kubernetes API takes: each
//! object deserializes into the `k8s-openapi` types and serializes back to the same JSON (a
//! field those types do not know would be dropped, and fail), it keeps the box's locks, and
//! the committed example, `docs/kubernetes-box.json`, is what the generator makes today
//! (`UPDATE_K8S_EXAMPLE=1 cargo test -p engine-docker --test k8s_manifest` writes it again).

use std::path::PathBuf;

use engine_docker::k8s::{Provider, manifest};
use engine_docker::{RemoteLimits, RemotePlan};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use serde_json::Value;

fn plan() -> RemotePlan {
    RemotePlan {
        engine: runner_contract::Engine::Swarm,
        box_id: "5e55c0de0b7d4c559a572f0d8e6b1a42".to_owned(),
        nonce: "not-in-the-manifest".to_owned(),
        session: "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42".to_owned(),
        image: "registry.example.com/codehands/remote:1".to_owned(),
        docker_host: None,
        ssh_env: Vec::new(),
        login: Vec::new(),
        worktree: PathBuf::from("/home/dev/.codehands/worktrees/repo-1a2b3c/3f2a9c1e"),
        program: "codehands".to_owned(),
        args: vec![
            "__fake-agent".to_owned(),
            "--output-format".to_owned(),
            "stream-json".to_owned(),
        ],
        limits: RemoteLimits::default(),
        constraints: Vec::new(),
        egress: Default::default(),
        stdin_lines: None,
        files: Vec::new(),
        home_file: None,
        pool: 0,
    }
}

/// `value` as `T` and back, unchanged.
fn strictly<T: serde::de::DeserializeOwned + serde::Serialize>(value: &Value) -> T {
    let typed: T = serde_json::from_value(value.clone()).expect("the Kubernetes types take it");
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        &back, value,
        "every field is one the Kubernetes types know, with its right type"
    );
    typed
}

#[test]
fn the_manifest_is_a_job_and_a_network_policy_the_kubernetes_types_take_whole() {
    let provider = Provider {
        cidr: "203.0.113.7/32".to_owned(),
        port: 443,
    };
    let objects = manifest(&plan(), Some(&provider));
    assert_eq!(objects.len(), 2);
    let job: Job = strictly(&objects[0]);
    let policy: NetworkPolicy = strictly(&objects[1]);

    let spec = job.spec.unwrap();
    assert_eq!(spec.backoff_limit, Some(0), "a run is never run twice");
    let pod = spec.template.spec.unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert_eq!(pod.automount_service_account_token, Some(false));
    assert_eq!(pod.security_context.unwrap().run_as_non_root, Some(true));
    let container = &pod.containers[0];
    let locks = container.security_context.clone().unwrap();
    assert_eq!(locks.read_only_root_filesystem, Some(true));
    assert_eq!(locks.allow_privilege_escalation, Some(false));
    assert_eq!(
        locks.capabilities.unwrap().drop.unwrap(),
        vec!["ALL".to_owned()]
    );
    assert!(
        container
            .resources
            .as_ref()
            .unwrap()
            .limits
            .as_ref()
            .unwrap()
            .contains_key("memory")
    );
    let env = container.env.clone().unwrap_or_default();
    assert!(
        env.iter().all(|e| e.name == "HOME"),
        "nothing of the agent's env in the pod spec"
    );
    assert!(
        !objects[0].to_string().contains("not-in-the-manifest"),
        "the nonce stays with the caller"
    );

    let policy = policy.spec.unwrap();
    assert_eq!(
        policy.ingress.as_deref(),
        Some(&[][..]),
        "nothing reaches the box"
    );
    let egress = policy.egress.unwrap();
    assert_eq!(egress.len(), 1);
    assert_eq!(
        egress[0].to.as_ref().unwrap()[0]
            .ip_block
            .as_ref()
            .unwrap()
            .cidr,
        "203.0.113.7/32"
    );

    let without: NetworkPolicy = strictly(&manifest(&plan(), None)[1]);
    assert_eq!(
        without.spec.unwrap().egress.as_deref(),
        Some(&[][..]),
        "no provider: no way out"
    );
}

#[test]
fn the_committed_example_is_what_the_generator_makes() {
    let provider = Provider {
        cidr: "203.0.113.7/32".to_owned(),
        port: 443,
    };
    let generated = serde_json::to_string_pretty(&Value::Array(manifest(&plan(), Some(&provider))))
        .unwrap()
        + "\n";
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/kubernetes-box.json");
    if std::env::var_os("UPDATE_K8S_EXAMPLE").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        committed, generated,
        "docs/kubernetes-box.json is stale: UPDATE_K8S_EXAMPLE=1 cargo test -p engine-docker --test k8s_manifest"
    );
}

#[test]
#[should_panic(expected = "every field is one the Kubernetes types know")]
fn a_field_the_kubernetes_types_do_not_know_fails_the_check() {
    let mut job = manifest(&plan(), None).remove(0);
    job["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFS"] =
        Value::Bool(true);
    let _: Job = strictly(&job);
}
