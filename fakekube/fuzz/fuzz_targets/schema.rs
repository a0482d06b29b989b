#![no_main]
//! `fakekube::fuzzing::schema` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fakekube::fuzzing::schema(data));
