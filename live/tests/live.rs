//! The live run: `cargo test -p live --features live` (a `harness = false` test, so libtest's
//! filters and `--list` work across the conformance trials and the live checks). See
//! `live/README.md`.

use std::process::ExitCode;

fn main() -> ExitCode {
    live::run(&live::Arguments::from_args())
}
