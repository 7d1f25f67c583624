//! `xtask`: the project's tasks written in Rust, run as `cargo xtask ...` (the alias in
//! `.cargo/config.toml`) or as the built binary.
//!
//! - `xtask validate [--quick] [--only NAME,NAME...]`: the model's validation suite (the
//!   scenario table, the runs, the verdicts and totals, `docs/validation.md`).
//!   `scripts/validate.sh` installs what it needs, builds the release binaries and runs it.

use std::process::ExitCode;

mod validate;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("validate") => validate::main(&args.collect::<Vec<_>>()),
        _ => {
            eprintln!("usage: xtask validate [--quick] [--only NAME,NAME...]");
            ExitCode::from(2)
        }
    }
}
