//! Row-major square matrices of f64, and their blocks.

use serde::{Deserialize, Serialize};

/// Row-major square matrix.
#[derive(Clone, Serialize, Deserialize)]
pub struct Matrix {
    pub n: usize,
    pub values: Vec<f64>,
}

impl Matrix {
    pub fn zeros(n: usize) -> Self {
        Matrix {
            n,
            values: vec![0.0; n * n],
        }
    }

    /// A deterministic matrix with small integer entries, so sums are exact.
    pub fn sample(n: usize, seed: usize) -> Self {
        let values = (0..n * n)
            .map(|x| ((x * 7 + seed * 13) % 11) as f64 - 5.0)
            .collect();
        Matrix { n, values }
    }

    pub fn block(&self, row: usize, col: usize, b: usize) -> Matrix {
        let mut block = Matrix::zeros(b);
        for r in 0..b {
            let start = (row * b + r) * self.n + col * b;
            block.values[r * b..(r + 1) * b].copy_from_slice(&self.values[start..start + b]);
        }
        block
    }

    pub fn add_block(&mut self, row: usize, col: usize, block: &Matrix) {
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
    pub fn product(&self, other: &Matrix) -> Matrix {
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
