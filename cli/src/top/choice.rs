//! What the user chose: the screen (every cluster, or one cluster's workers), the order of
//! the rows, the cluster selected; and the keys that change it.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::live_state::{ClusterState, LiveState, WorkerState};

/// Which screen shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Screen {
    /// Every cluster, the chart, the links, the events.
    Overview,
    /// The workers of the cluster named.
    Workers(String),
}

/// How the rows are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sort {
    /// The plan's order (a worker's rank).
    Plan,
    /// Most tasks done first.
    Done,
    /// Fastest first.
    Rate,
    /// Least efficient first: what to look at.
    Efficiency,
}

impl Sort {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Sort::Plan => "plan",
            Sort::Done => "done",
            Sort::Rate => "rate",
            Sort::Efficiency => "efficiency",
        }
    }

    fn next(self) -> Sort {
        match self {
            Sort::Plan => Sort::Done,
            Sort::Done => Sort::Rate,
            Sort::Rate => Sort::Efficiency,
            Sort::Efficiency => Sort::Plan,
        }
    }
}

/// What a key asks of the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asked {
    /// Draw again.
    Redraw,
    /// Nothing changed.
    Nothing,
    /// Leave.
    Quit,
    /// Ctrl-C.
    Interrupt,
}

/// What the user chose.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Choice {
    pub(crate) screen: Screen,
    pub(crate) sort: Sort,
    /// The selected cluster, by name (rows move as they are sorted).
    pub(crate) selected: Option<String>,
    /// The first worker row shown.
    pub(crate) worker_offset: usize,
}

impl Default for Choice {
    fn default() -> Self {
        Choice {
            screen: Screen::Overview,
            sort: Sort::Plan,
            selected: None,
            worker_offset: 0,
        }
    }
}

/// `a` before `b` when `a`'s value is larger; unknown values last.
fn larger_first(a: Option<f64>, b: Option<f64>) -> std::cmp::Ordering {
    b.unwrap_or(f64::NEG_INFINITY)
        .total_cmp(&a.unwrap_or(f64::NEG_INFINITY))
}

impl Choice {
    /// The clusters' indices in the order chosen.
    pub(crate) fn cluster_order(&self, state: &LiveState) -> Vec<usize> {
        let mut order: Vec<usize> = (0..state.clusters.len()).collect();
        let c = |i: usize| &state.clusters[i];
        match self.sort {
            Sort::Plan => {}
            Sort::Done => order.sort_by_key(|&i| std::cmp::Reverse(c(i).tasks_done)),
            Sort::Rate => order.sort_by(|&a, &b| larger_first(c(a).tasks_per_s, c(b).tasks_per_s)),
            Sort::Efficiency => order.sort_by(|&a, &b| {
                let e = |i: usize| c(i).efficiency.unwrap_or(f64::INFINITY);
                e(a).total_cmp(&e(b))
            }),
        }
        order
    }

    /// The index of the selected cluster (the first in the order when none is).
    pub(crate) fn selected_index(&self, state: &LiveState) -> usize {
        self.selected
            .as_ref()
            .and_then(|name| state.clusters.iter().position(|c| &c.name == name))
            .or_else(|| self.cluster_order(state).first().copied())
            .unwrap_or(0)
    }

    /// A cluster's workers in the order chosen.
    pub(crate) fn worker_order<'a>(&self, cluster: &'a ClusterState) -> Vec<&'a WorkerState> {
        let mut workers: Vec<&WorkerState> = cluster.worker_list.iter().collect();
        match self.sort {
            Sort::Plan => {}
            Sort::Done => workers.sort_by_key(|w| std::cmp::Reverse(w.tasks_done)),
            Sort::Rate => workers.sort_by(|a, b| larger_first(a.tasks_per_s, b.tasks_per_s)),
            Sort::Efficiency => workers.sort_by(|a, b| {
                a.busy_share
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&b.busy_share.unwrap_or(f64::INFINITY))
            }),
        }
        workers
    }

    /// Take `key` on `state`.
    pub(crate) fn key(&mut self, key: KeyEvent, state: &LiveState) -> Asked {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Asked::Interrupt;
        }
        match (key.code, &self.screen) {
            (KeyCode::Char('q'), _) => return Asked::Quit,
            (KeyCode::Char('s'), _) => self.sort = self.sort.next(),
            (KeyCode::Up | KeyCode::Char('k'), Screen::Overview) => self.step(state, -1),
            (KeyCode::Down | KeyCode::Char('j'), Screen::Overview) => self.step(state, 1),
            (KeyCode::Enter | KeyCode::Char('w'), Screen::Overview) => {
                let i = self.selected_index(state);
                if let Some(c) = state.clusters.get(i) {
                    self.screen = Screen::Workers(c.name.clone());
                    self.worker_offset = 0;
                }
            }
            (KeyCode::Up | KeyCode::Char('k'), Screen::Workers(_)) => {
                self.worker_offset = self.worker_offset.saturating_sub(1);
            }
            (KeyCode::Down | KeyCode::Char('j'), Screen::Workers(name)) => {
                let workers = state
                    .clusters
                    .iter()
                    .find(|c| &c.name == name)
                    .map_or(0, |c| c.worker_list.len());
                self.worker_offset = (self.worker_offset + 1).min(workers.saturating_sub(1));
            }
            (KeyCode::Esc | KeyCode::Backspace | KeyCode::Left, Screen::Workers(_)) => {
                self.screen = Screen::Overview;
            }
            _ => return Asked::Nothing,
        }
        Asked::Redraw
    }

    /// Select the cluster `by` rows down (up when negative) in the order shown.
    fn step(&mut self, state: &LiveState, by: isize) {
        let order = self.cluster_order(state);
        let at = order
            .iter()
            .position(|&i| i == self.selected_index(state))
            .unwrap_or(0);
        let to = at
            .saturating_add_signed(by)
            .min(order.len().saturating_sub(1));
        self.selected = order.get(to).map(|&i| state.clusters[i].name.clone());
    }
}
