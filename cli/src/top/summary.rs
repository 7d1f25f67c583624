//! The run's summary, printed when the dashboard closes on the run's end: how it ended, its
//! makespan against the model's, each cluster's tasks, share and state, the warnings left,
//! and one `top ...` line for scripts.

use std::fmt::Write as _;

use crate::live_state::LiveState;

/// The summary of a run that ended (or of what is known so far, for one that did not).
pub(crate) fn summary(state: &LiveState) -> String {
    let mut out = String::new();
    let outcome = state
        .end
        .as_ref()
        .map_or("not over", |e| e.outcome.as_str());
    let makespan = state.end.as_ref().and_then(|e| e.makespan_s);
    let _ = write!(out, "== hmw top: run {} {outcome}", state.run);
    if let Some(m) = makespan {
        let _ = write!(out, ": makespan {m:.3} s");
        if let Some(p) = &state.prediction {
            let _ = write!(
                out,
                " (model {:.3} to {:.3} s, {:+.1}% from the worst case)",
                p.makespan_best_s,
                p.makespan_worst_s,
                100.0 * (m - p.makespan_worst_s) / p.makespan_worst_s
            );
        }
    }
    let tasks = state.progress.tasks_done;
    let _ = writeln!(out, "; {tasks} tasks");
    let _ = writeln!(
        out,
        "{:<12} {:<10} {:>7} {:>8} {:>7} {:>10}",
        "cluster", "state", "workers", "tasks", "share", "predicted"
    );
    for c in &state.clusters {
        let share = if tasks > 0 {
            format!("{:.1}%", 100.0 * c.tasks_done as f64 / tasks as f64)
        } else {
            "-".to_owned()
        };
        let predicted = match (c.predicted_tasks_best, c.predicted_tasks_worst) {
            (Some(b), Some(w)) if b == w => b.to_string(),
            (Some(b), Some(w)) => format!("{}-{}", b.min(w), b.max(w)),
            _ => "-".to_owned(),
        };
        let _ = writeln!(
            out,
            "{:<12} {:<10} {:>7} {:>8} {:>7} {:>10}",
            c.name,
            c.phase.word(),
            c.workers,
            c.tasks_done,
            share,
            predicted
        );
    }
    for w in &state.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let _ = write!(
        out,
        "top run={} outcome={} tasks={tasks}",
        state.run,
        outcome.replace(' ', "_")
    );
    if let Some(m) = makespan {
        let _ = write!(out, " makespan_s={m:.3}");
    }
    for c in &state.clusters {
        let _ = write!(out, " {}={}", c.name, c.tasks_done);
    }
    out.push('\n');
    out
}
