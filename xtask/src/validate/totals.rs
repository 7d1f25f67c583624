//! The totals over the counted scenarios, and the suite's three last lines.

use super::keyvalue::Count;
use super::numbers::abs_median_max;
use super::row::Row;

/// The totals over the counted scenarios (a cluster counted in another's line, down a tree,
/// is not compared on its own).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Totals {
    /// Counted scenarios.
    pub(crate) scenarios: u64,
    /// Those inside their tolerance.
    pub(crate) inside: u64,
    /// Clusters' shares within 5 points, over runs of several clusters only.
    pub(crate) shares_within: Count,
    /// Clusters' busy efficiencies within 5 points.
    pub(crate) eff_within: Count,
    /// Scenarios whose application computes.
    pub(crate) real_compute: u64,
    /// Every counted scenario's prediction used a calibration measured before its runs.
    pub(crate) calibrated: bool,
    /// Scenarios whose runs had a model-derived cap.
    pub(crate) capped: u64,
    /// The median absolute error, by each scenario's predictor (`%.4f`).
    pub(crate) median_err: String,
    /// The largest.
    pub(crate) max_err: String,
    /// The median of the band widths.
    pub(crate) band_width_median: String,
    /// The simulation's median absolute error.
    pub(crate) sim_median_err: String,
    /// Its largest.
    pub(crate) sim_max_err: String,
    /// Scenarios where the simulation is within its target.
    pub(crate) sim_within: u64,
    /// Scenarios where the closed form misses by more than 3 %.
    pub(crate) closed_misses: u64,
    /// Of those, the ones where the simulation is closer.
    pub(crate) sim_closer: u64,
    /// The testbed scenarios' median absolute error, raw and at their calibrations' speed
    /// (when some were scaled).
    pub(crate) testbed: Option<(String, String)>,
    /// With `contention = "mva"`: those inside their tolerance, by each scenario's predictor.
    pub(crate) mva_inside: u64,
    /// Its median absolute error, by each scenario's predictor (`%.4f`).
    pub(crate) mva_median_err: String,
    /// The scenarios where it selects other workers than the runs used.
    pub(crate) mva_other_workers: u64,
}

impl Totals {
    /// The totals of `rows`.
    pub(crate) fn of(rows: &[Row]) -> Totals {
        let counted: Vec<&Row> = rows.iter().filter(|r| r.counted).collect();
        let mut totals = Totals {
            scenarios: counted.len() as u64,
            inside: 0,
            shares_within: Count::default(),
            eff_within: Count::default(),
            real_compute: 0,
            calibrated: !counted.is_empty(),
            capped: 0,
            median_err: String::new(),
            max_err: String::new(),
            band_width_median: String::new(),
            sim_median_err: String::new(),
            sim_max_err: String::new(),
            sim_within: 0,
            closed_misses: 0,
            sim_closer: 0,
            testbed: None,
            mva_inside: 0,
            mva_median_err: String::new(),
            mva_other_workers: 0,
        };
        let (mut errors, mut sim_errors, mut widths) = (Vec::new(), Vec::new(), Vec::new());
        let mut mva_errors = Vec::new();
        let (mut testbed_errors, mut scaled_errors) = (Vec::new(), Vec::new());
        for row in counted {
            totals.inside += u64::from(row.judged_inside());
            let eff = row.judged_clusters_eff_within();
            totals.eff_within.passed += eff.passed;
            totals.eff_within.of += eff.of;
            // A single cluster's share is the whole run: only runs of several clusters count.
            let shares = row.judged_shares_within();
            if shares.of > 1 {
                totals.shares_within.passed += shares.passed;
                totals.shares_within.of += shares.of;
            }
            totals.real_compute += u64::from(row.real_compute);
            totals.capped += u64::from(row.capped);
            totals.calibrated &= row.calibrated;
            errors.push(row.judged_err().clone());
            totals.mva_inside += u64::from(row.judged_mva_inside());
            mva_errors.push(row.judged_mva_err().clone());
            totals.mva_other_workers += u64::from(row.mva.other_workers);
            sim_errors.push(row.sim_err.clone());
            totals.sim_within += u64::from(row.sim_within);
            widths.push(row.judged_band_width().clone());
            if let Some(scaled) = &row.scaled_err {
                testbed_errors.push(row.summary.err.clone());
                scaled_errors.push(scaled.clone());
            }
            // Where the closed form misses by more than 3 %: is the simulator closer?
            let (e, s) = (row.summary.err.value(), row.sim_err.value());
            if e > 0.03 || -e > 0.03 {
                totals.closed_misses += 1;
                totals.sim_closer += u64::from(s.abs() < e.abs());
            }
        }
        (totals.median_err, totals.max_err) = abs_median_max(&errors);
        (totals.sim_median_err, totals.sim_max_err) = abs_median_max(&sim_errors);
        totals.mva_median_err = abs_median_max(&mva_errors).0;
        totals.band_width_median = abs_median_max(&widths).0;
        if !scaled_errors.is_empty() {
            totals.testbed = Some((
                abs_median_max(&testbed_errors).0,
                abs_median_max(&scaled_errors).0,
            ));
        }
        totals
    }

    /// The network's rate (`contention = "mva"`) predicts the same runs no worse than the
    /// bottleneck formulas': a median absolute error no larger (as printed) and as many
    /// scenarios inside or more; false when there is no median (no counted scenario).
    pub(crate) fn mva_no_worse(&self) -> bool {
        let median = |text: &str| text.parse::<f64>().unwrap_or(f64::NAN);
        median(&self.mva_median_err) <= median(&self.median_err) && self.mva_inside >= self.inside
    }

    /// `contention mva_median_err=E1 mva_inside=K1/N bottleneck_median_err=E2
    /// bottleneck_inside=K2/N mva_no_worse=B mva_other_workers=W`: the two contention
    /// models on the same runs (the bottleneck's figures are the last line's).
    pub(crate) fn contention_line(&self) -> String {
        format!(
            "contention mva_median_err={} mva_inside={}/{n} bottleneck_median_err={} \
             bottleneck_inside={}/{n} mva_no_worse={} mva_other_workers={}",
            self.mva_median_err,
            self.mva_inside,
            self.median_err,
            self.inside,
            self.mva_no_worse(),
            self.mva_other_workers,
            n = self.scenarios
        )
    }

    /// `simulation sim_median_err=X sim_max_err=Y sim_within=J/N sim_closer=K/M`.
    pub(crate) fn simulation_line(&self) -> String {
        format!(
            "simulation sim_median_err={} sim_max_err={} sim_within={}/{} sim_closer={}/{}",
            self.sim_median_err,
            self.sim_max_err,
            self.sim_within,
            self.scenarios,
            self.sim_closer,
            self.closed_misses
        )
    }

    /// `validation scenarios=N inside=K median_err=E max_err=M shares_within=S/T
    /// eff_within=U/T real_compute=R calibrated=B capped=C band_width_median=W`.
    pub(crate) fn validation_line(&self) -> String {
        format!(
            "validation scenarios={} inside={} median_err={} max_err={} shares_within={} eff_within={} \
             real_compute={} calibrated={} capped={} band_width_median={}",
            self.scenarios,
            self.inside,
            self.median_err,
            self.max_err,
            self.shares_within,
            self.eff_within,
            self.real_compute,
            self.calibrated,
            self.capped,
            self.band_width_median
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::numbers::Figure;
    use crate::validate::row::fixture::{report, row};
    use crate::validate::row::SimulationVerdict;
    use crate::validate::tools::Simulated;

    fn rows() -> Vec<Row> {
        let mut two = row(
            "two-clusters",
            &report("6.097", "6.055", "6.155", "-0.0010"),
        );
        two.summary.shares_within = Count { passed: 2, of: 2 };
        two.summary.clusters_eff_within = Count { passed: 1, of: 2 };
        let mut tb = row(
            "tb-tsp-hetero",
            &report("1.125", "1.274", "1.305", "-0.1276"),
        );
        tb.summary.inside = false;
        tb.real_compute = true;
        tb.sim_err = Figure::parse("-0.1329").unwrap();
        tb.sim_within = false;
        tb.scaled_err = Figure::parse("-0.0213");
        let mut outage = row(
            "wan-outage",
            &report("15.671", "12.062", "12.162", "0.2938"),
        );
        outage.summary.inside = false;
        outage.sim_err = Figure::parse("0.0064").unwrap();
        let simulated = Simulated::from_output(
            "simulate runs=3 median_s=15.5710 min_s=15.5000 max_s=15.6000 events=1 wall_s=0.1\n",
        )
        .unwrap();
        outage.simulation = Some(SimulationVerdict::new(
            &outage.summary.makespan_s,
            &simulated,
            (Count { passed: 1, of: 2 }, Count { passed: 2, of: 2 }),
        ));
        let mut capped = row(
            "two-clusters-capped",
            &report("6.110", "6.056", "6.156", "0.0010"),
        );
        capped.counted = false;
        capped.capped = true;
        vec![two, tb, outage, capped]
    }

    /// `row`'s prediction with `contention = "mva"`: its error and whether it is inside.
    fn mva(row: &mut Row, err: &str, inside: bool) {
        row.mva.summary.err = Figure::parse(err).unwrap();
        row.mva.summary.inside = inside;
    }

    #[test]
    fn the_two_contention_models_over_the_same_runs() {
        let mut rows = rows();
        mva(&mut rows[0], "-0.0200", true);
        mva(&mut rows[1], "-0.0400", true);
        rows[1].mva.other_workers = true;
        // wan-outage is judged by the simulation under both; two-clusters-capped not counted.
        mva(&mut rows[2], "0.5000", false);
        mva(&mut rows[3], "0.9000", false);
        rows[3].mva.other_workers = true;
        let totals = Totals::of(&rows);
        // |errors| 0.0200, 0.0400 and the simulation's 0.0064: more inside, a larger median.
        assert_eq!(
            totals.contention_line(),
            "contention mva_median_err=0.0200 mva_inside=3/3 bottleneck_median_err=0.0064 \
             bottleneck_inside=2/3 mva_no_worse=false mva_other_workers=1"
        );
        // The bottleneck's figures are the last line's.
        assert!(totals
            .validation_line()
            .contains(" inside=2 median_err=0.0064 "));
        // As good on both counts is no worse.
        let mut rows = self::rows();
        mva(&mut rows[1], "-0.1276", false);
        let totals = Totals::of(&rows);
        assert!(totals.mva_no_worse());
        assert!(totals.contention_line().contains(
            "mva_median_err=0.0064 mva_inside=2/3 bottleneck_median_err=0.0064 bottleneck_inside=2/3 mva_no_worse=true"
        ));
        // A smaller error but one scenario fewer inside is worse.
        mva(&mut rows[0], "0.0009", false);
        let totals = Totals::of(&rows);
        assert_eq!(
            (totals.mva_median_err.as_str(), totals.mva_inside),
            ("0.0064", 1)
        );
        assert!(!totals.mva_no_worse());
        // The same count inside and a smaller median is no worse.
        mva(&mut rows[0], "0.0009", true);
        mva(&mut rows[1], "-0.0030", false);
        let totals = Totals::of(&rows);
        assert_eq!(totals.mva_median_err, "0.0030");
        assert!(totals.mva_no_worse());
    }

    #[test]
    fn totals_over_the_counted_scenarios() {
        let totals = Totals::of(&rows());
        assert_eq!(totals.scenarios, 3);
        // two-clusters by the closed form; wan-outage by the simulation.
        assert_eq!(totals.inside, 2);
        // Shares: 2/2 and the simulation's 1/2; tb-tsp-hetero's single cluster is not counted.
        assert_eq!(totals.shares_within, Count { passed: 3, of: 4 });
        assert_eq!(totals.eff_within, Count { passed: 4, of: 5 });
        assert_eq!((totals.real_compute, totals.capped), (1, 0));
        assert!(totals.calibrated);
        // |errors| 0.0010, 0.1276 and the simulation's 0.0064.
        assert_eq!(
            (totals.median_err.as_str(), totals.max_err.as_str()),
            ("0.0064", "0.1276")
        );
        // Band widths 0.0150, 0.0150 and the simulation's 0.0065.
        assert_eq!(totals.band_width_median, "0.0150");
        // The closed form misses tb-tsp-hetero (simulated -0.1329: not closer) and
        // wan-outage (simulated 0.0064: closer).
        assert_eq!((totals.closed_misses, totals.sim_closer), (2, 1));
        assert_eq!(
            totals.testbed,
            Some(("0.1276".to_owned(), "0.0213".to_owned()))
        );
        assert_eq!(
            totals.simulation_line(),
            "simulation sim_median_err=0.0064 sim_max_err=0.1329 sim_within=2/3 sim_closer=1/2"
        );
        assert_eq!(
            totals.validation_line(),
            "validation scenarios=3 inside=2 median_err=0.0064 max_err=0.1276 shares_within=3/4 \
             eff_within=4/5 real_compute=1 calibrated=true capped=0 band_width_median=0.0150"
        );
    }

    #[test]
    fn no_counted_scenario() {
        let mut rows = rows();
        rows.iter_mut().for_each(|r| r.counted = false);
        let totals = Totals::of(&rows);
        assert!(!totals.calibrated);
        assert_eq!(
            totals.validation_line(),
            "validation scenarios=0 inside=0 median_err=nan max_err=nan shares_within=0/0 \
             eff_within=0/0 real_compute=0 calibrated=false capped=0 band_width_median=nan"
        );
        assert_eq!(
            totals.simulation_line(),
            "simulation sim_median_err=nan sim_max_err=nan sim_within=0/0 sim_closer=0/0"
        );
        assert_eq!(
            totals.contention_line(),
            "contention mva_median_err=nan mva_inside=0/0 bottleneck_median_err=nan \
             bottleneck_inside=0/0 mva_no_worse=false mva_other_workers=0"
        );
        assert_eq!(totals.testbed, None);
        let mut uncalibrated = self::rows();
        uncalibrated[0].calibrated = false;
        assert!(!Totals::of(&uncalibrated).calibrated);
    }
}
