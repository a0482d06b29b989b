#![no_main]
//! `agentsandbox::fuzzing::objects` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agentsandbox::fuzzing::objects(data));
