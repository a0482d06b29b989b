#![no_main]
//! `agentsandbox::fuzzing::pool_config` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agentsandbox::fuzzing::pool_config(data));
