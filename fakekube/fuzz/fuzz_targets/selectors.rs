#![no_main]
//! `fakekube::fuzzing::selectors` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fakekube::fuzzing::selectors(data));
