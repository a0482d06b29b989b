#![no_main]
//! `fakekube::fuzzing::protobuf` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fakekube::fuzzing::protobuf(data));
