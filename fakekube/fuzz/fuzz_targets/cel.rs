#![no_main]
//! `fakekube::fuzzing::cel` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fakekube::fuzzing::cel(data));
