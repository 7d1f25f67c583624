//! The matrix product's row/column strategy (`docs/model.md` section 7, equations (74)-(80) of
//! the thesis, continued by (95)).
//!
//! An external cluster receives whole rows and columns of blocks of an `M x M` product in
//! `B x B` blocks (`alpha` bytes per element) and keeps them. The `RC`-th row/column pair to
//! arrive makes `2*RC - 1` new row-by-column products possible, each of `M/B` block products:
//! the work an inter-cluster task brings grows along the run, so the cluster starts WAN-in
//! bound and becomes computation bound from a row/column on.

/// The shape of the product: `M x M` matrices in `B x B` blocks of `alpha`-byte elements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowColumnShape {
    /// `M`, the matrices' order.
    pub order: f64,
    /// `B`, the blocks' order.
    pub block: f64,
    /// `alpha`, bytes per element.
    pub element_bytes: f64,
}

impl RowColumnShape {
    /// Equation (74): `Oper_inter(RC) = 2*(RC-1) * M * (2*B^2 - B)`, the basic operations the
    /// `RC`-th row/column pair is credited with: per byte of the pair (75), `(RC-1)*(2B-1)/alpha`,
    /// the WAN-in argument of (78). (Each row-by-column product is `M/B` block products of
    /// `2*B^3 - B^2` operations, `M*(2*B^2 - B)` (77).)
    pub fn inter_task_operations(&self, row_column: u64) -> f64 {
        let (m, b) = (self.order, self.block);
        2.0 * (row_column.max(1) - 1) as f64 * m * (2.0 * b * b - b)
    }

    /// Equation (75): `S_task = 2*alpha*M*B`, the bytes of one row/column pair.
    pub fn inter_task_bytes(&self) -> f64 {
        2.0 * self.element_bytes * self.order * self.block
    }

    /// Equation (76): `S_result = alpha*B^2`, the bytes of one finished block.
    pub fn result_bytes(&self) -> f64 {
        self.element_bytes * self.block * self.block
    }

    /// Equation (77): `M*(2*B^2 - B)`, the basic operations one finished block is worth (its
    /// row by its column: `M/B` block products of `2*B^3 - B^2`).
    pub fn result_operations(&self) -> f64 {
        self.order * (2.0 * self.block * self.block - self.block)
    }

    /// Equation (78): the cluster's steady performance while the `RC`-th pair arrives,
    /// `min(CPerf_avail, (2B-1)*TPut_LAN/(3 alpha), (RC-1)*(2B-1)*TPut_in/alpha,
    /// M*(2B-1)*TPut_out/(alpha*B))`.
    pub fn steady_performance(
        &self,
        row_column: u64,
        available_performance: f64,
        lan_bytes_per_s: f64,
        wan_in_bytes_per_s: f64,
        wan_out_bytes_per_s: f64,
    ) -> f64 {
        self.plateau(available_performance, lan_bytes_per_s, wan_out_bytes_per_s)
            .performance
            .min(self.wan_in_limit(row_column, wan_in_bytes_per_s))
    }

    /// Equation (101) (this project's): the arguments of (78) that do not depend on `RC`,
    /// `min(CPerf_avail, (2B-1)*TPut_LAN/(3 alpha), M*(2B-1)*TPut_out/(alpha*B))`: the
    /// performance (78) climbs to, and what bounds it there.
    pub fn plateau(
        &self,
        available_performance: f64,
        lan_bytes_per_s: f64,
        wan_out_bytes_per_s: f64,
    ) -> Plateau {
        let (m, b, alpha) = (self.order, self.block, self.element_bytes);
        let lan = (2.0 * b - 1.0) * lan_bytes_per_s / (3.0 * alpha);
        let wan_out = m * (2.0 * b - 1.0) * wan_out_bytes_per_s / (alpha * b);
        [
            (available_performance, Bound::Computation),
            (lan, Bound::Lan),
            (wan_out, Bound::WanOut),
        ]
        .into_iter()
        .min_by(|x, y| x.0.total_cmp(&y.0))
        .map(|(performance, bound)| Plateau { performance, bound })
        .expect("three arguments")
    }

    /// The WAN-in argument of (78), `(RC-1)*(2B-1)*TPut_in/alpha`.
    pub fn wan_in_limit(&self, row_column: u64, wan_in_bytes_per_s: f64) -> f64 {
        (row_column.max(1) - 1) as f64 * (2.0 * self.block - 1.0) * wan_in_bytes_per_s
            / self.element_bytes
    }

    /// Equation (80): the first row/column from which the cluster is no longer WAN-in bound,
    /// the smallest whole `RC` with `(RC-1)*(2B-1)*TPut_in/alpha >= CPerf_avail`, that is
    /// `ceil(1 + CPerf_avail*alpha/((2B-1)*TPut_in))`. The thesis's example (M = 10,000,
    /// B = 400, alpha = 8, CPerf_avail = 56.939e6 operations/s, `(2B-1)*TPut_in/alpha =
    /// 11.035e6`) gives `RC >= 6.16`: the 7th. `None` when no finite number of pairs gets
    /// there (no WAN throughput). Given the plateau of (101) in place of `CPerf_avail`, the
    /// first row/column from which (78) stops climbing (101).
    pub fn stabilising_row_column(
        &self,
        available_performance: f64,
        wan_in_bytes_per_s: f64,
    ) -> Option<u64> {
        let per_pair = (2.0 * self.block - 1.0) * wan_in_bytes_per_s / self.element_bytes;
        let bound = 1.0 + available_performance / per_pair;
        (bound.is_finite() && bound >= 1.0).then(|| bound.ceil().max(1.0) as u64)
    }

    /// Equation (95) (this project's): the startup of the strategy, the time until the
    /// stabilising row/column (80) has crossed the WAN, `RC* * S_task / TPut_in` (75): the
    /// pairs go one after another at the WAN's rate, and before the `RC*`-th has arrived the
    /// cluster computes below its available performance.
    pub fn startup_time(&self, stabilising_row_column: u64, wan_in_bytes_per_s: f64) -> f64 {
        stabilising_row_column as f64 * self.inter_task_bytes() / wan_in_bytes_per_s
    }
}

/// What bounds the row/column strategy's plateau (101).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The cluster's available performance: computation bound, as (80) assumes.
    Computation,
    /// Its LAN, which carries three blocks per block product.
    Lan,
    /// Its WAN out, which carries the finished blocks.
    WanOut,
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Bound::Computation => "computation",
            Bound::Lan => "LAN",
            Bound::WanOut => "WAN-out",
        })
    }
}

/// The performance (78) climbs to as row/column pairs arrive (101), and what bounds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plateau {
    /// Operations per second.
    pub performance: f64,
    /// The argument of (78) that gives it.
    pub bound: Bound,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thesis's example (section 7 of the specification).
    fn thesis() -> RowColumnShape {
        RowColumnShape {
            order: 10_000.0,
            block: 400.0,
            element_bytes: 8.0,
        }
    }

    #[test]
    fn the_thesis_example_stabilises_at_the_seventh_row_column() {
        let shape = thesis();
        // (2B-1)*TPut_in/alpha = 11.035e6 operations/s per pair.
        let wan_in = 11.035e6 * 8.0 / 799.0;
        assert!((shape.wan_in_limit(2, wan_in) - 11.035e6).abs() < 1.0);
        let bound: f64 = 1.0 + 56.939e6 / 11.035e6;
        assert!((bound - 6.16).abs() < 0.01, "{bound}");
        assert_eq!(shape.stabilising_row_column(56.939e6, wan_in), Some(7));
        // From the 7th on, the WAN-in argument no longer limits (78).
        let perf = |rc| shape.steady_performance(rc, 56.939e6, 1e12, wan_in, 1e12);
        assert!(perf(6) < 56.939e6);
        assert_eq!(perf(7), 56.939e6);
    }

    #[test]
    fn sizes_and_operations_follow_the_shape() {
        let shape = thesis();
        assert_eq!(shape.inter_task_bytes(), 2.0 * 8.0 * 10_000.0 * 400.0);
        assert_eq!(shape.result_bytes(), 8.0 * 400.0 * 400.0);
        assert_eq!(
            shape.result_operations(),
            10_000.0 * (2.0 * 400.0 * 400.0 - 400.0)
        );
        // (74) over (75) is (78)'s WAN-in argument per byte per second.
        assert_eq!(shape.inter_task_operations(1), 0.0);
        let per_byte = shape.inter_task_operations(4) / shape.inter_task_bytes();
        assert!((per_byte - shape.wan_in_limit(4, 1.0)).abs() < 1e-9 * per_byte);
        assert_eq!(
            shape.inter_task_operations(4),
            6.0 * shape.result_operations()
        );
        // Startup (95): seven pairs at the WAN's rate.
        let wan_in = 1e6;
        assert_eq!(
            shape.startup_time(7, wan_in),
            7.0 * shape.inter_task_bytes() / wan_in
        );
        assert_eq!(shape.stabilising_row_column(1e6, 0.0), None);
    }

    /// (101): with a LAN of (2B-1)*TPut_LAN/(3 alpha) = 22.07e6 op/s below CPerf_avail, (78)
    /// stops climbing at the first RC whose WAN-in argument reaches it, (80) with the
    /// plateau: 1 + 22.07/11.035 = 3, the 3rd; computation bound, it is (80)'s 7th.
    #[test]
    fn a_lan_below_the_workers_stops_the_climb_earlier() {
        let shape = thesis();
        let wan_in = 11.035e6 * 8.0 / 799.0;
        let lan = 22.07e6 * 3.0 * 8.0 / 799.0;
        let plateau = shape.plateau(56.939e6, lan, 1e12);
        assert_eq!(plateau.bound, Bound::Lan);
        assert!((plateau.performance - 22.07e6).abs() < 1.0);
        assert_eq!(
            shape.stabilising_row_column(plateau.performance, wan_in),
            Some(3)
        );
        let perf = |rc| shape.steady_performance(rc, 56.939e6, lan, wan_in, 1e12);
        assert!(perf(2) < perf(3) && perf(3) == perf(4));
        let computing = shape.plateau(56.939e6, 1e12, 1e12);
        assert_eq!(
            (computing.bound, computing.performance),
            (Bound::Computation, 56.939e6)
        );
    }
}
