#![no_main]
//! `fakekube::fuzzing::websocket_frames` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fakekube::fuzzing::websocket_frames(data));
