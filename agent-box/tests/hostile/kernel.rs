//! The kernel layer: host-wide /proc read-only, the seccomp filter, the init out of reach.
