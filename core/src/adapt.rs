//! Re-planning between clusters during the run (`[run] adapt`): a decision core with no I/O
//! and no clock, like the roles' cores. A master feeds it a [`Sample`] of what it measured at
//! each progress line; it answers with the [`Decision`]s to apply, which the master applies
//! through small methods of its core ([`crate::roles::MasterCore::adapt`]).
//!
//! It re-plans at most once per `adapt_interval_s`, and at once on an event: a cluster lost or
//! back, or a cluster's smoothed rate moving by more than `adapt_rate_change` of the rate it
//! had at the last plan. A plan re-runs the multi-cluster balance of the model (equations
//! (61)(94), [`balance_workload`]) on the remaining tasks with each cluster's smoothed steady
//! rate, past its startup (`T_up = 0`) and with one inter-task's time as its `T_end`, and
//! decides for each external cluster:
//!
//! - its *credit*, the tasks it may hold at once: what it computes in `adapt_hold_s` at its
//!   rate, never more than its balanced share of what is left, never less than what keeps
//!   its pipeline full (an inter-task and a task per worker); changed only when it moves by
//!   more than a fifth (hysteresis), so a cluster does not hoard tasks the others would finish
//!   first;
//! - its `nt`, when its link holds it down (the live estimate's bottleneck is `wan_in`): the
//!   smallest multiple of the inter-task rate its link carries now that reaches what its
//!   workers can compute (section 3.3's advice), at most doubled per plan, eight times the
//!   plan's and half its credit; back to the plan's once the link no longer holds it down;
//! - its `nr`, when its results' way back holds it down (the bottleneck is `wan_out`): the
//!   smallest multiple of the inter-result rate the link carries that reaches what its workers
//!   can compute, sent down to its sub-master (`ToWorker::Join`, adopted for the results it
//!   joins next); only ever raised, when the advice is at least twice the `nr` measured
//!   (tasks per result message), at most doubled per plan, at most 64;
//!
//! `nt` and `nr` change only once a cluster's rate has been measured three times, so a
//! cluster still starting is not read as held down.
//! - a *drop*: a cluster the balance gives no work (its last inter-task alone would end after
//!   the others finish everything), or whose rate fell below `adapt_min_efficiency` of what
//!   its workers can compute, while others compute: its tasks go back;
//! - a *re-admission*: a dropped cluster is tried again after a back-off (one interval, doubled
//!   each time a trial fails), with the credit of a full pipeline, and kept if over the
//!   trial's interval it computes at least the threshold plus a fifth (hysteresis).

use std::{collections::BTreeMap, fmt};

use hmw_model::methodology::{
    advice::{results_per_inter_result_needed, tasks_per_inter_task_needed},
    balance::{balance_workload, ClusterTiming},
};

/// Weight of the newest rate in the smoothed rate (an exponential moving average).
const SMOOTHING: f64 = 0.3;
/// Relative move below which a new credit is not worth a decision.
const CREDIT_HYSTERESIS: f64 = 0.2;
/// A dropped cluster is re-admitted for good at this many times the efficiency threshold.
const READMIT_MARGIN: f64 = 1.2;
/// `nt` never goes beyond this many times the plan's.
const NT_CEILING: usize = 8;
/// `nr` never goes beyond this.
const NR_CEILING: usize = 64;
/// Rates measured before `nt` or `nr` are changed: not on a cluster still starting.
const STEADY_SAMPLES: u32 = 3;

/// The settings of re-planning, from the `[run]` table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptSettings {
    /// At most one plan per this many seconds, events aside.
    pub interval_s: f64,
    /// A relative move of a cluster's smoothed rate that is an event.
    pub rate_change: f64,
    /// A cluster computing less than this share of what its workers can is dropped.
    pub min_efficiency: f64,
    /// A cluster may hold what it computes in this many seconds.
    pub hold_s: f64,
}

/// Where a fed cluster stands, as the master's core sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// It takes tasks.
    Active,
    /// Its link was given up (`Lost`): the core took its tasks back.
    Lost,
    /// Dropped by a decision: it takes no new task.
    Dropped,
}

/// What the master measured of one external cluster over the last interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSample {
    /// The rank of its communication manager at the master.
    pub rank: usize,
    /// Its name.
    pub name: String,
    /// Where it stands.
    pub presence: Presence,
    /// Useful tasks it delivered since the start.
    pub tasks_done: u64,
    /// Useful tasks per second over the interval.
    pub tasks_per_s: f64,
    /// Tasks per second its workers could compute (workers over their mean busy time per
    /// task), when measured.
    pub capacity_tasks_per_s: Option<f64>,
    /// Its link holds it down: tasks wait on the master's side of the link.
    pub link_bound: bool,
    /// Neither its workers nor the tasks' way hold it down: its results' way back does.
    pub results_bound: bool,
    /// Tasks per result message over the interval (its `nr` as joined), when any came.
    pub nr: Option<f64>,
    /// Tasks it holds now.
    pub held: u64,
    /// Tasks per inter-task now.
    pub nt: usize,
    /// Its workers, when known.
    pub workers: Option<usize>,
    /// The round trip of its link, seconds (0 when unknown).
    pub rtt_s: f64,
}

/// What the master measured at one progress line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Seconds since the start of the run.
    pub now_s: f64,
    /// Tasks not gathered yet, when the total is known.
    pub remaining_tasks: Option<u64>,
    /// Useful tasks per second of the master's own workers over the interval.
    pub local_tasks_per_s: f64,
    /// Each external cluster.
    pub clusters: Vec<ClusterSample>,
}

/// What to do to one cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// It may hold at most this many tasks.
    Credit(u64),
    /// Its next inter-tasks carry this many tasks.
    Nt(usize),
    /// Its sub-master joins up to this many results per inter-cluster result from now on.
    Nr(usize),
    /// It takes no new task; its tasks go back.
    Drop,
    /// It takes tasks again.
    Readmit,
}

/// One decision, with what led to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The cluster's CM rank at the master.
    pub rank: usize,
    /// Its name.
    pub cluster: String,
    /// What to do.
    pub action: Action,
    /// Why, in a few words with the figures.
    pub reason: String,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Credit(tasks) => write!(f, "credit {tasks}"),
            Action::Nt(nt) => write!(f, "nt {nt}"),
            Action::Nr(nr) => write!(f, "nr {nr}"),
            Action::Drop => f.write_str("drop"),
            Action::Readmit => f.write_str("readmit"),
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ({})", self.cluster, self.action, self.reason)
    }
}

/// Where a cluster stands in the adapter's plan.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Standing {
    Active,
    Lost,
    Dropped {
        since_s: f64,
    },
    /// Re-admitted on trial since then.
    Trial {
        since_s: f64,
    },
}

/// What the adapter keeps of one cluster.
#[derive(Debug, Clone)]
struct Track {
    standing: Standing,
    /// The smoothed rate, tasks per second, once it delivered something, and how many rates
    /// it smooths.
    rate: Option<f64>,
    samples: u32,
    /// The smoothed rate at the last plan.
    reference: Option<f64>,
    /// The credit and `nt` last decided.
    credit: Option<u64>,
    nt: usize,
    /// The `nr` last decided (none: the plan's).
    nr: Option<usize>,
    /// The plan's `nt`.
    base_nt: usize,
    /// Seconds a dropped cluster waits before its next trial.
    back_off_s: f64,
}

/// The re-planning core: [`decide`](Self::decide) at each progress line.
#[derive(Debug, Clone)]
pub struct Adapter {
    settings: AdaptSettings,
    tracks: BTreeMap<usize, Track>,
    local_rate: Option<f64>,
    last_plan_s: Option<f64>,
}

fn smooth(previous: Option<f64>, sample: f64) -> f64 {
    previous.map_or(sample, |p| p + SMOOTHING * (sample - p))
}

impl Adapter {
    /// An adapter that has seen nothing yet.
    pub fn new(settings: AdaptSettings) -> Self {
        Adapter {
            settings,
            tracks: BTreeMap::new(),
            local_rate: None,
            last_plan_s: None,
        }
    }

    /// Take in `sample`; the decisions to apply, empty unless a plan is due (an event, or an
    /// interval since the last plan).
    pub fn decide(&mut self, sample: &Sample) -> Vec<Decision> {
        let mut events = Vec::new();
        if sample.local_tasks_per_s > 0.0 {
            self.local_rate = Some(smooth(self.local_rate, sample.local_tasks_per_s));
        }
        for c in &sample.clusters {
            let track = self.tracks.entry(c.rank).or_insert_with(|| Track {
                standing: Standing::Active,
                rate: None,
                samples: 0,
                reference: None,
                credit: None,
                nt: c.nt.max(1),
                nr: None,
                base_nt: c.nt.max(1),
                back_off_s: self.settings.interval_s,
            });
            if let Some(event) = observe(track, c, sample.now_s, self.settings.rate_change) {
                events.push(format!("{} {event}", c.name));
            }
        }
        let due = self
            .last_plan_s
            .is_none_or(|last| sample.now_s - last >= self.settings.interval_s);
        let measured = self.tracks.values().any(|t| t.rate.is_some());
        if !measured || (events.is_empty() && !due) {
            return Vec::new();
        }
        if !events.is_empty() {
            tracing::info!(events = ?events, "adapt: re-planning on events");
        }
        self.last_plan_s = Some(sample.now_s);
        self.plan(sample)
    }

    /// The decisions of a plan over `sample`.
    fn plan(&mut self, sample: &Sample) -> Vec<Decision> {
        let settings = self.settings;
        let now = sample.now_s;
        // The balance over the local workers and every cluster taking tasks with a rate.
        let mut timings = Vec::new();
        let mut at = BTreeMap::new();
        if let Some(rate) = self.local_rate {
            timings.push(ClusterTiming {
                perf_ste: rate,
                t_up: 0.0,
                t_end: 0.0,
            });
        }
        for c in &sample.clusters {
            let track = &self.tracks[&c.rank];
            if let (Standing::Active | Standing::Trial { .. }, Some(rate)) =
                (track.standing, track.rate)
            {
                at.insert(c.rank, timings.len());
                timings.push(ClusterTiming {
                    perf_ste: rate,
                    t_up: 0.0,
                    t_end: track.nt as f64 / rate,
                });
            }
        }
        let remaining = sample.remaining_tasks.map(|r| r as f64);
        let balance = remaining.map(|r| balance_workload(r, &timings));
        let contributors = timings.iter().filter(|t| t.is_usable()).count();

        let mut decisions = Vec::new();
        for c in &sample.clusters {
            let track = self.tracks.get_mut(&c.rank).expect("observed above");
            let mut decide = |action: Action, reason: String| {
                decisions.push(Decision {
                    rank: c.rank,
                    cluster: c.name.clone(),
                    action,
                    reason,
                })
            };
            track.reference = track.rate;
            match track.standing {
                Standing::Lost => continue,
                Standing::Dropped { since_s } => {
                    if now - since_s >= track.back_off_s {
                        let trial = pipeline_floor(track.nt, c);
                        track.standing = Standing::Trial { since_s: now };
                        track.credit = Some(trial);
                        track.rate = None;
                        decide(Action::Credit(trial), "a full pipeline on trial".into());
                        decide(
                            Action::Readmit,
                            format!("trial after {:.0} s", now - since_s),
                        );
                    }
                    continue;
                }
                Standing::Active | Standing::Trial { .. } => {}
            }
            let on_trial = matches!(track.standing, Standing::Trial { .. });
            let trial_over = matches!(track.standing,
                Standing::Trial { since_s } if now - since_s >= settings.interval_s);
            if on_trial && !trial_over {
                continue;
            }
            let others = contributors > usize::from(at.contains_key(&c.rank));
            let share = at
                .get(&c.rank)
                .zip(balance.as_ref())
                .map(|(&i, b)| b.workloads[i]);
            let threshold = settings.min_efficiency * if on_trial { READMIT_MARGIN } else { 1.0 };
            let efficiency = track
                .rate
                .zip(c.capacity_tasks_per_s)
                .map(|(rate, capacity)| rate / capacity);
            let drop_reason = match track.rate {
                None if on_trial => Some("nothing delivered on trial".to_owned()),
                None => continue,
                Some(rate) if share.is_some_and(|w| w <= 0.0) => {
                    Some(format!("{rate:.2} tasks/s: the balance gives it nothing"))
                }
                Some(rate) => efficiency
                    .filter(|&e| e < threshold)
                    .map(|e| format!("{rate:.2} tasks/s, efficiency {e:.2} < {threshold:.2}")),
            };
            if let (true, Some(reason)) = (others, drop_reason) {
                track.back_off_s = if on_trial {
                    track.back_off_s * 2.0
                } else {
                    settings.interval_s
                };
                track.standing = Standing::Dropped { since_s: now };
                track.credit = None;
                decide(Action::Drop, reason);
                continue;
            }
            let Some(rate) = track.rate else { continue };
            track.standing = Standing::Active;
            // nt: lift a cluster its link holds down, as the advice says, at most doubling it
            // per plan; back when it no longer does. Not while it starts.
            let steady = track.samples >= STEADY_SAMPLES;
            let nt = match (c.link_bound, c.capacity_tasks_per_s) {
                (true, Some(capacity)) if rate > 0.0 && steady => {
                    let carried = rate / track.nt as f64;
                    tasks_per_inter_task_needed(capacity, 1.0, carried, 1.0)
                        .map_or(usize::MAX, |n| n as usize)
                        .min(2 * track.nt)
                        .clamp(track.nt, track.base_nt * NT_CEILING)
                }
                (true, _) => track.nt,
                _ => track.base_nt,
            };
            // The credit: what it computes in `hold_s`, within its balanced share, enough to
            // keep its pipeline full.
            let floor = pipeline_floor(nt, c);
            let held_for = (rate * settings.hold_s).ceil();
            let credit = share
                .map_or(held_for, |w| held_for.min(w.ceil()))
                .max(floor as f64) as u64;
            let nt = nt
                .min((credit / 2).max(1) as usize)
                .max(track.base_nt.min(nt));
            if nt != track.nt {
                track.nt = nt;
                decide(
                    Action::Nt(nt),
                    if c.link_bound {
                        format!("link-bound at {rate:.2} tasks/s")
                    } else {
                        "link no longer bound".into()
                    },
                );
            }
            // nr: lift a cluster its results' way back holds down, as the advice says; only
            // ever up, when the advice is at least twice the `nr` measured (which counts
            // partial joins), by doubling it at most. Not while it starts.
            if let (true, true, Some(capacity), Some(joined)) =
                (steady, c.results_bound, c.capacity_tasks_per_s, c.nr)
            {
                let carried = rate / joined;
                let needed = results_per_inter_result_needed(capacity, 1.0, carried, 1.0)
                    .map_or(NR_CEILING, |n| n as usize)
                    .min(NR_CEILING);
                let step = needed.min(2 * joined.ceil() as usize).min(NR_CEILING);
                if needed as f64 >= 2.0 * joined && step > track.nr.unwrap_or(0) {
                    track.nr = Some(step);
                    decide(
                        Action::Nr(step),
                        format!("results-bound at {rate:.2} tasks/s, {joined:.1} per result"),
                    );
                }
            }
            let moved = track.credit.is_none_or(|old| {
                (credit as f64 - old as f64).abs() > CREDIT_HYSTERESIS * old as f64
            });
            if moved {
                track.credit = Some(credit);
                decide(
                    Action::Credit(credit),
                    format!(
                        "{rate:.2} tasks/s, share {}",
                        share.map_or("-".into(), |w| format!("{w:.0}"))
                    ),
                );
            }
        }
        for d in &decisions {
            tracing::info!(cluster = %d.cluster, action = %d.action, reason = %d.reason, "adapt");
        }
        decisions
    }
}

/// The tasks that keep cluster `c`'s pipeline full with `nt` tasks per inter-task: an
/// inter-task and a task per worker, and what its workers compute while a request crosses its
/// link and the answer comes back (the request window (98): its capacity times the round
/// trip).
fn pipeline_floor(nt: usize, c: &ClusterSample) -> u64 {
    let round_trip = c
        .capacity_tasks_per_s
        .map_or(0.0, |capacity| (capacity * c.rtt_s).ceil());
    nt as u64 + c.workers.unwrap_or(1) as u64 + round_trip as u64
}

/// Update `track` with `c`; the event it is, if any.
fn observe(track: &mut Track, c: &ClusterSample, now_s: f64, change: f64) -> Option<String> {
    let presence_event = match (track.standing, c.presence) {
        (Standing::Lost, Presence::Lost) => return None,
        (_, Presence::Lost) => {
            track.standing = Standing::Lost;
            track.rate = None;
            track.reference = None;
            return Some("lost".into());
        }
        (Standing::Lost, Presence::Active) => {
            track.standing = Standing::Active;
            track.credit = None;
            Some("back")
        }
        // Back while dropped: it is tried again at the next plan.
        (Standing::Lost, Presence::Dropped) => {
            track.standing = Standing::Dropped {
                since_s: now_s - track.back_off_s,
            };
            Some("back")
        }
        _ => None,
    };
    let measurable = matches!(track.standing, Standing::Active | Standing::Trial { .. })
        && c.tasks_done > 0
        && (c.tasks_per_s > 0.0 || c.held > 0);
    if measurable {
        track.rate = Some(smooth(track.rate, c.tasks_per_s));
        track.samples += 1;
    } else if track.rate.is_none() {
        track.samples = 0;
    }
    if let Some(event) = presence_event {
        return Some(event.into());
    }
    let (rate, reference) = track.rate.zip(track.reference)?;
    ((rate - reference).abs() > change * reference)
        .then(|| format!("rate {reference:.2} -> {rate:.2} tasks/s"))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn settings() -> AdaptSettings {
        AdaptSettings {
            interval_s: 10.0,
            rate_change: 0.3,
            min_efficiency: 0.1,
            hold_s: 10.0,
        }
    }

    fn cluster(rank: usize, rate: f64, capacity: f64) -> ClusterSample {
        ClusterSample {
            rank,
            name: format!("c{rank}"),
            presence: Presence::Active,
            tasks_done: 10,
            tasks_per_s: rate,
            capacity_tasks_per_s: Some(capacity),
            link_bound: false,
            results_bound: false,
            nr: None,
            held: 10,
            nt: 1,
            workers: Some(2),
            rtt_s: 0.0,
        }
    }

    fn sample(now_s: f64, remaining: u64, clusters: Vec<ClusterSample>) -> Sample {
        Sample {
            now_s,
            remaining_tasks: Some(remaining),
            local_tasks_per_s: 10.0,
            clusters,
        }
    }

    fn actions(decisions: &[Decision]) -> Vec<(usize, Action)> {
        decisions.iter().map(|d| (d.rank, d.action)).collect()
    }

    #[test]
    fn the_first_plan_gives_each_cluster_what_it_computes_in_the_hold_time() {
        let mut a = Adapter::new(settings());
        let d = a.decide(&sample(
            1.0,
            10_000,
            vec![cluster(1, 10.0, 10.0), cluster(2, 5.0, 5.0)],
        ));
        assert_eq!(
            actions(&d),
            vec![(1, Action::Credit(100)), (2, Action::Credit(50))]
        );
        // Nothing new within the interval.
        let d = a.decide(&sample(
            2.0,
            9_000,
            vec![cluster(1, 10.0, 10.0), cluster(2, 5.0, 5.0)],
        ));
        assert!(d.is_empty(), "{d:?}");
    }

    #[test]
    fn a_cluster_slowed_to_a_third_gets_less_credit_at_once() {
        let mut a = Adapter::new(settings());
        a.decide(&sample(1.0, 10_000, vec![cluster(1, 9.0, 9.0)]));
        // Smoothed 9 -> 7.2: 20 %, no event yet; then 5.94: more than 30 %, an event within
        // the interval.
        assert!(a
            .decide(&sample(2.0, 9_000, vec![cluster(1, 3.0, 3.0)]))
            .is_empty());
        let d = a.decide(&sample(3.0, 9_000, vec![cluster(1, 3.0, 3.0)]));
        assert_eq!(actions(&d), vec![(1, Action::Credit(60))]);
        // 5.94 -> 5.06: 15 %, no event.
        assert!(a
            .decide(&sample(4.0, 8_000, vec![cluster(1, 3.0, 3.0)]))
            .is_empty());
    }

    #[test]
    fn near_the_end_a_cluster_holds_no_more_than_its_balanced_share() {
        let mut a = Adapter::new(settings());
        let d = a.decide(&sample(1.0, 40, vec![cluster(1, 10.0, 10.0)]));
        // 40 tasks over 10/s locally and 10/s there, its last task a tenth of a second
        // late: about 20 each.
        let Action::Credit(credit) = d[0].action else {
            panic!("{d:?}")
        };
        assert!((6..=20).contains(&credit), "{credit}");
    }

    #[test]
    fn a_long_round_trip_keeps_what_the_workers_compute_meanwhile_in_the_credit() {
        // As above, but 2 s away: its 10 tasks/s need 20 tasks on the way, besides an
        // inter-task and a task per worker, whatever its balanced share.
        let mut a = Adapter::new(settings());
        let far = ClusterSample {
            rtt_s: 2.0,
            ..cluster(1, 10.0, 10.0)
        };
        let d = a.decide(&sample(1.0, 40, vec![far]));
        assert_eq!(actions(&d), vec![(1, Action::Credit(23))]);
    }

    #[test]
    fn a_starved_cluster_is_dropped_then_tried_again_and_readmitted_when_it_recovers() {
        let mut a = Adapter::new(settings());
        a.decide(&sample(1.0, 10_000, vec![cluster(1, 10.0, 10.0)]));
        // Its link brings it 0.2 of 10 tasks/s: below 0.1 of its capacity once smoothed.
        // Smoothed, its rate falls below 1 task/s within a few samples: dropped then.
        let dropped_at = (2..20).find(|&t| {
            let d = a.decide(&sample(t as f64, 9_000, vec![cluster(1, 0.2, 10.0)]));
            d.iter().any(|d| d.action == Action::Drop)
        });
        let t = dropped_at.expect("dropped") as f64;
        assert!(t <= 12.0, "{t}");
        let mut dropped = cluster(1, 0.0, 10.0);
        dropped.presence = Presence::Dropped;
        dropped.held = 0;
        // Tried again one interval later, with a full pipeline.
        assert!(a
            .decide(&sample(t + 1.0, 8_000, vec![dropped.clone()]))
            .is_empty());
        let d = a.decide(&sample(t + 10.0, 8_000, vec![dropped.clone()]));
        assert_eq!(
            actions(&d),
            vec![(1, Action::Credit(3)), (1, Action::Readmit)]
        );
        // On trial it recovered: an ordinary credit after the interval.
        let d = a.decide(&sample(t + 20.0, 7_000, vec![cluster(1, 9.0, 10.0)]));
        assert_eq!(actions(&d), vec![(1, Action::Credit(90))]);
    }

    #[test]
    fn a_lost_cluster_is_an_event_and_is_left_alone_until_back() {
        let mut a = Adapter::new(settings());
        a.decide(&sample(
            1.0,
            10_000,
            vec![cluster(1, 10.0, 10.0), cluster(2, 10.0, 10.0)],
        ));
        let mut lost = cluster(2, 0.0, 10.0);
        lost.presence = Presence::Lost;
        // An event within the interval: cluster 1's share grows, nothing for cluster 2.
        let d = a.decide(&sample(2.0, 9_000, vec![cluster(1, 10.0, 10.0), lost]));
        assert!(d.iter().all(|d| d.rank == 1), "{d:?}");
        let d = a.decide(&sample(
            3.0,
            8_000,
            vec![cluster(1, 10.0, 10.0), cluster(2, 10.0, 10.0)],
        ));
        assert!(d.iter().any(|d| d.rank == 2), "back: a plan at once {d:?}");
    }

    /// Three samples at `t0`, `t0 + 1`, `t0 + 2`, one a second: a cluster now steady.
    fn steady(a: &mut Adapter, t0: f64, c: &ClusterSample) -> Vec<Decision> {
        (0..3)
            .flat_map(|k| a.decide(&sample(t0 + k as f64, 10_000, vec![c.clone()])))
            .collect()
    }

    #[test]
    fn a_link_bound_cluster_gets_a_larger_nt_doubling_once_steady() {
        let mut a = Adapter::new(settings());
        let mut bound = cluster(1, 2.0, 8.0);
        bound.link_bound = true;
        // Starting: a credit only.
        assert_eq!(
            actions(&steady(&mut a, 1.0, &bound)),
            vec![(1, Action::Credit(20))]
        );
        // 2 inter-tasks a second carried, 8 tasks/s wanted: nt 4, reached by doubling.
        let d = a.decide(&sample(11.0, 9_000, vec![bound.clone()]));
        assert_eq!(actions(&d), vec![(1, Action::Nt(2))]);
        bound.nt = 2;
        let d = a.decide(&sample(21.0, 8_000, vec![bound.clone()]));
        assert_eq!(actions(&d), vec![(1, Action::Nt(4))]);
        // The link no longer holds it down: back to the plan's.
        bound.link_bound = false;
        let d = a.decide(&sample(31.0, 7_000, vec![bound]));
        assert_eq!(actions(&d), vec![(1, Action::Nt(1))]);
    }

    #[test]
    fn a_results_bound_cluster_gets_a_larger_nr_and_never_a_smaller_one() {
        let mut a = Adapter::new(settings());
        let mut bound = cluster(1, 2.0, 8.0);
        bound.results_bound = true;
        bound.nr = Some(1.0);
        assert_eq!(
            actions(&steady(&mut a, 1.0, &bound)),
            vec![(1, Action::Credit(20))]
        );
        let d = a.decide(&sample(11.0, 9_000, vec![bound.clone()]));
        assert_eq!(actions(&d), vec![(1, Action::Nr(2))]);
        bound.nr = Some(2.0);
        let d = a.decide(&sample(21.0, 8_000, vec![bound.clone()]));
        assert_eq!(actions(&d), vec![(1, Action::Nr(4))]);
        // Joining 4 at 5 tasks/s smoothed: 7 would do, less than twice the joined: no new
        // nr, and never a smaller one.
        bound.nr = Some(4.0);
        bound.tasks_per_s = 12.0;
        let d = a.decide(&sample(22.0, 7_000, vec![bound]));
        assert!(!d.is_empty(), "a rate event");
        assert!(
            d.iter().all(|d| !matches!(d.action, Action::Nr(_))),
            "{d:?}"
        );
    }

    #[test]
    fn the_only_cluster_is_never_dropped() {
        let mut a = Adapter::new(settings());
        let mut s = sample(1.0, 10_000, vec![cluster(1, 0.01, 10.0)]);
        s.local_tasks_per_s = 0.0;
        for t in 0..10 {
            s.now_s = 1.0 + 20.0 * t as f64;
            let d = a.decide(&s);
            assert!(d.iter().all(|d| d.action != Action::Drop), "{d:?}");
        }
    }

    proptest! {
        /// Whatever the measurements: credits are at least one inter-task, `nt` within its
        /// bounds, a dropped cluster is re-admitted before it is dropped again, and within
        /// one interval without events a cluster's credit changes at most once.
        #[test]
        fn decisions_stay_within_bounds(
            steps in proptest::collection::vec(
                (0.0f64..20.0, 0.1f64..20.0, any::<bool>(), 0u8..10, 0.1f64..6.0), 1..60)
        ) {
            let mut a = Adapter::new(settings());
            let mut now = 0.0;
            let mut dropped = false;
            let mut lost = false;
            for (rate, capacity, link_bound, presence, dt) in steps {
                now += dt;
                let mut c = cluster(1, rate, capacity);
                c.link_bound = link_bound;
                c.nt = 2;
                lost = match presence { 0 => true, 1 => false, _ => lost };
                c.presence = if lost { Presence::Lost } else if dropped { Presence::Dropped } else { Presence::Active };
                let decisions = a.decide(&sample(now, 5_000, vec![c, cluster(2, 5.0, 5.0)]));
                for d in decisions.into_iter().filter(|d| d.rank == 1) {
                    match d.action {
                        Action::Credit(credit) => prop_assert!(credit >= 1),
                        Action::Nt(nt) => prop_assert!((1..=2 * NT_CEILING).contains(&nt)),
                        Action::Nr(nr) => prop_assert!((1..=NR_CEILING).contains(&nr)),
                        Action::Drop => {
                            prop_assert!(!dropped, "dropped twice");
                            dropped = true;
                        }
                        Action::Readmit => {
                            prop_assert!(dropped, "re-admitted without a drop");
                            dropped = false;
                        }
                    }
                }
            }
        }
    }
}
