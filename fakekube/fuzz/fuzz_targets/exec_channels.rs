#![no_main]
//! `fakekube::fuzzing::exec_channels` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fakekube::fuzzing::exec_channels(data));
