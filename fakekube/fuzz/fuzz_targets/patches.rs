#![no_main]
//! `fakekube::fuzzing::patches` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fakekube::fuzzing::patches(data));
