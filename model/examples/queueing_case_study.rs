//! The queueing-network source's case study 5.6.2 (`docs/model.md` section 15): the speedups
//! of its parallel-program models (BUS-SIO, BUS-AIO, CLU-AIO and the bounds) at `p` = 4 to
//! `--max` processors (multiples of 4, the case study's `d`), exact MVA, and the range of `p`
//! where CLU-AIO is ahead of BUS-AIO (the source reports 24 <= p <= 52).
//!
//! Usage: `queueing_case_study [--max P]` (default 256; the exact solve of CLU-AIO at
//! hundreds of processors takes seconds in a release build). The last line is
//! `clu_ahead=P1-P2` (`none` when it never is; P2 is `--max` when CLU-AIO is still ahead
//! there).

use hmw_model::queueing::{clu_ahead, ParallelProgram};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut max = 256;
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().map(|v| v.parse::<u32>())) {
            ("--max", Some(Ok(p))) if p >= 4 => max = p,
            _ => {
                eprintln!("usage: queueing_case_study [--max P]  (P >= 4)");
                std::process::exit(2);
            }
        }
    }
    let program = ParallelProgram::case_study();
    println!("   p   BUS-SIO   BUS-AIO   CLU-AIO  AIO bound  SIO bound");
    let speedups: Vec<_> = (4..=max)
        .step_by(4)
        .map(|p| (p, program.speedups(p)))
        .collect();
    for (p, s) in &speedups {
        println!(
            "{p:4} {:9.4} {:9.4} {:9.4} {:10.4} {:10.4}",
            s.bus_sio, s.bus_aio, s.clu_aio, s.aio_bound, s.sio_bound
        );
    }
    match clu_ahead(&speedups) {
        Some((first, last)) => println!("clu_ahead={first}-{last}"),
        None => println!("clu_ahead=none"),
    }
}
