//! CPU time, as the kernel counts it: of this process (every thread, and the kernel's work on
//! its behalf in system calls) and of the calling thread.

/// Seconds of CPU time of the clock `clock`; `None` when it cannot be read (a thread's that
/// has ended).
fn cpu_seconds(clock: libc::clockid_t) -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    let read = unsafe { libc::clock_gettime(clock, &mut ts) } == 0;
    read.then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

/// This process's CPU time, seconds: every thread's.
pub fn process_cpu_s() -> f64 {
    cpu_seconds(libc::CLOCK_PROCESS_CPUTIME_ID).unwrap_or(0.0)
}

/// The calling thread's CPU time, seconds.
pub fn thread_cpu_s() -> f64 {
    cpu_seconds(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0.0)
}

/// The CPU clock of a thread of this process, readable from any of its threads.
#[derive(Debug)]
pub struct ThreadClock(libc::clockid_t);

impl ThreadClock {
    /// The clock of thread `thread`, `None` when the system does not give it.
    pub fn of(thread: libc::pthread_t) -> Option<Self> {
        let mut clock: libc::clockid_t = 0;
        // SAFETY: `thread` is a thread of this process; the call writes the clock id given.
        (unsafe { libc::pthread_getcpuclockid(thread, &mut clock) } == 0)
            .then_some(ThreadClock(clock))
    }

    /// Its CPU time, seconds; `None` once the thread has ended.
    pub fn seconds(&self) -> Option<f64> {
        cpu_seconds(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_counts_in_its_own_and_its_process_clock() {
        let (process, thread) = (process_cpu_s(), thread_cpu_s());
        let mut x = 0u64;
        while thread_cpu_s() - thread < 0.02 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let spent = thread_cpu_s() - thread;
        assert!(spent >= 0.02, "{spent}");
        assert!(process_cpu_s() - process >= spent * 0.99);
    }

    #[test]
    fn another_threads_clock_counts_its_cpu_time() {
        use std::os::unix::thread::JoinHandleExt;
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let busy = std::thread::spawn(move || {
            let start = thread_cpu_s();
            let mut x = 0u64;
            while thread_cpu_s() - start < 0.02 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            wait.recv().unwrap();
        });
        let clock = ThreadClock::of(busy.as_pthread_t()).unwrap();
        while clock.seconds().unwrap() < 0.02 {
            std::thread::yield_now();
        }
        go.send(()).unwrap();
        busy.join().unwrap();
    }
}
