//! Blocked matrix multiplication C = A x B of M x M matrices in B x B blocks.
//!
//! A task is a pair of blocks (A[i][k], B[k][j]); its result is their product, a partial
//! C[i][j]; the master joins results by summing them into C. For sizes where it is cheap the
//! product is checked against a direct one.
//!
//! Across clusters, a splitter ([`BlockSplitter`]) lets an external cluster work at a finer
//! grain (`sub_b`) than the tasks that cross the WAN, and sends each operand block across a
//! link once: the far sub-master keeps what it received.

use std::collections::{HashMap, HashSet};

use hmw::{Problem, Split, Splitter, Task, TaskId, TaskResult, WorkerContext};
use serde::{Deserialize, Serialize};

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
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            m: 512,
            b: 128,
            sub_b: None,
            verify_up_to: 1024,
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

/// Row-major square matrix.
#[derive(Clone, Serialize, Deserialize)]
struct Matrix {
    n: usize,
    values: Vec<f64>,
}

impl Matrix {
    fn zeros(n: usize) -> Self {
        Matrix {
            n,
            values: vec![0.0; n * n],
        }
    }

    /// A deterministic matrix with small integer entries, so sums are exact.
    fn sample(n: usize, seed: usize) -> Self {
        let values = (0..n * n)
            .map(|x| ((x * 7 + seed * 13) % 11) as f64 - 5.0)
            .collect();
        Matrix { n, values }
    }

    fn block(&self, row: usize, col: usize, b: usize) -> Matrix {
        let mut block = Matrix::zeros(b);
        for r in 0..b {
            let start = (row * b + r) * self.n + col * b;
            block.values[r * b..(r + 1) * b].copy_from_slice(&self.values[start..start + b]);
        }
        block
    }

    fn add_block(&mut self, row: usize, col: usize, block: &Matrix) {
        let b = block.n;
        for r in 0..b {
            let start = (row * b + r) * self.n + col * b;
            for (c, v) in self.values[start..start + b]
                .iter_mut()
                .zip(&block.values[r * b..])
            {
                *c += v;
            }
        }
    }

    /// Cache-friendly i-k-j product.
    fn product(&self, other: &Matrix) -> Matrix {
        let n = self.n;
        let mut out = Matrix::zeros(n);
        for i in 0..n {
            for k in 0..n {
                let a = self.values[i * n + k];
                let row = &other.values[k * n..(k + 1) * n];
                for (o, b) in out.values[i * n..(i + 1) * n].iter_mut().zip(row) {
                    *o += a * b;
                }
            }
        }
        out
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

    fn values(&self) -> &Matrix {
        self.block.as_ref().expect(
            "a worker's operands are complete: the sub-master puts back what a link left out",
        )
    }
}

#[derive(Serialize, Deserialize)]
struct BlockPair {
    /// The C block it contributes to.
    row: usize,
    col: usize,
    a: Operand,
    b: Operand,
}

#[derive(Serialize, Deserialize)]
struct PartialBlock {
    row: usize,
    col: usize,
    c: Matrix,
}

impl Task for BlockPair {
    type Output = PartialBlock;

    fn execute(self, _worker: &WorkerContext) -> PartialBlock {
        PartialBlock {
            row: self.row,
            col: self.col,
            c: self.a.values().product(self.b.values()),
        }
    }

    /// Floating-point operations of a B x B block product: 2B^3 - B^2.
    fn operations(&self) -> f64 {
        let b = self.a.key.order as f64;
        2.0 * b * b * b - b * b
    }
}

impl TaskResult for PartialBlock {
    /// Partial products of the same C block add up; those of different blocks do not join.
    fn join(&mut self, other: PartialBlock) -> Result<(), PartialBlock> {
        if (self.row, self.col) != (other.row, other.col) {
            return Err(other);
        }
        for (c, o) in self.c.values.iter_mut().zip(other.c.values) {
            *c += o;
        }
        Ok(())
    }
}

struct MatMul {
    a: Matrix,
    b: Matrix,
    c: Matrix,
    block: usize,
    next: usize,
    verify_up_to: usize,
}

impl MatMul {
    fn blocks(&self) -> usize {
        self.a.n / self.block
    }
}

impl Problem for MatMul {
    type Task = BlockPair;

    fn next_task(&mut self) -> Option<BlockPair> {
        let nb = self.blocks();
        (self.next < nb * nb * nb).then(|| {
            let (i, j, k) = (self.next / (nb * nb), self.next / nb % nb, self.next % nb);
            self.next += 1;
            let key = |matrix, row, col| BlockKey {
                matrix,
                order: self.block,
                row,
                col,
            };
            BlockPair {
                row: i,
                col: j,
                a: Operand::of(&self.a, key(0, i, k)),
                b: Operand::of(&self.b, key(1, k, j)),
            }
        })
    }

    fn gather(&mut self, _id: TaskId, result: PartialBlock) {
        self.c.add_block(result.row, result.col, &result.c);
    }

    fn task_count(&self) -> Option<u64> {
        Some(self.blocks().pow(3) as u64)
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

impl Splitter<BlockPair> for BlockSplitter {
    fn split(&mut self, pair: BlockPair) -> anyhow::Result<Split<BlockPair>> {
        let (a_key, b_key) = (pair.a.key, pair.b.key);
        let a = self.restore(pair.a)?;
        let b = self.restore(pair.b)?;
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
                        row: pair.row * r + i,
                        col: pair.col * r + j,
                        a: Operand {
                            key: sub_key(a_key, i, k),
                            block: Some(a.block(i, k, s)),
                        },
                        b: Operand {
                            key: sub_key(b_key, k, j),
                            block: Some(b.block(k, j, s)),
                        },
                    });
                }
            }
        }
        Ok(Split {
            parts,
            whole: PartialBlock {
                row: pair.row,
                col: pair.col,
                c: Matrix::zeros(n),
            },
        })
    }

    /// A part's product adds into its place in the whole block.
    fn combine(&mut self, whole: &mut PartialBlock, part: PartialBlock) {
        let r = whole.c.n / part.c.n;
        whole
            .c
            .add_block(part.row - whole.row * r, part.col - whole.col * r, &part.c);
    }

    fn outbound(&mut self, mut pair: BlockPair) -> BlockPair {
        for operand in [&mut pair.a, &mut pair.b] {
            if !self.sent.insert(operand.key) {
                operand.block = None;
            }
        }
        pair
    }
}

fn main() -> std::process::ExitCode {
    hmw::run_split(
        |s: &Settings| {
            s.check()?;
            Ok(MatMul {
                a: Matrix::sample(s.m, 1),
                b: Matrix::sample(s.m, 2),
                c: Matrix::zeros(s.m),
                block: s.b,
                next: 0,
                verify_up_to: s.verify_up_to,
            })
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
            anyhow::ensure!(
                verified != "false",
                "the product differs from the direct one"
            );
            Ok(())
        },
    )
}
