//! The WANs measured while the workers' run loads the cores they share, as a run loads them.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use anyhow::Result;
use indicatif::ProgressBar;

use crate::processes::interrupted;

/// `f`'s result and how long it took.
pub(super) fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    (f(), start.elapsed())
}

/// Run `first` (a workers' run) and, meanwhile, `measure` (the WANs), then `again` (the same
/// run, its files kept apart) until `measure` is done, so that what `measure` measures
/// carries the load a run puts on the cores it shares (this machine's; on real hosts, a CM's
/// host's): `first`'s result, and the measurement's. A load run that fails ends the loading.
pub(super) fn under_load<L, M: Send>(
    first: impl FnOnce() -> Result<L>,
    again: impl Fn() -> Result<L>,
    measure: Option<impl FnOnce() -> M + Send>,
) -> (Result<L>, Option<M>) {
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let measuring = measure.map(|measure| {
            let done = &done;
            scope.spawn(move || {
                let measured = measure();
                done.store(true, Ordering::Release);
                measured
            })
        });
        let first = first();
        while first.is_ok() && measuring.is_some() && !done.load(Ordering::Acquire) {
            if interrupted() || again().is_err() {
                break;
            }
        }
        let measured = measuring.map(|m| m.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        (first, measured)
    })
}

/// The WANs as measured under the workers' load, or, without workers to load them (`None`),
/// measured now, alone.
pub(super) fn measured_or_alone<M>(
    under_load: Option<(M, Duration)>,
    bar: &ProgressBar,
    measure: impl FnOnce() -> (M, Duration),
) -> (M, Duration) {
    under_load.unwrap_or_else(|| {
        bar.set_message("WANs, one way then the other".to_owned());
        measure()
    })
}
