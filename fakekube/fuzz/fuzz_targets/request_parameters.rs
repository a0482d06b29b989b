#![no_main]
//! `fakekube::fuzzing::request_parameters` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fakekube::fuzzing::request_parameters(data));
