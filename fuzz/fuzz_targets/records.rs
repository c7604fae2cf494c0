//! The `records` target: its body is `fuzz_harness::records`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::records(data));
