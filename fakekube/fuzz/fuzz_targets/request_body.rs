#![no_main]
//! `fakekube::fuzzing::request_body` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fakekube::fuzzing::request_body(data));
