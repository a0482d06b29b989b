#![no_main]
//! `agentsandbox::fuzzing::exec_messages` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agentsandbox::fuzzing::exec_messages(data));
