#![no_main]
//! `agentsandbox::fuzzing::status` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agentsandbox::fuzzing::status(data));
