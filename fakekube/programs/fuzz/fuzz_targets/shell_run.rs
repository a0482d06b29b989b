#![no_main]
//! `fakekube_programs::fuzzing::shell_run` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fakekube_programs::fuzzing::shell_run(data));
