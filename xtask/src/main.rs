//! `xtask`: the project's tasks written in Rust, run as `cargo xtask ...` (the alias in
//! `.cargo/config.toml`) or as the built binary.
//!
//! - `xtask validate [--quick] [--only NAME,NAME...]`: the model's validation suite (the
//!   scenario table, the runs, the verdicts and totals, `docs/validation.md`).
//!   `scripts/validate.sh` installs what it needs, builds the release binaries and runs it.
//! - `xtask faults [--quick]`: the fault suite on the testbed (`scripts/faults.sh`).

use std::process::ExitCode;

mod faults;
mod validate;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("validate") => validate::main(&args.collect::<Vec<_>>()),
        Some("faults") => faults::main(&args.collect::<Vec<_>>()),
        _ => {
            eprintln!("usage: xtask validate [--quick] [--only NAME,NAME...] | faults [--quick]");
            ExitCode::from(2)
        }
    }
}
