//! The `agent_output` target: its body is `fuzz_harness::agent_output`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::agent_output(data));
