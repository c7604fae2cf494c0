//! The `patch` target: its body is `fuzz_harness::patch` (vcs-git's patch writer, checked
//! against the `git` program, which must be installed).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::patch(data));
