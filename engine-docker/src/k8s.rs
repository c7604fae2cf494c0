//! The remote box as Kubernetes objects (docs/kubernetes.md), rendered from the same
//! [`RemotePlan`] the Docker and Swarm engines run: the inputs' Secret, the box's Job, its
//! NetworkPolicy (out only to its egress proxy, and to the cluster's DNS to find it), and for
//! an agent with a provider the proxy itself (a Deployment, its Service and NetworkPolicy), the
//! same `codehands __remote-egress` with the same allow list as on a swarm.
//! `codehands remote manifest ID` prints them; a test deserializes them strictly with the
//! `k8s-openapi` types.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::egress::{EGRESS_ALIAS, EGRESS_PORT};
use crate::frame::SECRET_CHUNK;
use crate::init::{SECRET_PREFIX, SECRETS_DIR};
use crate::plan::{BOX_DIR, RemotePlan};

/// The label that marks a box's egress proxy pod, with the proxy's name as its value.
pub const LABEL_EGRESS: &str = "codehands.egress";

/// The objects of the box of `plan`, in the order `kubectl apply` takes them: the Secret
/// holding `inputs` (the tar the shim packs: the agent's env and prompt and the base tree, in
/// chunks as on a swarm; without them the Secret is named and empty, for the one who applies
/// it to fill), the proxy's objects when the box has a provider, the box's NetworkPolicy and
/// its Job. Nothing of the agent's env is in the Job.
pub fn manifest(plan: &RemotePlan, inputs: Option<&[u8]>) -> Vec<Value> {
    let name = format!("codehands-{}", &plan.box_id[..plan.box_id.len().min(12)]);
    let labels = json!({
        "app.kubernetes.io/name": "codehands-box",
        "codehands.session": plan.session,
        "codehands.box": plan.box_id,
    });
    let data: serde_json::Map<String, Value> = inputs
        .unwrap_or_default()
        .chunks(SECRET_CHUNK)
        .enumerate()
        .map(|(i, chunk)| {
            (
                format!("{SECRET_PREFIX}{i:03}"),
                Value::String(base64::engine::general_purpose::STANDARD.encode(chunk)),
            )
        })
        .collect();
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": { "name": format!("{name}-in"), "labels": labels },
        "type": "Opaque",
        "data": data
    });
    let mut objects = vec![secret];
    let proxy = egress_name(plan);
    if let Some(proxy) = &proxy {
        objects.extend(egress_objects(plan, proxy));
    }
    let dns = json!({
        "to": [{
            "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": "kube-system" } },
            "podSelector": { "matchLabels": { "k8s-app": "kube-dns" } }
        }],
        "ports": [{ "protocol": "UDP", "port": 53 }, { "protocol": "TCP", "port": 53 }]
    });
    let egress = match &proxy {
        Some(proxy) => json!([
            {
                "to": [{ "podSelector": { "matchLabels": { LABEL_EGRESS: proxy } } }],
                "ports": [{ "protocol": "TCP", "port": EGRESS_PORT }]
            },
            dns
        ]),
        None => json!([]),
    };
    objects.push(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": { "name": name, "labels": labels },
        "spec": {
            "podSelector": { "matchLabels": { "codehands.box": plan.box_id } },
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [],
            "egress": egress
        }
    }));
    objects.push(job(plan, &name, &labels));
    objects
}

/// The name of `plan`'s egress proxy, when its box has a provider.
fn egress_name(plan: &RemotePlan) -> Option<String> {
    (!plan.egress.forwards.is_empty()).then(|| {
        let allow: Vec<String> = plan.egress.allow().iter().map(|t| t.to_string()).collect();
        let mut sha = sha1_smol::Sha1::new();
        sha.update(allow.join(" ").as_bytes());
        format!("codehands-egress-{}", &sha.digest().to_string()[..12])
    })
}

fn pod_security() -> Value {
    json!({
        "runAsNonRoot": true,
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "fsGroup": 1000,
        "seccompProfile": { "type": "RuntimeDefault" }
    })
}

fn container_locks() -> Value {
    json!({
        "allowPrivilegeEscalation": false,
        "privileged": false,
        "readOnlyRootFilesystem": true,
        "capabilities": { "drop": ["ALL"] }
    })
}

fn env_of(plan: &RemotePlan) -> Value {
    Value::Array(
        plan.public_env()
            .iter()
            .filter_map(|pair| pair.split_once('='))
            .map(|(name, value)| json!({ "name": name, "value": value }))
            .collect(),
    )
}

/// The box: `codehands __remote-init` as on a swarm (the result in its log under the nonce).
fn job(plan: &RemotePlan, name: &str, labels: &Value) -> Value {
    let worktree = plan.worktree.display().to_string();
    let limits = plan.limits;
    let host_aliases: Vec<Value> = plan
        .egress
        .hosts
        .iter()
        .map(|(host, ip)| json!({ "ip": ip.to_string(), "hostnames": [host] }))
        .collect();
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": name, "labels": labels },
        "spec": {
            // A run is never run twice.
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 600,
            "activeDeadlineSeconds": 3600,
            "template": {
                "metadata": { "labels": labels },
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": false,
                    "enableServiceLinks": false,
                    "hostNetwork": false,
                    "hostPID": false,
                    "hostIPC": false,
                    "hostAliases": host_aliases,
                    "securityContext": pod_security(),
                    "containers": [{
                        "name": "box",
                        "image": plan.box_image(),
                        "imagePullPolicy": "IfNotPresent",
                        "command": plan.command(true),
                        "workingDir": worktree,
                        "env": env_of(plan),
                        "securityContext": container_locks(),
                        "resources": {
                            "limits": {
                                "cpu": format!("{}m", limits.nano_cpus / 1_000_000),
                                "memory": limits.memory_bytes.to_string()
                            },
                            "requests": {
                                "cpu": format!("{}m", limits.reserve_nano_cpus / 1_000_000),
                                "memory": limits.reserve_memory_bytes.to_string()
                            }
                        },
                        "volumeMounts": [
                            { "name": "box", "mountPath": BOX_DIR },
                            { "name": "work", "mountPath": worktree },
                            { "name": "tmp", "mountPath": "/tmp" },
                            { "name": "inputs", "mountPath": SECRETS_DIR, "readOnly": true }
                        ]
                    }],
                    "volumes": [
                        { "name": "box", "emptyDir": { "sizeLimit": "256Mi" } },
                        { "name": "work", "emptyDir": { "sizeLimit": "1Gi" } },
                        { "name": "tmp", "emptyDir": { "medium": "Memory", "sizeLimit": "512Mi" } },
                        { "name": "inputs", "secret": { "secretName": format!("{name}-in"), "defaultMode": 0o400 } }
                    ]
                }
            }
        }
    })
}

/// The egress proxy `proxy` of `plan`: a Deployment of our image with the plan's allow list,
/// the Service the box's init dials ([`EGRESS_ALIAS`]), and its NetworkPolicy (in only from
/// boxes, out only to the allow list's ports and the DNS).
fn egress_objects(plan: &RemotePlan, proxy: &str) -> Vec<Value> {
    let labels = json!({ "app.kubernetes.io/name": "codehands-egress", LABEL_EGRESS: proxy });
    let mut command = vec![
        "codehands".to_owned(),
        crate::EGRESS_COMMAND.to_owned(),
        EGRESS_PORT.to_string(),
    ];
    let allow = plan.egress.allow();
    command.extend(allow.iter().map(|t| t.to_string()));
    let mut ports: Vec<u16> = allow.iter().map(|t| t.port).collect();
    ports.sort_unstable();
    ports.dedup();
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": proxy, "labels": labels },
        "spec": {
            "replicas": 1,
            "selector": { "matchLabels": { LABEL_EGRESS: proxy } },
            "template": {
                "metadata": { "labels": labels },
                "spec": {
                    "automountServiceAccountToken": false,
                    "enableServiceLinks": false,
                    "securityContext": pod_security(),
                    "containers": [{
                        "name": "egress",
                        "image": plan.image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": command,
                        "env": [{ "name": "PATH", "value": crate::plan::DEFAULT_PATH }],
                        "ports": [{ "containerPort": EGRESS_PORT, "protocol": "TCP" }],
                        "securityContext": container_locks(),
                        "resources": { "limits": { "cpu": "500m", "memory": "128Mi" } }
                    }]
                }
            }
        }
    });
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": { "name": EGRESS_ALIAS, "labels": labels },
        "spec": {
            "selector": { LABEL_EGRESS: proxy },
            "ports": [{ "protocol": "TCP", "port": EGRESS_PORT, "targetPort": EGRESS_PORT }]
        }
    });
    let policy = json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": { "name": proxy, "labels": labels },
        "spec": {
            "podSelector": { "matchLabels": { LABEL_EGRESS: proxy } },
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{
                "from": [{ "podSelector": { "matchLabels": { "app.kubernetes.io/name": "codehands-box" } } }],
                "ports": [{ "protocol": "TCP", "port": EGRESS_PORT }]
            }],
            "egress": [
                { "ports": ports.iter().map(|p| json!({ "protocol": "TCP", "port": p })).collect::<Vec<_>>() },
                {
                    "to": [{
                        "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": "kube-system" } },
                        "podSelector": { "matchLabels": { "k8s-app": "kube-dns" } }
                    }],
                    "ports": [{ "protocol": "UDP", "port": 53 }, { "protocol": "TCP", "port": 53 }]
                }
            ]
        }
    });
    vec![deployment, service, policy]
}

/// `objects` as one `v1` List, which `kubectl apply -f -` takes (JSON is YAML too).
pub fn list(objects: Vec<Value>) -> Value {
    json!({ "apiVersion": "v1", "kind": "List", "items": objects })
}
