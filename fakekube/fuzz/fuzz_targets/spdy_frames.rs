#![no_main]
//! `fakekube::fuzzing::spdy_frames` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fakekube::fuzzing::spdy_frames(data));
