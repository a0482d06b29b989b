//! The capability conformance suite any sandbox provider adapter runs.
//!
//! Not built yet (issue 5). One trial per normative rule of the contract, grouped by capability
//! and run through libtest-mimic; coherence trials for undeclared capabilities; a reference
//! provider and mutants that prove every trial can fail; and the `conformance` binary, the
//! project's main job.
