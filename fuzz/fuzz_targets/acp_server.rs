//! The `acp_server` target: its body is `fuzz_harness::acp_server`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::acp_server(data));
