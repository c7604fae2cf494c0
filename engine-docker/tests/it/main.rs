//! engine-docker's integration tests, one binary.

mod confinement;
mod k8s_manifest;
