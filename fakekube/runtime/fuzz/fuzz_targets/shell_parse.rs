#![no_main]
//! `fakekube_runtime::fuzzing::shell_parse` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fakekube_runtime::fuzzing::shell_parse(data));
