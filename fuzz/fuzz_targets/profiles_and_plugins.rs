//! The `profiles_and_plugins` target: its body is `fuzz_harness::profiles_and_plugins`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::profiles_and_plugins(data));
