//! Blocked matrix multiplication C = A x B of M x M matrices in B x B blocks.
//!
//! A task is a pair of blocks (A[i][k], B[k][j]); its result is their product, a partial
//! C[i][j]; the master joins results by summing them into C. For sizes where it is cheap the
//! product is checked against a direct one.

use hmw::{Problem, Task, TaskId, TaskResult, WorkerContext};
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Settings {
    /// Matrix order M.
    m: usize,
    /// Block order B (divides M).
    b: usize,
    /// Check against a direct product when M is at most this.
    verify_up_to: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            m: 512,
            b: 128,
            verify_up_to: 1024,
        }
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

#[derive(Serialize, Deserialize)]
struct BlockPair {
    row: usize,
    col: usize,
    a: Matrix,
    b: Matrix,
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
            c: self.a.product(&self.b),
        }
    }

    /// Floating-point operations of a B x B block product: 2B^3 - B^2.
    fn operations(&self) -> f64 {
        let b = self.a.n as f64;
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
            BlockPair {
                row: i,
                col: j,
                a: self.a.block(i, k, self.block),
                b: self.b.block(k, j, self.block),
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

fn main() -> std::process::ExitCode {
    hmw::run(
        |s: &Settings| {
            anyhow::ensure!(
                s.b > 0 && s.m.is_multiple_of(s.b),
                "[application] b = {} must divide m = {}",
                s.b,
                s.m
            );
            Ok(MatMul {
                a: Matrix::sample(s.m, 1),
                b: Matrix::sample(s.m, 2),
                c: Matrix::zeros(s.m),
                block: s.b,
                next: 0,
                verify_up_to: s.verify_up_to,
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
