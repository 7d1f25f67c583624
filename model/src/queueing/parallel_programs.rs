//! The queueing-network source's models of a parallel program (`docs/model.md` (120)-(124)):
//! `p` processors computing, communicating over a shared network and doing I/O on `d` nodes,
//! in times normalised to the sequential program's (`sigma_p` computing, `sigma_d = 1 -
//! sigma_p` I/O). They are the source's worked examples of MVA, and the tests check the
//! solvers against them.

use super::closed_form::delay_and_queues_response;
use super::exact::exact;
use super::network::{CentreKind, ClosedNetwork, CustomerClass, OwnQueue};
use super::single_class::single_class;

/// A parallel program and its machine, in the source's normalised parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParallelProgram {
    /// `d`: I/O nodes.
    pub io_nodes: u32,
    /// `sigma_p`: the share of the sequential time spent computing.
    pub computation: f64,
    /// `sigma_r`: the transfer time of the program's data over the network.
    pub transfer: f64,
    /// `sigma_r0`: the start-up time of a transfer.
    pub startup: f64,
    /// `sigma_n`: the I/O transfer time.
    pub io_transfer: f64,
    /// `r`: the dimension of the data.
    pub dimension: f64,
    /// `c`: the synchronisation level (processors per customer).
    pub synchronisation: u32,
    /// `w`: the contention on the network, in `[0, 1]`: the share of a transfer that queues.
    pub contention: f64,
}

/// The speedups of the source's models at `p` processors (`p` a multiple of `c d`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speedups {
    /// (121) BUS-SIO: synchronous I/O over a shared bus.
    pub bus_sio: f64,
    /// (122) BUS-AIO: asynchronous I/O over a shared bus.
    pub bus_aio: f64,
    /// (123) CLU-AIO: asynchronous I/O, one I/O node per cluster of processors.
    pub clu_aio: f64,
    /// (124) the optimistic bound without communication, asynchronous I/O.
    pub aio_bound: f64,
    /// (124) the same, synchronous I/O.
    pub sio_bound: f64,
}

/// `h(c) = sum_{i=1..c} 1/i`.
fn harmonic(c: u32) -> f64 {
    (1..=c).map(|i| 1.0 / f64::from(i)).sum()
}

impl ParallelProgram {
    /// The parameters of the source's Fig. 5.8.
    pub fn figure_5_8() -> Self {
        ParallelProgram {
            io_nodes: 4,
            computation: 0.2,
            transfer: 0.002,
            startup: 0.001,
            io_transfer: 0.02,
            dimension: 1.0,
            synchronisation: 1,
            contention: 0.4,
        }
    }

    /// The source's case study 5.6.2 (its Fig. 5.9).
    pub fn case_study() -> Self {
        ParallelProgram {
            io_nodes: 4,
            computation: 0.8,
            transfer: 0.005,
            startup: 0.001,
            io_transfer: 7e-4,
            dimension: 1.0,
            synchronisation: 1,
            contention: 0.2,
        }
    }

    /// `sigma_d = 1 - sigma_p`.
    fn io(&self) -> f64 {
        1.0 - self.computation
    }

    /// (120) `g(p) = 1 / p^((r-1)/r)`: how a transfer shrinks with `p`.
    fn shrink(&self, p: u32) -> f64 {
        1.0 / f64::from(p).powf((self.dimension - 1.0) / self.dimension)
    }

    /// (120) `D(p) = w sigma_r g(p)`: the network's queue.
    pub fn queue_demand(&self, p: u32) -> f64 {
        self.contention * self.transfer * self.shrink(p)
    }

    /// (120) `Z(p) = h(c) sigma_p / p + sigma_r0 + (1 - w) sigma_r g(p)`: the delay.
    pub fn delay(&self, p: u32) -> f64 {
        harmonic(self.synchronisation) * self.computation / f64::from(p)
            + self.startup
            + (1.0 - self.contention) * self.transfer * self.shrink(p)
    }

    /// `E(p, d) = c (sigma_n + sigma_d / (d p))`: BUS-AIO's I/O queue.
    fn bus_io_demand(&self, p: u32) -> f64 {
        f64::from(self.synchronisation)
            * (self.io_transfer + self.io() / (f64::from(self.io_nodes) * f64::from(p)))
    }

    /// (121) BUS-SIO: `tau_comp = sum_{i=1..p/c} (1/i) R(i, Z(p), D(p))` (119), `tau_IO =
    /// sigma_n + sigma_d / d`, `s = 1 / (tau_comp + tau_IO)`.
    pub fn bus_sio(&self, p: u32) -> f64 {
        let customers = p / self.synchronisation;
        let (z, x) = (self.delay(p), self.queue_demand(p));
        let levels = single_class(
            &[CentreKind::Delay, CentreKind::Queue],
            &[z, x],
            0.0,
            customers,
        );
        let comp: f64 = levels
            .iter()
            .map(|l| l.response_total_s() / f64::from(l.population))
            .sum();
        1.0 / (comp + self.io_transfer + self.io() / f64::from(self.io_nodes))
    }

    /// BUS-AIO's `(tau_comp, tau_IO)`: single-class MVA (110)-(112) of `p/c` customers over
    /// the delay `Z(p)`, the network's queue `D(p)` and the I/O queue `E(p, d)`; `tau_comp`
    /// is the response at the delay and the first queue, `tau_IO` at the second.
    pub fn bus_aio_times(&self, p: u32) -> (f64, f64) {
        let demands = [self.delay(p), self.queue_demand(p), self.bus_io_demand(p)];
        let centres = [CentreKind::Delay, CentreKind::Queue, CentreKind::Queue];
        let levels = single_class(&centres, &demands, 0.0, p / self.synchronisation);
        let last = levels.last().map_or(vec![0.0; 3], |l| l.response_s.clone());
        (last[0] + last[1], last[2])
    }

    /// BUS-AIO's times from the product form's closed sums, the source's (5.12)/(5.13).
    pub fn bus_aio_closed_times(&self, p: u32) -> (f64, f64) {
        let z = self.delay(p);
        let r = delay_and_queues_response(
            z,
            &[self.queue_demand(p), self.bus_io_demand(p)],
            p / self.synchronisation,
        );
        (z + r[0], r[1])
    }

    /// (122) BUS-AIO: `s = 1 / (tau_comp + tau_IO)`.
    pub fn bus_aio(&self, p: u32) -> f64 {
        let (comp, io) = self.bus_aio_times(p);
        1.0 / (comp + io)
    }

    /// (123) CLU-AIO: `d` classes (one per I/O node) of `p/(c d)` customers each, the delay
    /// `Z(p)`, the shared network's queue `D(p)`, and `c sigma_d / p` at the class's own I/O
    /// node; exact multi-class MVA (113)-(116), `s = 1 / ` a customer's cycle.
    pub fn clu_aio(&self, p: u32) -> f64 {
        let io_nodes = self.io_nodes;
        let network = ClosedNetwork {
            centres: vec![CentreKind::Delay, CentreKind::Queue],
            classes: vec![CustomerClass {
                copies: io_nodes,
                own_queue: Some(OwnQueue {
                    demand_s: f64::from(self.synchronisation) * self.io() / f64::from(p),
                    scv: 1.0,
                }),
                ..CustomerClass::new(
                    p / (self.synchronisation * io_nodes),
                    0.0,
                    vec![self.delay(p), self.queue_demand(p)],
                )
            }],
        };
        1.0 / exact(&network).cycle_time_s(&network, 0)
    }

    /// The speedups of every model at `p` processors.
    pub fn speedups(&self, p: u32) -> Speedups {
        let (pf, d) = (f64::from(p), f64::from(self.io_nodes));
        Speedups {
            bus_sio: self.bus_sio(p),
            bus_aio: self.bus_aio(p),
            clu_aio: self.clu_aio(p),
            // (124): the source's (5.2) prints sigma_d / d, which does not match its (5.1)
            aio_bound: 1.0 / (self.computation / pf + self.io() / (d * pf)),
            sio_bound: 1.0 / (harmonic(p) * self.computation / pf + self.io() / d),
        }
    }
}

/// The first run of processor counts at which CLU-AIO is ahead of BUS-AIO by more than a
/// relative 1e-6 (where both are bound by the shared network's queue they are equal but for
/// rounding), as its first and last `p`, among `speedups` in order of `p`; `None` when it
/// never is.
pub fn clu_ahead(speedups: &[(u32, Speedups)]) -> Option<(u32, u32)> {
    let mut run: Option<(u32, u32)> = None;
    for &(p, s) in speedups {
        match (s.clu_aio > s.bus_aio * (1.0 + 1e-6), run) {
            (true, None) => run = Some((p, p)),
            (true, Some((first, _))) => run = Some((first, p)),
            (false, Some(_)) => break,
            (false, None) => {}
        }
    }
    run
}

#[cfg(test)]
mod tests {
    use super::super::closed_form::one_delay_one_queue_response;
    use super::*;

    /// `R(i, Z(p), D(p))` of (119): the cycle of `i` customers in a BUS model.
    fn bus_cycle(program: &ParallelProgram, i: u32, p: u32) -> f64 {
        one_delay_one_queue_response(i, program.delay(p), program.queue_demand(p))
    }

    #[test]
    fn bus_aio_closed_forms_are_single_class_mva() {
        for program in [ParallelProgram::figure_5_8(), ParallelProgram::case_study()] {
            for p in 1..=64 {
                let (comp, io) = program.bus_aio_times(p);
                let (closed_comp, closed_io) = program.bus_aio_closed_times(p);
                assert!((comp - closed_comp).abs() <= 1e-12 * comp, "p {p}");
                assert!((io - closed_io).abs() <= 1e-12 * io, "p {p}");
            }
        }
    }

    #[test]
    fn bus_sio_sums_the_closed_form_over_the_synchronisation_levels() {
        let program = ParallelProgram::figure_5_8();
        for p in [1, 8, 33] {
            let comp: f64 = (1..=p)
                .map(|i| bus_cycle(&program, i, p) / f64::from(i))
                .sum();
            let expected = 1.0 / (comp + 0.02 + 0.8 / 4.0);
            assert!((program.bus_sio(p) - expected).abs() < 1e-12 * expected);
        }
    }

    #[test]
    fn models_stay_below_their_bounds() {
        for program in [ParallelProgram::figure_5_8(), ParallelProgram::case_study()] {
            for p in (4..=64).step_by(4) {
                let s = program.speedups(p);
                assert!(
                    s.bus_aio <= s.aio_bound && s.clu_aio <= s.aio_bound,
                    "{p} {s:?}"
                );
                assert!(s.bus_sio <= s.sio_bound, "{p} {s:?}");
            }
        }
    }

    /// The case study 5.6.2: the source finds CLU-AIO ahead of BUS-AIO for 24 <= p <= 52;
    /// exact MVA reproduces the lower end, and CLU-AIO is still ahead well beyond 52 (up to
    /// 192, where both reach the shared network's bound, `docs/model.md` section 15;
    /// `examples/queueing_case_study.rs` goes that far, the test to 96).
    #[test]
    fn case_study_clu_ahead_of_bus_from_24() {
        let program = ParallelProgram::case_study();
        let speedups: Vec<_> = (4..=96)
            .step_by(4)
            .map(|p| (p, program.speedups(p)))
            .collect();
        let (first, last) = clu_ahead(&speedups).unwrap();
        assert_eq!((first, last), (24, 96));
        assert!(program.bus_aio(20) > program.clu_aio(20));
    }
}
