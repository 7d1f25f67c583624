//! CPU time, as the kernel counts it: of this process (every thread, and the kernel's work on
//! its behalf in system calls) and of the calling thread.

/// Seconds of CPU time of the clock `clock`.
fn cpu_seconds(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given; both clocks exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// This process's CPU time, seconds: every thread's.
pub fn process_cpu_s() -> f64 {
    cpu_seconds(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The calling thread's CPU time, seconds.
pub fn thread_cpu_s() -> f64 {
    cpu_seconds(libc::CLOCK_THREAD_CPUTIME_ID)
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
}
