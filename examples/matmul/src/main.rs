//! Blocked matrix multiplication C = A x B of M x M matrices in B x B blocks.
//!
//! Two strategies (`docs/model.md` section 7), chosen per cluster:
//! - block pairs (the master's own workers, and every external cluster by default): a task is
//!   a pair of blocks (`A[i][k]`, `B[k][j]`); its result is their product, a partial `C[i][j]`; the
//!   master sums results into C;
//! - row/column (the external clusters named in `row_column`): an inter-cluster task is a row
//!   of A and a column of B in blocks; the far sub-master keeps every row and column it
//!   received and splits each pair into the block pairs of the `2*RC - 1` row-by-column
//!   products it makes possible with what it holds, and sends back finished C blocks.
//!
//! Across clusters a splitter ([`BlockSplitter`]) lets an external cluster work at a finer
//! grain (`sub_b`) than the tasks that cross the WAN, and sends each operand block across a
//! link once: the far sub-master keeps what it received. For sizes where it is cheap the
//! product is checked against a direct one.

mod division;
mod matrix;
mod stabilise;

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use division::{Division, PairClaim};
use hmw::{Handout, Problem, Recipient, Split, Splitter, Task, TaskId, TaskResult, WorkerContext};
use matrix::Matrix;
use serde::{Deserialize, Serialize};
use stabilise::PairTiming;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Settings {
    /// Matrix order M.
    m: usize,
    /// Block order B (divides M): the grain of the master's tasks.
    b: usize,
    /// Block order the sub-masters of external clusters split tasks into (divides B; B: no
    /// split).
    sub_b: Option<usize>,
    /// Check against a direct product when M is at most this.
    verify_up_to: usize,
    /// The external clusters that get the row/column strategy (the others get block pairs).
    row_column: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            m: 512,
            b: 128,
            sub_b: None,
            verify_up_to: 1024,
            row_column: Vec::new(),
        }
    }
}

/// Three M x M matrices of f64 must fit in memory: M at most this.
const MAX_ORDER: usize = 16384;

impl Settings {
    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            (1..=MAX_ORDER).contains(&self.m),
            "[application] m = {} must be between 1 and {MAX_ORDER}",
            self.m
        );
        anyhow::ensure!(
            self.b > 0 && self.m.is_multiple_of(self.b),
            "[application] b = {} must divide m = {}",
            self.b,
            self.m
        );
        anyhow::ensure!(
            self.sub_b() > 0 && self.b.is_multiple_of(self.sub_b()),
            "[application] sub_b = {} must divide b = {}",
            self.sub_b(),
            self.b
        );
        Ok(())
    }

    fn sub_b(&self) -> usize {
        self.sub_b.unwrap_or(self.b)
    }
}

/// Which block of which matrix, at which block order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct BlockKey {
    /// 0: A, 1: B.
    matrix: u8,
    order: usize,
    row: usize,
    col: usize,
}

/// An operand block of a task. A link to another cluster leaves `block` out when it already
/// sent that block there; the far sub-master puts it back.
#[derive(Serialize, Deserialize)]
struct Operand {
    key: BlockKey,
    block: Option<Matrix>,
}

impl Operand {
    fn of(matrix: &Matrix, key: BlockKey) -> Self {
        Operand {
            key,
            block: Some(matrix.block(key.row, key.col, key.order)),
        }
    }
}

/// A task: a block pair, or a row/column pair for a cluster of the row/column strategy.
#[derive(Serialize, Deserialize)]
enum MatTask {
    Pair(BlockPair),
    RowColumn(RowColumnPair),
}

#[derive(Serialize, Deserialize)]
struct BlockPair {
    /// The C block it contributes to.
    row: usize,
    col: usize,
    a: Operand,
    b: Operand,
}

/// The `rank`-th row/column pair of a cluster: the finished C blocks `products` it makes
/// possible, and the operand blocks they need (each row of A and column of B as its `nb`
/// blocks). The master's copy carries them all, so that it can go anywhere whole (a copy
/// at the end); the link leaves out those it sent before, which the sub-master kept. If its
/// cluster is lost, it goes back as block pairs ([`Problem::redivide`]).
#[derive(Serialize, Deserialize)]
struct RowColumnPair {
    rank: u64,
    /// Blocks per row or column, `M / B`.
    nb: usize,
    order: usize,
    products: Vec<(usize, usize)>,
    operands: Vec<Operand>,
}

/// Finished or partial C blocks.
#[derive(Serialize, Deserialize)]
struct CBlocks(Vec<PartialBlock>);

#[derive(Serialize, Deserialize)]
struct PartialBlock {
    row: usize,
    col: usize,
    c: Matrix,
}

/// Floating-point operations of a b x b block product: 2b^3 - b^2.
fn block_product_operations(b: usize) -> f64 {
    let b = b as f64;
    2.0 * b * b * b - b * b
}

fn operand_values(operand: &Operand) -> anyhow::Result<&Matrix> {
    operand
        .block
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("operand {:?} reached a worker empty", operand.key))
}

impl RowColumnPair {
    /// C block `(row, col)`: the sum over `l` of `A[row][l] x B[l][col]`.
    fn product(&self, row: usize, col: usize) -> anyhow::Result<Matrix> {
        let find = |matrix, r, c| {
            self.operands
                .iter()
                .find(|o| (o.key.matrix, o.key.row, o.key.col) == (matrix, r, c))
                .ok_or_else(|| anyhow::anyhow!("no operand ({matrix}, {r}, {c}) in the pair"))
                .and_then(operand_values)
        };
        let mut sum = Matrix::zeros(self.order);
        for l in 0..self.nb {
            let part = find(0, row, l)?.product(find(1, l, col)?);
            sum.add_block(0, 0, &part);
        }
        Ok(sum)
    }
}

impl Task for MatTask {
    type Output = CBlocks;

    fn execute(self, _worker: &WorkerContext) -> CBlocks {
        match self {
            MatTask::Pair(pair) => CBlocks(vec![PartialBlock {
                row: pair.row,
                col: pair.col,
                c: operand_values(&pair.a)
                    .and_then(|a| Ok(a.product(operand_values(&pair.b)?)))
                    .expect("the sub-master puts back what a link left out"),
            }]),
            // A pair computed whole: a copy of it, handed out at the end.
            MatTask::RowColumn(pair) => CBlocks(
                pair.products
                    .iter()
                    .map(|&(row, col)| PartialBlock {
                        row,
                        col,
                        c: pair
                            .product(row, col)
                            .expect("the master's copy of a pair is complete"),
                    })
                    .collect(),
            ),
        }
    }

    /// A block pair: 2B^3 - B^2; a row/column pair: `M/B` of those per product.
    fn operations(&self) -> f64 {
        match self {
            MatTask::Pair(pair) => block_product_operations(pair.a.key.order),
            MatTask::RowColumn(pair) => {
                (pair.products.len() * pair.nb) as f64 * block_product_operations(pair.order)
            }
        }
    }
}

impl TaskResult for CBlocks {
    /// Results for the same C blocks add up; others do not join.
    fn join(&mut self, other: CBlocks) -> Result<(), CBlocks> {
        let same = self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| (a.row, a.col, a.c.n) == (b.row, b.col, b.c.n));
        if !same {
            return Err(other);
        }
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            mine.c.add_block(0, 0, &theirs.c);
        }
        Ok(())
    }
}

/// One pair handed to a row/column cluster, for the measured stabilisation.
struct PairSent {
    cluster: String,
    rank: u64,
    products: usize,
    operations: f64,
    sent: Instant,
}

struct MatMul {
    a: Matrix,
    b: Matrix,
    c: Matrix,
    block: usize,
    verify_up_to: usize,
    /// Who computes which C block.
    division: Division,
    /// The clusters of the row/column strategy.
    row_column: HashSet<String>,
    /// The C block being handed out as block pairs, and its next `k`.
    current: Option<(usize, usize, usize)>,
    /// Tasks produced so far: the next task's id.
    produced: TaskId,
    /// Pairs handed to row/column clusters, by task id, until gathered.
    pairs_out: HashMap<TaskId, PairSent>,
    /// Pairs gathered, in order.
    pairs_done: Vec<PairTiming>,
    /// When the last result of a block pair was gathered (seconds from `started`): the end of
    /// the steady state for the row/column clusters, which compute alone after it.
    last_block_done_s: Option<f64>,
    started: Instant,
}

impl MatMul {
    fn new(s: &Settings) -> Self {
        MatMul {
            a: Matrix::sample(s.m, 1),
            b: Matrix::sample(s.m, 2),
            c: Matrix::zeros(s.m),
            block: s.b,
            verify_up_to: s.verify_up_to,
            division: Division::new(s.m / s.b),
            row_column: s.row_column.iter().cloned().collect(),
            current: None,
            produced: 0,
            pairs_out: HashMap::new(),
            pairs_done: Vec::new(),
            last_block_done_s: None,
            started: Instant::now(),
        }
    }

    fn blocks(&self) -> usize {
        self.a.n / self.block
    }

    /// The serialised sizes of a block-pair task and of its result, as the framework sends
    /// them (the plan's `task_bytes` and `result_bytes`).
    fn sizes(&self) -> (usize, usize) {
        let pair = BlockPair {
            row: 0,
            col: 0,
            a: Operand::of(&self.a, self.key(0, 0, 0)),
            b: Operand::of(&self.b, self.key(1, 0, 0)),
        };
        let result = CBlocks(vec![PartialBlock {
            row: 0,
            col: 0,
            c: Matrix::zeros(self.block),
        }]);
        (
            hmw::wire_size(&MatTask::Pair(pair)),
            hmw::wire_size(&result),
        )
    }

    fn key(&self, matrix: u8, row: usize, col: usize) -> BlockKey {
        BlockKey {
            matrix,
            order: self.block,
            row,
            col,
        }
    }

    /// The next block pair: the next `k` of the C block being handed out, or the first of the
    /// next free C block.
    fn next_block_pair(&mut self) -> Option<BlockPair> {
        let (i, j, k) = match self.current {
            Some(current) => current,
            None => {
                let (i, j) = self.division.next_block()?;
                (i, j, 0)
            }
        };
        self.current = (k + 1 < self.blocks()).then_some((i, j, k + 1));
        Some(self.block_pair(i, j, k))
    }

    /// The `k`-th block pair of C block `(i, j)`: `A[i][k]` and `B[k][j]`.
    fn block_pair(&self, i: usize, j: usize, k: usize) -> BlockPair {
        BlockPair {
            row: i,
            col: j,
            a: Operand::of(&self.a, self.key(0, i, k)),
            b: Operand::of(&self.b, self.key(1, k, j)),
        }
    }

    /// A claimed row/column pair as a task: the operand blocks its products need.
    fn row_column_pair(&self, claim: &PairClaim) -> RowColumnPair {
        let nb = self.blocks();
        let rows: HashSet<usize> = claim.products.iter().map(|p| p.0).collect();
        let cols: HashSet<usize> = claim.products.iter().map(|p| p.1).collect();
        let mut rows: Vec<usize> = rows.into_iter().collect();
        let mut cols: Vec<usize> = cols.into_iter().collect();
        rows.sort_unstable();
        cols.sort_unstable();
        let mut operands = Vec::with_capacity((rows.len() + cols.len()) * nb);
        for &r in &rows {
            operands.extend((0..nb).map(|l| Operand::of(&self.a, self.key(0, r, l))));
        }
        for &c in &cols {
            operands.extend((0..nb).map(|l| Operand::of(&self.b, self.key(1, l, c))));
        }
        RowColumnPair {
            rank: claim.rank,
            nb,
            order: self.block,
            products: claim.products.clone(),
            operands,
        }
    }

    fn handout(&mut self, task: Option<MatTask>) -> Handout<MatTask> {
        match task {
            Some(task) => {
                self.produced += 1;
                Handout::Task(task)
            }
            None if self.current.is_none() && self.division.is_divided() => Handout::Finished,
            None => Handout::Withheld,
        }
    }
}

impl Problem for MatMul {
    type Task = MatTask;

    fn next_task(&mut self) -> Option<MatTask> {
        match self.next_task_for(Recipient::Worker) {
            Handout::Task(task) => Some(task),
            Handout::Withheld | Handout::Finished => None,
        }
    }

    fn next_task_for(&mut self, to: Recipient<'_>) -> Handout<MatTask> {
        let task = match to {
            Recipient::Cluster(name) if self.row_column.contains(name) => {
                self.division.next_pair(name).map(|claim| {
                    let task = MatTask::RowColumn(self.row_column_pair(&claim));
                    let sent = PairSent {
                        cluster: name.to_string(),
                        rank: claim.rank,
                        products: claim.products.len(),
                        operations: task.operations(),
                        sent: Instant::now(),
                    };
                    self.pairs_out.insert(self.produced, sent);
                    task
                })
            }
            _ => self.next_block_pair().map(MatTask::Pair),
        };
        self.handout(task)
    }

    fn gather(&mut self, id: TaskId, result: CBlocks) {
        for block in &result.0 {
            self.c.add_block(block.row, block.col, &block.c);
        }
        let done_s = self.started.elapsed().as_secs_f64();
        match self.pairs_out.remove(&id) {
            Some(sent) => self.pairs_done.push(PairTiming {
                cluster: sent.cluster,
                rank: sent.rank,
                products: sent.products,
                operations: sent.operations,
                sent_s: sent.sent.duration_since(self.started).as_secs_f64(),
                done_s,
            }),
            None => self.last_block_done_s = Some(done_s),
        }
    }

    /// A row/column pair taken back from its lost (or dropped) cluster: its unfinished C
    /// blocks go to whoever asks as block pairs, `M/B` per block, like the blocks the main
    /// cluster claims; a block pair goes whole.
    fn redivide(&mut self, id: TaskId, task: &MatTask) -> Option<Vec<MatTask>> {
        let MatTask::RowColumn(pair) = task else {
            return None;
        };
        self.pairs_out.remove(&id);
        let parts: Vec<MatTask> = pair
            .products
            .iter()
            .flat_map(|&(i, j)| (0..pair.nb).map(move |k| (i, j, k)))
            .map(|(i, j, k)| MatTask::Pair(self.block_pair(i, j, k)))
            .collect();
        self.produced += parts.len() as TaskId;
        tracing::info!(
            rank = pair.rank,
            products = pair.products.len(),
            "a row/column pair taken back goes out as {} block pairs",
            parts.len()
        );
        Some(parts)
    }

    /// The block strategy resumes: the `k`-th task is the `k`-th block pair whoever asks. The
    /// row/column strategy hands a far cluster its own kind of task, so which task an id is
    /// depends on who asked when.
    fn check_resumable(&self) -> Result<(), String> {
        if self.row_column.is_empty() {
            Ok(())
        } else {
            Err(
                "the row/column strategy hands each far cluster tasks of its own kind, so a \
                 task's id depends on who asked for it when"
                    .into(),
            )
        }
    }

    fn task_count(&self) -> Option<u64> {
        self.row_column
            .is_empty()
            .then(|| self.blocks().pow(3) as u64)
    }
}
/// An external cluster's side of the product: tasks of order B are split into tasks of order
/// `sub_b`, and operand blocks cross each link once.
struct BlockSplitter {
    sub_b: usize,
    /// On a sub-master: every operand block received so far.
    kept: HashMap<BlockKey, Matrix>,
    /// On a communication manager: the operand blocks already sent over its link.
    sent: HashSet<BlockKey>,
}

impl BlockSplitter {
    /// The operand's values: as it came, or as kept from an earlier task.
    fn restore(&mut self, operand: Operand) -> anyhow::Result<Matrix> {
        match operand.block {
            Some(block) => {
                self.kept.insert(operand.key, block.clone());
                Ok(block)
            }
            None => self.kept.get(&operand.key).cloned().ok_or_else(|| {
                anyhow::anyhow!("operand {:?} was left out but never received", operand.key)
            }),
        }
    }
}

impl BlockSplitter {
    /// The pairs of `sub_b` blocks that the product of blocks `a` and `b` (of order B, keys
    /// `a_key` and `b_key`) adding into C block `(row, col)` is made of.
    fn sub_pairs(
        &self,
        (row, col): (usize, usize),
        (a, a_key): (&Matrix, BlockKey),
        (b, b_key): (&Matrix, BlockKey),
    ) -> anyhow::Result<Vec<BlockPair>> {
        let (n, s) = (a.n, self.sub_b);
        anyhow::ensure!(
            n.is_multiple_of(s),
            "sub_b = {s} does not divide a block of {n}"
        );
        let r = n / s;
        let sub_key = |key: BlockKey, row, col| BlockKey {
            matrix: key.matrix,
            order: s,
            row: key.row * r + row,
            col: key.col * r + col,
        };
        let mut parts = Vec::with_capacity(r * r * r);
        for i in 0..r {
            for j in 0..r {
                for k in 0..r {
                    parts.push(BlockPair {
                        row: row * r + i,
                        col: col * r + j,
                        a: Operand {
                            key: sub_key(a_key, i, k),
                            block: Some(if r == 1 { a.clone() } else { a.block(i, k, s) }),
                        },
                        b: Operand {
                            key: sub_key(b_key, k, j),
                            block: Some(if r == 1 { b.clone() } else { b.block(k, j, s) }),
                        },
                    });
                }
            }
        }
        Ok(parts)
    }

    /// A row/column pair: keep its rows and columns, and make the block pairs of the
    /// row-by-column products it brings with what is held.
    fn split_row_column(&mut self, pair: RowColumnPair) -> anyhow::Result<Split<MatTask>> {
        for operand in pair.operands {
            self.restore(operand)?;
        }
        let kept = |key: BlockKey| {
            self.kept
                .get(&key)
                .ok_or_else(|| anyhow::anyhow!("operand {key:?} never received"))
        };
        let key = |matrix, row, col| BlockKey {
            matrix,
            order: pair.order,
            row,
            col,
        };
        let mut parts = Vec::new();
        let mut whole = Vec::with_capacity(pair.products.len());
        for &(row, col) in &pair.products {
            for l in 0..pair.nb {
                let (a_key, b_key) = (key(0, row, l), key(1, l, col));
                let subs =
                    self.sub_pairs((row, col), (kept(a_key)?, a_key), (kept(b_key)?, b_key))?;
                parts.extend(subs.into_iter().map(MatTask::Pair));
            }
            whole.push(PartialBlock {
                row,
                col,
                c: Matrix::zeros(pair.order),
            });
        }
        Ok(Split {
            parts,
            whole: CBlocks(whole),
        })
    }
}

impl Splitter<MatTask> for BlockSplitter {
    fn split(&mut self, task: MatTask) -> anyhow::Result<Split<MatTask>> {
        let pair = match task {
            MatTask::Pair(pair) => pair,
            MatTask::RowColumn(pair) => return self.split_row_column(pair),
        };
        let (a_key, b_key) = (pair.a.key, pair.b.key);
        let a = self.restore(pair.a)?;
        let b = self.restore(pair.b)?;
        let parts = self.sub_pairs((pair.row, pair.col), (&a, a_key), (&b, b_key))?;
        Ok(Split {
            parts: parts.into_iter().map(MatTask::Pair).collect(),
            whole: CBlocks(vec![PartialBlock {
                row: pair.row,
                col: pair.col,
                c: Matrix::zeros(a.n),
            }]),
        })
    }

    /// Each block of a part adds into its place in the whole block that holds it.
    fn combine(&mut self, whole: &mut CBlocks, part: CBlocks) {
        for part in part.0 {
            let Some(target) = whole.0.iter_mut().find(|w| {
                let r = w.c.n / part.c.n;
                r > 0 && (part.row / r, part.col / r) == (w.row, w.col)
            }) else {
                tracing::warn!(
                    row = part.row,
                    col = part.col,
                    "a part outside its task's blocks: dropped"
                );
                continue;
            };
            let r = target.c.n / part.c.n;
            let (row, col) = (part.row - target.row * r, part.col - target.col * r);
            target.c.add_block(row, col, &part.c);
        }
    }

    fn outbound(&mut self, mut task: MatTask) -> MatTask {
        let operands: Vec<&mut Operand> = match &mut task {
            MatTask::Pair(pair) => vec![&mut pair.a, &mut pair.b],
            MatTask::RowColumn(pair) => pair.operands.iter_mut().collect(),
        };
        for operand in operands {
            if !self.sent.insert(operand.key) {
                operand.block = None;
            }
        }
        task
    }
}

fn main() -> std::process::ExitCode {
    hmw::run_split(
        |s: &Settings| {
            s.check()?;
            Ok(MatMul::new(s))
        },
        |s: &Settings| {
            s.check()?;
            Ok(BlockSplitter {
                sub_b: s.sub_b(),
                kept: HashMap::new(),
                sent: HashSet::new(),
            })
        },
        |matmul, stats| {
            let m = matmul.a.n as f64;
            let gflops = (2.0 * m * m * m - m * m) / stats.wall_s / 1e9;
            let verified = if matmul.a.n <= matmul.verify_up_to {
                (matmul.a.product(&matmul.b).values == matmul.c.values).to_string()
            } else {
                "skipped".to_string()
            };
            println!(
                "matmul m={} b={} tasks={} verified={verified} makespan_s={:.3} gflops={gflops:.3}",
                matmul.a.n, matmul.block, stats.tasks, stats.wall_s
            );
            let (task_bytes, result_bytes) = matmul.sizes();
            println!("matmul sizes: task_bytes={task_bytes} result_bytes={result_bytes}");
            for line in stabilise::report(&matmul.pairs_done, matmul.last_block_done_s) {
                println!("{line}");
            }
            anyhow::ensure!(
                verified != "false",
                "the product differs from the direct one"
            );
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(m: usize, b: usize, sub_b: Option<usize>) -> Settings {
        Settings {
            m,
            b,
            sub_b,
            row_column: vec!["spain".into()],
            ..Settings::default()
        }
    }

    fn worker() -> WorkerContext {
        WorkerContext::localhost()
    }

    /// Every pair of a run where `spain` alone asks, through its link and its sub-master:
    /// the k-th makes the `2k - 1` products' block pairs, and C comes out right.
    fn through_a_link(sub_b: Option<usize>) {
        let s = settings(64, 16, sub_b);
        let nb = s.m / s.b;
        let per_product = nb * (s.b / s.sub_b()).pow(3);
        let mut matmul = MatMul::new(&s);
        let mut link = BlockSplitter {
            sub_b: s.sub_b(),
            kept: HashMap::new(),
            sent: HashSet::new(),
        };
        let mut far = BlockSplitter {
            sub_b: s.sub_b(),
            kept: HashMap::new(),
            sent: HashSet::new(),
        };
        for (id, k) in (1..=nb).enumerate() {
            let Handout::Task(task) = matmul.next_task_for(Recipient::Cluster("spain")) else {
                panic!("no pair {k}");
            };
            let crossing = link.outbound(task);
            if let MatTask::RowColumn(pair) = &crossing {
                // Only the new row and column cross: 2 * nb blocks.
                let carried = pair.operands.iter().filter(|o| o.block.is_some()).count();
                assert_eq!(carried, 2 * nb, "pair {k}");
            } else {
                panic!("a block pair went to a row/column cluster");
            }
            let split = far.split(crossing).unwrap();
            assert_eq!(split.parts.len(), (2 * k - 1) * per_product, "pair {k}");
            let mut whole = split.whole;
            for part in split.parts {
                far.combine(&mut whole, part.execute(&worker()));
            }
            assert_eq!(whole.0.len(), 2 * k - 1);
            matmul.gather(id as TaskId, whole);
        }
        assert!(matches!(
            matmul.next_task_for(Recipient::Worker),
            Handout::Finished
        ));
        assert_eq!(matmul.pairs_done.len(), nb);
        assert!(matmul.a.product(&matmul.b).values == matmul.c.values);
    }

    #[test]
    fn the_k_th_row_column_pair_makes_2k_minus_1_products_at_the_far_side() {
        through_a_link(None);
        through_a_link(Some(8));
    }

    #[test]
    fn workers_and_a_row_column_cluster_share_c_and_a_pair_can_run_whole() {
        let s = settings(64, 16, None);
        let mut matmul = MatMul::new(&s);
        let mut id = 0;
        let mut turn = 0;
        loop {
            turn += 1;
            let to = if turn % 5 == 0 {
                Recipient::Cluster("spain")
            } else {
                Recipient::Worker
            };
            match matmul.next_task_for(to) {
                // A pair computed whole on a worker, as when its cluster is lost.
                Handout::Task(task) => matmul.gather(id, task.execute(&worker())),
                Handout::Withheld => continue,
                Handout::Finished => break,
            }
            id += 1;
        }
        assert!(!matmul.pairs_done.is_empty());
        assert!(matmul.a.product(&matmul.b).values == matmul.c.values);
    }

    /// Spain is lost holding its first three pairs: each gives way to the block pairs of its
    /// products (`M/B` per product), which the workers compute with the rest; C comes out
    /// right, and the lost pairs are not counted as spain's.
    #[test]
    fn pairs_of_a_lost_cluster_go_back_as_block_pairs() {
        let s = settings(64, 16, None);
        let nb = s.m / s.b;
        let mut matmul = MatMul::new(&s);
        let mut taken = Vec::new();
        for k in 1..=3 {
            let Handout::Task(task) = matmul.next_task_for(Recipient::Cluster("spain")) else {
                panic!("no pair {k}");
            };
            taken.push((k as TaskId - 1, task));
        }
        let mut id = taken.len() as TaskId;
        let mut parts = Vec::new();
        for (pair_id, task) in &taken {
            let MatTask::RowColumn(pair) = task else {
                panic!("a block pair went to a row/column cluster");
            };
            let replacing = matmul
                .redivide(*pair_id, task)
                .expect("a pair is redivided");
            assert_eq!(replacing.len(), pair.products.len() * nb);
            assert!(replacing.iter().all(|t| matches!(t, MatTask::Pair(_))));
            parts.extend(replacing);
        }
        // 1 + 3 + 5 products of 4 block pairs each.
        assert_eq!(parts.len(), 9 * nb);
        for part in parts {
            matmul.gather(id, part.execute(&worker()));
            id += 1;
        }
        while let Some(task) = matmul.next_task() {
            assert!(matches!(task, MatTask::Pair(_)));
            matmul.gather(id, task.execute(&worker()));
            id += 1;
        }
        assert_eq!(matmul.produced, id);
        assert!(matmul.pairs_out.is_empty() && matmul.pairs_done.is_empty());
        assert!(matmul.a.product(&matmul.b).values == matmul.c.values);
        // A block pair goes whole.
        let mut fresh = MatMul::new(&s);
        let block = fresh.next_task().unwrap();
        assert!(fresh.redivide(0, &block).is_none());
    }

    #[test]
    fn without_row_column_clusters_everyone_gets_block_pairs() {
        let s = Settings {
            m: 32,
            b: 8,
            ..Settings::default()
        };
        let mut matmul = MatMul::new(&s);
        let mut tasks = 0;
        while let Some(task) = matmul.next_task() {
            assert!(matches!(task, MatTask::Pair(_)));
            matmul.gather(tasks, task.execute(&worker()));
            tasks += 1;
        }
        assert_eq!(Some(tasks), matmul.task_count());
        assert!(matmul.a.product(&matmul.b).values == matmul.c.values);
    }
}
