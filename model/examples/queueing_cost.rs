//! The cost of one solve of a cluster's closed network (`docs/model.md` section 15), for
//! counting instructions under callgrind (deterministic; timings on a shared machine are
//! not): `valgrind --tool=callgrind model/target/.../queueing_cost WORKERS KINDS BUFFERS`.
//!
//! The network: a master and a LAN (queues) shared by `WORKERS` workers of `KINDS` distinct
//! speeds (as equal a number of each), each holding `BUFFERS` tasks in a queue of its own,
//! near the knee. It prints the solver [`hmw_model::queueing::solve`] chose and the
//! throughput.

use hmw_model::queueing::{exact_steps, solve, CentreKind, ClosedNetwork, CustomerClass, OwnQueue};

fn main() {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("WORKERS KINDS BUFFERS, whole numbers"))
        .collect();
    let [workers, kinds, buffers] = args[..] else {
        eprintln!("usage: queueing_cost WORKERS KINDS BUFFERS");
        std::process::exit(2);
    };
    let kinds = kinds.clamp(1, workers.max(1));
    let lan = 1.0 / f64::from(workers);
    let classes = (0..kinds)
        .map(|k| CustomerClass {
            copies: workers / kinds + u32::from(k < workers % kinds),
            own_queue: Some(OwnQueue {
                demand_s: 1.0 + f64::from(k) / f64::from(kinds),
                scv: 1.0,
            }),
            ..CustomerClass::new(buffers, 0.0, vec![0.2 * lan, lan])
        })
        .collect();
    let network = ClosedNetwork {
        centres: vec![CentreKind::Queue, CentreKind::Queue],
        classes,
    };
    let solution = solve(&network).expect("a valid network");
    println!(
        "workers={workers} kinds={kinds} buffers={buffers} steps={:?} method={:?} \
         throughput={:.6}",
        exact_steps(&network),
        solution.method,
        solution.total_throughput(&network)
    );
}
