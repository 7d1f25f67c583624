//! Exact travelling salesman by branch and bound (`tsp`), the search tree divided at a level.
//!
//! Tours start at city 0. The master divides the search at level L: a task is a prefix of L
//! cities starting at city 0 (every ordered choice of L - 1 other cities, handed out in a
//! stratified order, [`Order`]), and explores every completion of it depth first ([`Search`]).
//! Three variants:
//!
//! - `exhaustive`: no pruning, every complete tour of the subtree is visited;
//! - `task-pruning`: a partial tour whose lower bound reaches the best tour the task found
//!   itself is cut;
//! - `global-pruning`: the same, with the best length known to the master when the task was
//!   handed out as the starting bound; the master keeps it current from the results, and builds
//!   each task when it is handed out ([`Problem::next_task`]), so later tasks carry better
//!   bounds.
//!
//! A result carries the best tour and length found (joining keeps the best) and the search
//! nodes visited (joining adds them): the work done, reported to the framework through
//! [`TaskResult::operations`] in place of the task's estimate, the size of its whole subtree.
//!
//! Instances: seeded random cities on a grid (EUC_2D, distances rounded to the nearest integer
//! as TSPLIB does) or a TSPLIB file ([`tsplib`]). The master checks the length against
//! Held–Karp ([`held_karp`]) when n <= 18 (2^17 x 17 path costs, 18 MB).

mod tsplib;

use hmw::{Problem, Task, TaskId, TaskResult, WorkerContext};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The most cities: indices are `u8`, and beyond this no variant would end anyway.
const MAX_CITIES: usize = 64;
/// Held–Karp checks instances up to this many cities.
const HELD_KARP_MAX: usize = 18;
/// The most tasks a level may make.
const MAX_TASKS: f64 = 1e7;

/// How a task prunes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Variant {
    Exhaustive,
    TaskPruning,
    GlobalPruning,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Exhaustive => "exhaustive",
            Variant::TaskPruning => "task-pruning",
            Variant::GlobalPruning => "global-pruning",
        }
    }
}

/// The `[application]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Settings {
    variant: Variant,
    /// Random cities: how many, and their seed (ignored with `file`).
    n: usize,
    seed: u64,
    /// Random cities have integer coordinates in [0, grid).
    grid: u32,
    /// A TSPLIB file in place of random cities.
    file: Option<String>,
    /// The level the search is divided at: a task is a prefix of this many cities.
    level: usize,
    /// Check the length against Held–Karp (n <= 18).
    verify: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            variant: Variant::GlobalPruning,
            n: 11,
            seed: 1,
            grid: 1000,
            file: None,
            level: 3,
            verify: true,
        }
    }
}

impl Settings {
    /// The instance: read from `file` or drawn, checked against `level`.
    fn instance(&self) -> anyhow::Result<Distances> {
        let distances = match &self.file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| anyhow::anyhow!("[application] file = {path:?}: {e}"))?;
                tsplib::parse(path, &text)?
            }
            None => {
                anyhow::ensure!(
                    (2..=MAX_CITIES).contains(&self.n),
                    "[application] n = {} must be between 2 and {MAX_CITIES}",
                    self.n
                );
                anyhow::ensure!(
                    self.grid >= 1,
                    "[application] grid = {} must be at least 1",
                    self.grid
                );
                random_cities(self.n, self.seed, self.grid)
            }
        };
        let n = distances.n;
        anyhow::ensure!(
            (2..=MAX_CITIES).contains(&n),
            "the instance has {n} cities: between 2 and {MAX_CITIES} are supported"
        );
        anyhow::ensure!(
            (1..=n).contains(&self.level),
            "[application] level = {} must be between 1 and the number of cities, {n}",
            self.level
        );
        let tasks = task_count(n, self.level);
        anyhow::ensure!(
            tasks <= MAX_TASKS,
            "[application] level = {} makes {tasks:e} tasks for {n} cities (at most {MAX_TASKS:e})",
            self.level
        );
        Ok(distances)
    }
}

/// A distance matrix, row-major: `d[a * n + b]` from a to b (TSPLIB's integer lengths).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Distances {
    n: usize,
    d: Vec<i64>,
}

impl Distances {
    fn get(&self, a: usize, b: usize) -> i64 {
        self.d[a * self.n + b]
    }

    /// Length of a closed tour.
    fn tour_length(&self, tour: &[u8]) -> i64 {
        (0..tour.len())
            .map(|i| self.get(tour[i] as usize, tour[(i + 1) % tour.len()] as usize))
            .sum()
    }
}

/// TSPLIB's EUC_2D: the Euclidean distance rounded to the nearest integer, `nint`.
fn euc_2d(a: (f64, f64), b: (f64, f64)) -> i64 {
    ((a.0 - b.0).hypot(a.1 - b.1) + 0.5).floor() as i64
}

fn from_coordinates(points: &[(f64, f64)]) -> Distances {
    let n = points.len();
    let mut d = vec![0; n * n];
    for a in 0..n {
        for b in 0..n {
            d[a * n + b] = euc_2d(points[a], points[b]);
        }
    }
    Distances { n, d }
}

/// `n` cities with integer coordinates drawn uniformly in [0, grid)^2 (ChaCha8, seeded).
fn random_cities(n: usize, seed: u64, grid: u32) -> Distances {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let points: Vec<(f64, f64)> = (0..n)
        .map(|_| (rng.gen_range(0..grid) as f64, rng.gen_range(0..grid) as f64))
        .collect();
    from_coordinates(&points)
}

/// Ordered choices of `k` of `m` things: m! / (m - k)!, as f64 (it overflows u64 soon).
fn arrangements(m: usize, k: usize) -> f64 {
    (m - k + 1..=m).map(|x| x as f64).product()
}

/// Tasks at level L: prefixes of L cities from city 0, (n - 1)! / (n - L)!.
fn task_count(n: usize, level: usize) -> f64 {
    arrangements(n - 1, level - 1)
}

/// Nodes of the whole subtree below a prefix of `depth` cities (itself included): the partial
/// tours that extend it by j = 0..=r of the r = n - depth cities left, sum of r! / (r - j)!.
/// The exhaustive search visits exactly these; the pruning ones at most these.
fn subtree_nodes(n: usize, depth: usize) -> f64 {
    let r = n - depth;
    (0..=r).map(|j| arrangements(r, j)).sum()
}

/// A task: a prefix of the tour, and what it needs to complete it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Prefix {
    variant: Variant,
    /// Cities of the prefix, city 0 first.
    cities: Vec<u8>,
    /// `global-pruning`: the best length the master knew when it handed the task out.
    bound: Option<i64>,
    distances: Distances,
}

/// What a task found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Best {
    /// The best complete tour found and its length; `None` when every completion was cut (its
    /// bound was already as good).
    tour: Option<(i64, Vec<u8>)>,
    /// Search nodes visited: partial tours reached, the prefix and complete tours included.
    nodes: u64,
    /// Tasks joined into this result.
    tasks: u64,
}

impl Best {
    fn length(&self) -> Option<i64> {
        self.tour.as_ref().map(|(length, _)| *length)
    }

    /// Keep the better tour (the shorter; of equal ones the lexicographically smaller, so the
    /// outcome does not depend on the order of joins) and add the work.
    fn absorb(&mut self, other: Best) {
        self.nodes += other.nodes;
        self.tasks += other.tasks;
        if let Some(theirs) = other.tour {
            match &self.tour {
                Some(ours) if *ours <= theirs => {}
                _ => self.tour = Some(theirs),
            }
        }
    }
}

/// Depth-first search below a prefix.
struct Search<'a> {
    d: &'a Distances,
    prune: bool,
    /// Cut partial tours whose bound reaches this (the best length known).
    best: i64,
    best_tour: Option<Vec<u8>>,
    path: Vec<u8>,
    visited: Vec<bool>,
    /// Cheapest edge out of each city (to another city), for the lower bound.
    min_out: Vec<i64>,
    nodes: u64,
}

impl Search<'_> {
    /// Visit the node `self.path` of length `length`; `rest` is the sum of `min_out` over the
    /// cities not on the path.
    ///
    /// Lower bound of any completion: the path's length, plus one edge out of its last city
    /// and one out of every city left (each is left exactly once more on the way back to
    /// city 0), each at least that city's cheapest edge.
    fn visit(&mut self, length: i64, rest: i64) {
        self.nodes += 1;
        let n = self.d.n;
        let last = *self.path.last().expect("a path starts at city 0") as usize;
        if self.path.len() == n {
            let total = length + self.d.get(last, 0);
            if total < self.best || (!self.prune && self.best_tour.is_none()) {
                self.best = total;
                self.best_tour = Some(self.path.clone());
            } else if !self.prune && total == self.best {
                // Exhaustive: keep the lexicographically first optimal tour, as joins do.
                if Some(&self.path) < self.best_tour.as_ref() {
                    self.best_tour = Some(self.path.clone());
                }
            }
            return;
        }
        if self.prune && length + self.min_out[last] + rest >= self.best {
            return;
        }
        for next in 0..n {
            if self.visited[next] {
                continue;
            }
            self.visited[next] = true;
            self.path.push(next as u8);
            self.visit(length + self.d.get(last, next), rest - self.min_out[next]);
            self.path.pop();
            self.visited[next] = false;
        }
    }
}

/// Explore every completion of `cities` (from city 0); `bound` is a length already known.
fn search(d: &Distances, cities: &[u8], variant: Variant, bound: Option<i64>) -> Best {
    let n = d.n;
    let min_out: Vec<i64> = (0..n)
        .map(|a| {
            (0..n)
                .filter(|&b| b != a)
                .map(|b| d.get(a, b))
                .min()
                .unwrap_or(0)
        })
        .collect();
    let mut visited = vec![false; n];
    for &c in cities {
        visited[c as usize] = true;
    }
    let length = cities
        .windows(2)
        .map(|w| d.get(w[0] as usize, w[1] as usize))
        .sum();
    let rest = (0..n).filter(|&c| !visited[c]).map(|c| min_out[c]).sum();
    let mut s = Search {
        d,
        prune: variant != Variant::Exhaustive,
        best: match variant {
            Variant::GlobalPruning => bound.unwrap_or(i64::MAX),
            _ => i64::MAX,
        },
        best_tour: None,
        path: cities.to_vec(),
        visited,
        min_out,
        nodes: 0,
    };
    s.visit(length, rest);
    Best {
        tour: s.best_tour.map(|tour| (s.best, tour)),
        nodes: s.nodes,
        tasks: 1,
    }
}

impl Task for Prefix {
    type Output = Best;

    fn execute(self, _worker: &WorkerContext) -> Best {
        search(&self.distances, &self.cities, self.variant, self.bound)
    }

    /// One basic operation is one search node (a partial tour reached: a bound or a tour's
    /// length computed, a loop over the cities). The estimate is the size of the task's whole
    /// subtree: exact for `exhaustive`, an upper bound when pruning; the result reports the
    /// nodes actually visited.
    fn operations(&self) -> f64 {
        subtree_nodes(self.distances.n, self.cities.len())
    }
}

impl TaskResult for Best {
    /// Any two results join: the better tour, the work added.
    fn join(&mut self, other: Best) -> Result<(), Best> {
        self.absorb(other);
        Ok(())
    }

    fn operations(&self) -> Option<f64> {
        Some(self.nodes as f64)
    }
}

/// The search, on the master.
struct Tsp {
    variant: Variant,
    distances: Distances,
    level: usize,
    /// The order the prefixes are handed out in, and how many were.
    order: Order,
    handed: u64,
    tasks: u64,
    best: Best,
    verify: bool,
    /// Serialised size of the first task, for the plan.
    task_bytes: Option<usize>,
}

/// The prefix of lexicographic rank `rank` (from 0) among the prefixes of `level` cities from
/// city 0 of `n` cities: its i-th city is the (rank / (n-1-i)!/(n-level)! mod (n-i))-th smallest
/// city not before it (the factorial number system of arrangements).
fn prefix_of_rank(mut rank: u64, n: usize, level: usize) -> Vec<u8> {
    let mut left: Vec<u8> = (1..n as u8).collect();
    let mut prefix = vec![0u8];
    for i in 1..level {
        // Prefixes sharing the cities up to position i: arrangements of those after it.
        let below = arrangements(n - 1 - i, level - 1 - i) as u64;
        let choice = (rank / below) as usize;
        rank %= below;
        prefix.push(left.remove(choice));
    }
    prefix
}

/// The dispatch order: the k-th task handed out is the prefix of lexicographic rank
/// `k * stride mod tasks`, the stride the integer nearest `tasks / golden ratio` that is coprime
/// with `tasks` (so every rank comes exactly once).
///
/// Why not the lexicographic order: a task's work depends on its first cities, so neighbours
/// in that order weigh alike and the order runs through heavy and light stretches (measured on
/// 16 random cities, seed 1, level 3, task-pruning: the tenths of the order weigh 0.79 to 1.35
/// times the mean task, the middle heaviest; README). The live prediction extrapolates the
/// tasks gathered so far to those left; in the lexicographic order the first 10 % are the
/// prefixes of one or two second cities, a biased sample. The golden-ratio stride visits the
/// lexicographic order evenly (for the golden ratio itself the first k points leave gaps of at
/// most three sizes, all within 2.6 times tasks / k: the three-distance theorem; the integer
/// stride keeps them within 5 times, tested), a stratified sample at every point of the run,
/// without storing the order. Task-pruning does the same work in any order (each task prunes with its own best);
/// global-pruning finds a good bound sooner from prefixes spread over the whole tree.
#[derive(Debug, Clone, Copy)]
struct Order {
    tasks: u64,
    stride: u64,
}

impl Order {
    fn new(tasks: u64) -> Order {
        let golden = (5f64.sqrt() - 1.0) / 2.0;
        let mut stride = ((tasks as f64 * golden).round() as u64).max(1);
        while gcd(stride, tasks) != 1 {
            stride += 1;
        }
        Order { tasks, stride }
    }

    /// The lexicographic rank of the `k`-th task handed out.
    fn rank(&self, k: u64) -> u64 {
        ((k as u128 * self.stride as u128) % self.tasks as u128) as u64
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Tsp {
    fn new(settings: &Settings) -> anyhow::Result<Self> {
        Ok(Tsp::with(settings, settings.instance()?))
    }

    fn with(settings: &Settings, distances: Distances) -> Self {
        let tasks = task_count(distances.n, settings.level) as u64;
        Tsp {
            variant: settings.variant,
            order: Order::new(tasks),
            handed: 0,
            tasks,
            distances,
            level: settings.level,
            best: Best {
                tour: None,
                nodes: 0,
                tasks: 0,
            },
            verify: settings.verify,
            task_bytes: None,
        }
    }
}

impl Problem for Tsp {
    type Task = Prefix;

    /// Built when handed out: a `global-pruning` task carries the best length gathered so far.
    fn next_task(&mut self) -> Option<Prefix> {
        if self.handed == self.tasks {
            return None;
        }
        let rank = self.order.rank(self.handed);
        self.handed += 1;
        let cities = prefix_of_rank(rank, self.distances.n, self.level);
        let task = Prefix {
            variant: self.variant,
            cities,
            bound: match self.variant {
                Variant::GlobalPruning => self.best.length(),
                _ => None,
            },
            distances: self.distances.clone(),
        };
        self.task_bytes.get_or_insert_with(|| hmw::wire_size(&task));
        Some(task)
    }

    fn gather(&mut self, _id: TaskId, result: Best) {
        self.best.absorb(result);
    }

    fn task_count(&self) -> Option<u64> {
        Some(self.tasks)
    }

    /// A `global-pruning` task carries the best length gathered when it is built: later tasks
    /// prune more.
    fn later_tasks_may_do_less(&self) -> bool {
        self.variant == Variant::GlobalPruning
    }
}

/// Held–Karp dynamic programming, O(2^n n^2): the length of an optimal tour from city 0.
///
/// `cost[S][j]`: the shortest path from 0 through the cities of S (a set of cities 1..n-1,
/// bit j-1 for city j) ending at j in S.
fn held_karp(d: &Distances) -> i64 {
    let n = d.n;
    if n == 1 {
        return 0;
    }
    let m = n - 1;
    let full = 1usize << m;
    let mut cost = vec![i64::MAX; full * m];
    for j in 0..m {
        cost[(1 << j) * m + j] = d.get(0, j + 1);
    }
    for set in 1..full {
        for j in 0..m {
            let here = cost[set * m + j];
            if set & (1 << j) == 0 || here == i64::MAX {
                continue;
            }
            for k in 0..m {
                if set & (1 << k) == 0 {
                    let next = (set | (1 << k)) * m + k;
                    cost[next] = cost[next].min(here + d.get(j + 1, k + 1));
                }
            }
        }
    }
    (0..m)
        .map(|j| cost[(full - 1) * m + j] + d.get(j + 1, 0))
        .min()
        .expect("n >= 2")
}

fn finish(tsp: Tsp, stats: &hmw::RunStats) -> anyhow::Result<()> {
    let n = tsp.distances.n;
    let best = &tsp.best;
    anyhow::ensure!(
        best.tasks == tsp.tasks,
        "gathered {} tasks of {}",
        best.tasks,
        tsp.tasks
    );
    let (length, tour) = best
        .tour
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("no task found a tour"))?;
    anyhow::ensure!(
        tsp.distances.tour_length(tour) == *length && {
            let mut sorted = tour.clone();
            sorted.sort_unstable();
            sorted == (0..n as u8).collect::<Vec<_>>()
        },
        "the best result is not a tour of length {length}: {tour:?}"
    );
    let exhaustive_nodes = task_count(n, tsp.level) * subtree_nodes(n, tsp.level);
    if tsp.variant == Variant::Exhaustive {
        anyhow::ensure!(
            best.nodes as f64 == exhaustive_nodes,
            "the exhaustive search visited {} nodes, not {exhaustive_nodes}",
            best.nodes
        );
    }
    let verified = if tsp.verify && n <= HELD_KARP_MAX {
        let optimum = held_karp(&tsp.distances);
        anyhow::ensure!(
            *length == optimum,
            "the {} search found a tour of length {length}; Held-Karp's optimum is {optimum}",
            tsp.variant.name()
        );
        "true"
    } else {
        "skipped"
    };
    println!(
        "tsp sizes: task_bytes={} result_bytes={} oper={} tasks={} makespan_s={:.3} tour={tour:?}",
        tsp.task_bytes.unwrap_or(0),
        hmw::wire_size(best),
        subtree_nodes(n, tsp.level),
        tsp.tasks,
        stats.wall_s
    );
    println!(
        "tsp variant={} n={n} length={length} verified={verified} nodes={} \
         exhaustive_nodes={exhaustive_nodes}",
        tsp.variant.name(),
        best.nodes
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    hmw::run(Tsp::new, finish)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every task of an instance, searched in order as the master would hand them out (the
    /// global bound updated after each).
    fn solve(d: &Distances, level: usize, variant: Variant) -> Best {
        let settings = Settings {
            variant,
            level,
            ..Settings::default()
        };
        let mut tsp = Tsp::with(&settings, d.clone());
        while let Some(task) = tsp.next_task() {
            let result = search(&task.distances, &task.cities, task.variant, task.bound);
            tsp.gather(0, result);
        }
        assert_eq!(tsp.best.tasks, tsp.tasks);
        tsp.best
    }

    #[test]
    fn the_three_variants_find_the_held_karp_optimum() {
        for (n, seed) in [(5, 1), (7, 2), (8, 3), (9, 4), (10, 5), (11, 6)] {
            let d = random_cities(n, seed, 1000);
            let optimum = held_karp(&d);
            for level in [1, 2, 3] {
                let mut nodes = Vec::new();
                for variant in [
                    Variant::Exhaustive,
                    Variant::TaskPruning,
                    Variant::GlobalPruning,
                ] {
                    if variant == Variant::Exhaustive && n > 9 {
                        continue; // (n-1)! tours: slow in a debug build
                    }
                    let best = solve(&d, level, variant);
                    assert_eq!(best.length(), Some(optimum), "n={n} {variant:?} L={level}");
                    let tour = &best.tour.as_ref().unwrap().1;
                    assert_eq!(d.tour_length(tour), optimum);
                    nodes.push(best.nodes);
                }
                // Pruning with the global bound does no more than within each task, which
                // does no more than the exhaustive search.
                assert!(nodes.windows(2).all(|w| w[0] >= w[1]), "{nodes:?}");
            }
        }
    }

    #[test]
    fn held_karp_agrees_with_brute_force() {
        for seed in 0..5 {
            let d = random_cities(7, seed, 100);
            let best = search(&d, &[0], Variant::Exhaustive, None);
            assert_eq!(best.length(), Some(held_karp(&d)));
        }
    }

    #[test]
    fn exhaustive_node_counts_match_the_formula() {
        for n in 2..=8 {
            let d = random_cities(n, 9, 50);
            for level in 1..=n {
                let best = solve(&d, level, Variant::Exhaustive);
                let expected = task_count(n, level) * subtree_nodes(n, level);
                assert_eq!(best.nodes as f64, expected, "n={n} L={level}");
                // Tasks visit their whole subtree: the estimate is exact.
                let first: Vec<u8> = (0..level as u8).collect();
                let one = search(&d, &first, Variant::Exhaustive, None);
                assert_eq!(one.nodes as f64, subtree_nodes(n, level));
            }
        }
        // The whole tree of 5 cities from city 0: 1 + 4 + 12 + 24 + 24 nodes.
        assert_eq!(subtree_nodes(5, 1), 65.0);
        assert_eq!(task_count(5, 3), 12.0);
    }

    #[test]
    fn prefixes_by_rank_are_in_lexicographic_order() {
        let all: Vec<Vec<u8>> = (0..12).map(|r| prefix_of_rank(r, 5, 3)).collect();
        assert_eq!(all[0], vec![0, 1, 2]);
        assert_eq!(all[1], vec![0, 1, 3]);
        assert_eq!(all[3], vec![0, 2, 1]);
        assert_eq!(all[11], vec![0, 4, 3]);
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(prefix_of_rank(0, 5, 1), vec![0]);
        for (n, level) in [(5, 5), (7, 3), (9, 4)] {
            let count = task_count(n, level) as u64;
            let ranked: Vec<Vec<u8>> = (0..count).map(|r| prefix_of_rank(r, n, level)).collect();
            assert!(ranked.windows(2).all(|w| w[0] < w[1]), "n={n} L={level}");
            assert!(ranked.iter().all(|p| {
                let mut s = p.clone();
                s.sort_unstable();
                s.dedup();
                s.len() == level && p[0] == 0
            }));
        }
    }

    #[test]
    fn the_order_hands_out_every_prefix_once_spread_evenly() {
        for tasks in [1u64, 2, 12, 110, 210, 720, 1000] {
            let order = Order::new(tasks);
            let mut ranks: Vec<u64> = (0..tasks).map(|k| order.rank(k)).collect();
            // Stratified: the first tenth leaves no gap in the lexicographic order much wider
            // than tasks / tenth (at most 2.6 times for the golden ratio itself by the
            // three-distance theorem; the coprime integer stride drifts from it a little).
            let tenth = (tasks / 10).max(1) as usize;
            let mut first: Vec<u64> = ranks[..tenth].to_vec();
            first.sort_unstable();
            let widest = first
                .windows(2)
                .map(|w| w[1] - w[0])
                .chain([first[0] + tasks - first[tenth - 1]])
                .max()
                .unwrap();
            assert!(
                widest as f64 <= 5.0 * tasks as f64 / tenth as f64,
                "{tasks}: {widest}"
            );
            ranks.sort_unstable();
            assert_eq!(ranks, (0..tasks).collect::<Vec<_>>());
        }
        let d = random_cities(6, 1, 100);
        let mut tsp = Tsp::with(
            &Settings {
                level: 3,
                ..Settings::default()
            },
            d,
        );
        let mut handed = Vec::new();
        while let Some(task) = tsp.next_task() {
            handed.push(task.cities);
        }
        assert_eq!(handed.len(), 20);
        handed.sort();
        handed.dedup();
        assert_eq!(handed.len(), 20);
    }

    #[test]
    fn join_keeps_the_best_tour_and_adds_nodes() {
        let mut a = Best {
            tour: Some((10, vec![0, 2, 1])),
            nodes: 5,
            tasks: 1,
        };
        let b = Best {
            tour: Some((7, vec![0, 1, 2])),
            nodes: 3,
            tasks: 2,
        };
        a.join(b).unwrap();
        assert_eq!(a.tour, Some((7, vec![0, 1, 2])));
        assert_eq!((a.nodes, a.tasks), (8, 3));
        assert_eq!(TaskResult::operations(&a), Some(8.0));
        a.join(Best {
            tour: None,
            nodes: 1,
            tasks: 1,
        })
        .unwrap();
        assert_eq!(a.length(), Some(7));
    }

    #[test]
    fn a_global_bound_equal_to_the_optimum_cuts_everything() {
        let d = random_cities(8, 3, 1000);
        let optimum = held_karp(&d);
        let best = search(&d, &[0], Variant::GlobalPruning, Some(optimum));
        assert_eq!(best.tour, None);
        let best = search(&d, &[0], Variant::GlobalPruning, Some(optimum + 1));
        assert_eq!(best.length(), Some(optimum));
    }

    #[test]
    fn euc_2d_rounds_to_the_nearest_integer() {
        assert_eq!(euc_2d((0.0, 0.0), (3.0, 4.0)), 5);
        assert_eq!(euc_2d((0.0, 0.0), (1.0, 1.0)), 1); // 1.414
        assert_eq!(euc_2d((0.0, 0.0), (1.0, 2.0)), 2); // 2.236
        assert_eq!(euc_2d((0.0, 0.0), (1.5, 2.0)), 3); // 2.5
    }
}
