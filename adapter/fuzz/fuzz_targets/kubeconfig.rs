#![no_main]
//! `agentsandbox::fuzzing::kubeconfig` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agentsandbox::fuzzing::kubeconfig(data));
