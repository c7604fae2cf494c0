//! The remote box as a Kubernetes Job, on paper (docs/kubernetes.md): the manifest a `kube`
//! backend would apply, with the same locks as the Docker box. Generated from a run's plan;
//! a test deserializes it strictly with the `k8s-openapi` types.

use serde_json::{Value, json};

use crate::plan::{BOX_DIR, BOX_HOME, RemotePlan};

/// Where the provider is, when the box may reach one: an address block and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    /// `203.0.113.7/32`.
    pub cidr: String,
    /// `443`.
    pub port: u16,
}

/// The objects of one box: the Job, and the NetworkPolicy that lets its pod reach only the
/// provider (and nothing reach it). The inputs' Secret is named, not made: its data is the
/// agent's env, which belongs in `kubectl create secret`, never in a file of manifests.
pub fn manifest(plan: &RemotePlan, provider: Option<&Provider>) -> Vec<Value> {
    let name = format!("codehands-{}", &plan.box_id[..plan.box_id.len().min(12)]);
    let worktree = plan.worktree.display().to_string();
    let labels = json!({
        "app.kubernetes.io/name": "codehands-box",
        "codehands.session": plan.session,
        "codehands.box": plan.box_id,
    });
    let limits = plan.limits;
    let job = json!({
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
                    "securityContext": {
                        "runAsNonRoot": true,
                        "runAsUser": 1000,
                        "runAsGroup": 1000,
                        "fsGroup": 1000,
                        "seccompProfile": { "type": "RuntimeDefault" }
                    },
                    "containers": [{
                        "name": "box",
                        "image": plan.image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": plan.command(true),
                        "workingDir": worktree,
                        "env": [{ "name": "HOME", "value": BOX_HOME }],
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "privileged": false,
                            "readOnlyRootFilesystem": true,
                            "capabilities": { "drop": ["ALL"] }
                        },
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
                            { "name": "inputs", "mountPath": crate::init::SECRETS_DIR, "readOnly": true }
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
    });
    let egress = match provider {
        Some(provider) => json!([{
            "to": [{ "ipBlock": { "cidr": provider.cidr } }],
            "ports": [{ "protocol": "TCP", "port": provider.port }]
        }]),
        None => json!([]),
    };
    let policy = json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": { "name": name, "labels": labels },
        "spec": {
            "podSelector": { "matchLabels": { "codehands.box": plan.box_id } },
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [],
            "egress": egress
        }
    });
    vec![job, policy]
}
