//! The Kubernetes objects of a box (docs/kubernetes.md), rendered from the same plan the Docker
//! and Swarm engines run, are what the Kubernetes API takes: each deserializes into the
//! `k8s-openapi` types and serializes back to the same JSON (a field those types do not know
//! would be dropped, and fail). They keep the box's locks: the box's NetworkPolicy lets it
//! reach only its egress proxy (and the cluster's DNS, to find it), the proxy only the allow
//! list's ports, and the agent's env and key travel in the Secret, never in the Job. The
//! committed example, `docs/kubernetes-box.json`, is what the generator makes today
//! (`UPDATE_K8S_EXAMPLE=1 cargo test -p engine-docker --test it -- k8s_manifest` writes it again).

use std::path::PathBuf;

use engine_docker::k8s::{LABEL_EGRESS, list, manifest};
use engine_docker::{RemoteLimits, RemotePlan};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use runner_contract::{BoxNeeds, Engine};
use serde_json::Value;

fn plan(provider: bool) -> RemotePlan {
    let needs = BoxNeeds {
        hosts: vec!["api.anthropic.com:443".to_owned()],
        ..BoxNeeds::default()
    };
    let egress = if provider {
        engine_docker::egress::plan(&needs, &[], Engine::Swarm).unwrap()
    } else {
        Default::default()
    };
    RemotePlan {
        engine: Engine::Swarm,
        box_id: "5e55c0de0b7d4c559a572f0d8e6b1a42".to_owned(),
        nonce: "not-in-the-manifest".to_owned(),
        session: "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42".to_owned(),
        image: "registry.example.com/codehands/remote:1".to_owned(),
        docker_host: None,
        ssh_env: Vec::new(),
        login: Vec::new(),
        worktree: PathBuf::from("/home/dev/.codehands/worktrees/repo-1a2b3c/3f2a9c1e"),
        program: "claude".to_owned(),
        args: vec!["--output-format".to_owned(), "stream-json".to_owned()],
        limits: RemoteLimits::default(),
        constraints: Vec::new(),
        egress,
        stdin_lines: None,
        files: Vec::new(),
        home_file: None,
        user_image: None,
        derived: None,
        nested_sandbox: false,
        pool: 0,
        driven: false,
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

fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

#[test]
fn a_box_with_a_provider_is_a_secret_a_proxy_two_policies_and_a_job_the_kubernetes_types_take_whole()
 {
    let inputs = b"ANTHROPIC_API_KEY=sk-ant-not-in-the-job".repeat(20_000);
    let objects = manifest(&plan(true), Some(&inputs));
    let kinds: Vec<&str> = objects
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "Secret",
            "Deployment",
            "Service",
            "NetworkPolicy",
            "NetworkPolicy",
            "Job"
        ]
    );

    // The inputs: in the Secret, in chunks the init reads in order; nowhere else.
    let secret: Secret = strictly(of_kind(&objects, "Secret")[0]);
    let data = secret.data.unwrap();
    assert_eq!(
        data.keys().collect::<Vec<_>>(),
        ["codehands-in-000", "codehands-in-001"]
    );
    let joined: Vec<u8> = data.values().flat_map(|b| b.0.clone()).collect();
    assert_eq!(joined, inputs);

    let job_value = of_kind(&objects, "Job")[0];
    let job: Job = strictly(job_value);
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
    let env = container.env.clone().unwrap_or_default();
    assert!(
        env.iter()
            .all(|e| ["HOME", "PATH"].contains(&e.name.as_str()) && e.value_from.is_none()),
        "nothing of the agent's env in the pod spec: {env:?}"
    );
    let job_text = job_value.to_string();
    assert!(!job_text.contains("sk-ant"), "the key is not in the Job");
    assert!(
        !job_text.contains("not-in-the-manifest"),
        "the nonce stays with the caller"
    );
    let command = container.command.clone().unwrap();
    assert!(
        command
            .iter()
            .any(|a| a.ends_with("=api.anthropic.com:443")),
        "the init forwards to the provider through the proxy: {command:?}"
    );
    assert_eq!(
        pod.host_aliases.unwrap()[0].hostnames.as_deref(),
        Some(&["api.anthropic.com".to_owned()][..]),
        "the provider's name leads to the init's listener"
    );

    // The proxy: our image with the plan's allow list, as on a swarm.
    let deployment: Deployment = strictly(of_kind(&objects, "Deployment")[0]);
    let proxy = deployment.metadata.name.clone().unwrap();
    let proxy_pod = deployment.spec.unwrap().template.spec.unwrap();
    let proxy_command = proxy_pod.containers[0].command.clone().unwrap();
    assert_eq!(
        proxy_command[1..],
        ["__remote-egress", "3128", "api.anthropic.com:443"]
    );
    let service: Service = strictly(of_kind(&objects, "Service")[0]);
    assert_eq!(
        service.metadata.name.as_deref(),
        Some("codehands-egress"),
        "the name the box's init dials"
    );

    // The box's policy: nothing in; out only to its proxy's port, and the DNS.
    let policies: Vec<NetworkPolicy> = of_kind(&objects, "NetworkPolicy")
        .into_iter()
        .map(strictly)
        .collect();
    let boxed = policies
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some("codehands-5e55c0de0b7d"))
        .unwrap()
        .spec
        .clone()
        .unwrap();
    assert_eq!(
        boxed.ingress.as_deref(),
        Some(&[][..]),
        "nothing reaches the box"
    );
    let egress = boxed.egress.unwrap();
    assert_eq!(egress.len(), 2);
    let to_proxy = &egress[0];
    let peer = &to_proxy.to.as_ref().unwrap()[0];
    assert!(peer.ip_block.is_none() && peer.namespace_selector.is_none());
    assert_eq!(
        peer.pod_selector
            .as_ref()
            .unwrap()
            .match_labels
            .as_ref()
            .unwrap()[LABEL_EGRESS],
        proxy
    );
    let ports = |rule: &k8s_openapi::api::networking::v1::NetworkPolicyEgressRule| {
        rule.ports
            .clone()
            .unwrap()
            .iter()
            .map(|p| format!("{:?}", p.port))
            .collect::<Vec<_>>()
    };
    assert_eq!(ports(to_proxy), ["Some(Int(3128))"]);
    let dns = &egress[1];
    assert_eq!(ports(dns), ["Some(Int(53))", "Some(Int(53))"]);
    assert_eq!(
        dns.to.as_ref().unwrap()[0]
            .pod_selector
            .as_ref()
            .unwrap()
            .match_labels
            .as_ref()
            .unwrap()["k8s-app"],
        "kube-dns"
    );
    let text = serde_json::to_string(&boxed.pod_selector).unwrap();
    assert!(text.contains("5e55c0de0b7d4c559a572f0d8e6b1a42"), "{text}");

    // The proxy's policy: in only from boxes, out only to the allow list's port and the DNS.
    let proxy_policy = policies
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some(proxy.as_str()))
        .unwrap()
        .spec
        .clone()
        .unwrap();
    assert_eq!(
        ports(&proxy_policy.egress.clone().unwrap()[0]),
        ["Some(Int(443))"]
    );
    assert_eq!(proxy_policy.ingress.unwrap().len(), 1);
}

#[test]
fn a_box_without_a_provider_has_no_way_out_and_an_empty_secret() {
    let objects = manifest(&plan(false), None);
    let kinds: Vec<&str> = objects
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["Secret", "NetworkPolicy", "Job"]);
    let secret: Secret = strictly(&objects[0]);
    assert!(
        secret.data.unwrap().is_empty(),
        "filled by the one who applies it"
    );
    let policy: NetworkPolicy = strictly(&objects[1]);
    assert_eq!(
        policy.spec.unwrap().egress.as_deref(),
        Some(&[][..]),
        "no provider: no way out"
    );
    let _: Job = strictly(&objects[2]);
}

#[test]
fn a_box_in_the_persons_image_runs_our_init_through_our_loader() {
    let mut plan = plan(false);
    plan.user_image = Some(engine_docker::plan::UserImage::Named {
        name: "node:22".to_owned(),
    });
    plan.derived = Some((
        "registry.example.com/team/box:1".to_owned(),
        "/usr/local/node/bin:/usr/bin".to_owned(),
    ));
    let job: Job = strictly(&manifest(&plan, None)[2]);
    let container = &job.spec.unwrap().template.spec.unwrap().containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some("registry.example.com/team/box:1")
    );
    let command = container.command.clone().unwrap();
    assert!(command[0].starts_with("/.codehands/") && command[0].contains("ld-linux"));
    assert!(command.contains(&"--root".to_owned()), "{command:?}");
    let path = container.env.clone().unwrap();
    assert!(
        path.iter().any(|e| e.name == "PATH"
            && e.value
                .as_deref()
                .unwrap()
                .starts_with("/usr/local/node/bin:")),
        "the image's PATH first: {path:?}"
    );
}

#[test]
fn the_committed_example_is_what_the_generator_makes() {
    let generated =
        serde_json::to_string_pretty(&list(manifest(&plan(true), None))).unwrap() + "\n";
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/kubernetes-box.json");
    if std::env::var_os("UPDATE_K8S_EXAMPLE").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        committed, generated,
        "docs/kubernetes-box.json is stale: UPDATE_K8S_EXAMPLE=1 cargo test -p engine-docker --test it -- k8s_manifest"
    );
}

#[test]
#[should_panic(expected = "every field is one the Kubernetes types know")]
fn a_field_the_kubernetes_types_do_not_know_fails_the_check() {
    let mut job = manifest(&plan(false), None).remove(2);
    job["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFS"] =
        Value::Bool(true);
    let _: Job = strictly(&job);
}
