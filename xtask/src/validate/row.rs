//! A scenario's runs and its row: the median run, the runs' spread, the speed-scaled median,
//! the errors, and the verdicts (the simulation's, the gate's, the full suite's wild error).

use std::path::PathBuf;

use super::keyvalue::Count;
use super::numbers::{awk_printed, cmp_g, fixed, lower_middle, sort_g, Figure};
use super::tools::{Launched, ReportSummary, Simulated};

/// A prediction this far off (`|error|`) fails the full suite.
pub(crate) const WILD_ERROR: &str = "0.25";

/// One run of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Run {
    /// Its name: the scenario's, `-runN` after it.
    pub(crate) name: String,
    /// `hmw launch`'s last line.
    pub(crate) launched: Launched,
    /// Its folder (`hmw launch --work-dir`).
    pub(crate) dir: PathBuf,
    /// This machine's processors busy during it, in cores (`None` when not read).
    pub(crate) machine_busy: Option<f64>,
}

/// The run with the median makespan (of an even count, the lower of the two middle ones;
/// runs of equal makespans in the order they ran).
pub(crate) fn median_run(runs: &[Run]) -> Option<&Run> {
    let mut order: Vec<&Run> = runs.iter().collect();
    order.sort_by(|a, b| cmp_g(a.launched.makespan_s.value(), b.launched.makespan_s.value()));
    order.get(order.len().checked_sub(1)? / 2).copied()
}

/// How far the runs lie apart: `(longest - shortest) / median`, as `%.4f`.
pub(crate) fn spread(makespans: &[Figure]) -> Option<Figure> {
    let mut values: Vec<f64> = makespans.iter().map(Figure::value).collect();
    sort_g(&mut values);
    let (first, last, middle) = (values.first()?, values.last()?, lower_middle(&values)?);
    Some(Figure::fixed((last - first) / middle, 4))
}

/// The median over the runs of each makespan divided by its run's CPU time per basic
/// operation over the calibration's (a run without that ratio counts unscaled), as `%.4f`:
/// the makespans the runs would have had at the machine's speed when it was calibrated.
pub(crate) fn speed_scaled_median(
    makespans: &[Figure],
    ratios: &[Option<Figure>],
) -> Option<Figure> {
    let mut values: Vec<f64> = makespans
        .iter()
        .enumerate()
        .map(|(i, m)| match ratios.get(i).and_then(Option::as_ref) {
            Some(ratio) => awk_printed(m.value() / ratio.value()),
            None => m.value(),
        })
        .collect();
    sort_g(&mut values);
    Some(Figure::fixed(lower_middle(&values)?, 4))
}

/// `(m - mid) / mid` of the predicted range's middle, as `%.4f`.
pub(crate) fn error_from_middle(m: &Figure, best: &Figure, worst: &Figure) -> Figure {
    let mid = (best.value() + worst.value()) / 2.0;
    Figure::fixed((m.value() - mid) / mid, 4)
}

/// `(measured - simulated) / simulated`, as `%.4f`.
pub(crate) fn simulated_error(measured: &Figure, simulated: &Figure) -> Figure {
    Figure::fixed(
        (measured.value() - simulated.value()) / simulated.value(),
        4,
    )
}

/// The simulation's target: its error within max(5 %, the spread of the measured runs).
pub(crate) fn simulation_within(sim_err: &Figure, spread: &Figure) -> bool {
    sim_err.value().abs() <= spread.value().max(0.05)
}

/// The verdict of `hmw simulate` on a scenario the closed form cannot predict (a WAN outage).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SimulationVerdict {
    /// The measured makespan in `[0.95 min, 1.05 max]` of the simulated runs.
    pub(crate) inside: bool,
    /// In `[0.90 min, 1.10 max]` (the gate's tolerance).
    pub(crate) gate_inside: bool,
    /// `max / min - 1`, as `%.4f`.
    pub(crate) band_width: Figure,
    /// The clusters whose measured share is within 5 points of the simulated one.
    pub(crate) shares_within: Count,
    /// The clusters whose busy efficiency is within 5 points of the simulated one.
    pub(crate) clusters_eff_within: Count,
}

impl SimulationVerdict {
    /// The verdict on the measured makespan `m` against the simulated runs; the clusters'
    /// comparison as [`super::tools::clusters_within`] gives it.
    pub(crate) fn new(
        m: &Figure,
        simulated: &Simulated,
        clusters: (Count, Count),
    ) -> SimulationVerdict {
        let (m, lo, hi) = (m.value(), simulated.min_s.value(), simulated.max_s.value());
        SimulationVerdict {
            inside: m >= 0.95 * lo && m <= 1.05 * hi,
            gate_inside: m >= 0.90 * lo && m <= 1.10 * hi,
            band_width: Figure::fixed(hi / lo - 1.0, 4),
            shares_within: clusters.0,
            clusters_eff_within: clusters.1,
        }
    }

    /// ` sim_inside=B sim_gate_inside=G sim_band_width=W sim_shares_within=K/N
    /// sim_clusters_eff_within=K/N`, a space first.
    pub(crate) fn fields(&self) -> String {
        format!(
            " sim_inside={} sim_gate_inside={} sim_band_width={} sim_shares_within={} sim_clusters_eff_within={}",
            self.inside, self.gate_inside, self.band_width, self.shares_within, self.clusters_eff_within
        )
    }
}

/// The same runs against the model with `[model] contention = "mva"` (the plan as it is, the
/// default `bottleneck`, is the row's `summary`): docs/model.md section 16.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MvaPrediction {
    /// `hmw report` on the median run with the plan given that key.
    pub(crate) summary: ReportSummary,
    /// It selects other workers than the plan as it is, which the runs used: its figures are
    /// a prediction of another run.
    pub(crate) other_workers: bool,
}

/// A scenario's line of the results: what its runs measured against what was predicted.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row {
    /// The scenario.
    pub(crate) name: String,
    /// `hmw report` on its median run.
    pub(crate) summary: ReportSummary,
    /// The same with `contention = "mva"`.
    pub(crate) mva: MvaPrediction,
    /// The launcher's own wall time of the median run.
    pub(crate) launcher_s: Option<String>,
    /// Each run's makespan, in the order they ran.
    pub(crate) makespans: Vec<Figure>,
    /// `(longest - shortest) / median` of those.
    pub(crate) spread: Figure,
    /// Each run's CPU time per basic operation over the calibration's (`None` for a run
    /// without it); `None` for a scenario not computing on the testbed.
    pub(crate) cpu_drift: Option<Vec<Option<Figure>>>,
    /// This machine's processors busy during each run, in cores (`None` for a run whose
    /// window was not read).
    pub(crate) machine_busy: Vec<Option<Figure>>,
    /// The median makespan at the calibration's machine speed, when `cpu_drift` is known.
    pub(crate) scaled: Option<Figure>,
    /// Its error from the predicted range's middle.
    pub(crate) scaled_err: Option<Figure>,
    /// `hmw simulate`'s median makespan.
    pub(crate) simulated_s: Figure,
    /// `(measured - simulated) / simulated`.
    pub(crate) sim_err: Figure,
    /// The simulation within its target.
    pub(crate) sim_within: bool,
    /// The simulation's verdict when it, not the closed form, judges the scenario.
    pub(crate) simulation: Option<SimulationVerdict>,
    /// It counts in the totals.
    pub(crate) counted: bool,
    /// Its runs had a model-derived cap.
    pub(crate) capped: bool,
    /// Its application computes (not `hmw-synthetic`'s sleeps).
    pub(crate) real_compute: bool,
    /// Its prediction used a calibration measured before each of its runs.
    pub(crate) calibrated: bool,
    /// The commit that added its plan.
    pub(crate) added: Option<String>,
}

impl Row {
    /// What predicts it: `simulate` or `closed_form`.
    pub(crate) fn predictor(&self) -> &'static str {
        if self.simulation.is_some() {
            "simulate"
        } else {
            "closed_form"
        }
    }

    /// Inside its tolerance, by its predictor.
    pub(crate) fn judged_inside(&self) -> bool {
        self.inside_by(&self.summary)
    }

    /// Inside its tolerance with `contention = "mva"`, by its predictor.
    pub(crate) fn judged_mva_inside(&self) -> bool {
        self.inside_by(&self.mva.summary)
    }

    /// Inside, by its predictor, the closed form's verdict `closed_form`.
    fn inside_by(&self, closed_form: &ReportSummary) -> bool {
        self.simulation
            .as_ref()
            .map_or(closed_form.inside, |s| s.inside)
    }

    /// Inside the gate's tolerance, by its predictor.
    pub(crate) fn judged_gate_inside(&self) -> bool {
        self.simulation
            .as_ref()
            .map_or(self.summary.gate_inside, |s| s.gate_inside)
    }

    /// Its makespan error, by its predictor.
    pub(crate) fn judged_err(&self) -> &Figure {
        self.err_by(&self.summary)
    }

    /// Its makespan error with `contention = "mva"`, by its predictor.
    pub(crate) fn judged_mva_err(&self) -> &Figure {
        self.err_by(&self.mva.summary)
    }

    /// The error, by its predictor, the closed form's verdict `closed_form`.
    fn err_by<'a>(&'a self, closed_form: &'a ReportSummary) -> &'a Figure {
        match &self.simulation {
            Some(_) => &self.sim_err,
            None => &closed_form.err,
        }
    }

    /// Its band width, by its predictor.
    pub(crate) fn judged_band_width(&self) -> &Figure {
        self.simulation
            .as_ref()
            .map_or(&self.summary.band_width, |s| &s.band_width)
    }

    /// Its clusters' shares within 5 points, by its predictor.
    pub(crate) fn judged_shares_within(&self) -> Count {
        self.simulation
            .as_ref()
            .map_or(self.summary.shares_within, |s| s.shares_within)
    }

    /// Its clusters' busy efficiencies within 5 points, by its predictor.
    pub(crate) fn judged_clusters_eff_within(&self) -> Count {
        self.simulation
            .as_ref()
            .map_or(self.summary.clusters_eff_within, |s| s.clusters_eff_within)
    }

    /// The CPU time ratios as `r1,r2,r3` (`nan` for a run without one), `nan` when not
    /// measured.
    pub(crate) fn cpu_drift_text(&self) -> String {
        match &self.cpu_drift {
            None => "nan".to_owned(),
            Some(ratios) => ratios
                .iter()
                .map(|r| {
                    r.as_ref()
                        .map_or_else(|| "nan".to_owned(), |r| r.to_string())
                })
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    /// The machine's busy cores in each run as `b1,b2,b3` (`nan` for a run without it).
    pub(crate) fn machine_busy_text(&self) -> String {
        self.machine_busy
            .iter()
            .map(|b| {
                b.as_ref()
                    .map_or_else(|| "nan".to_owned(), Figure::to_string)
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The line that reports the median at the calibration's speed, when it was computed.
    pub(crate) fn scaled_line(&self) -> Option<String> {
        let (scaled, err) = (self.scaled.as_ref()?, self.scaled_err.as_ref()?);
        Some(format!(
            "  at the calibration's speed (CPU per operation, runs / calibration = {}): median makespan {scaled} s, error {err}",
            self.cpu_drift_text()
        ))
    }

    /// The line comparing with the simulation.
    pub(crate) fn simulated_line(&self) -> String {
        format!(
            "  simulated median_s={} closed_err={} sim_err={} spread={} sim_within={} predictor={}{}",
            self.simulated_s,
            self.summary.err,
            self.sim_err,
            self.spread,
            self.sim_within,
            self.predictor(),
            self.simulation.as_ref().map_or_else(String::new, SimulationVerdict::fields)
        )
    }

    /// The line comparing the two contention models on its runs (the closed form's figures).
    pub(crate) fn contention_line(&self) -> String {
        let (mva, bottleneck) = (&self.mva.summary, &self.summary);
        format!(
            "  contention mva_best_s={} mva_worst_s={} mva_err={} mva_inside={} bottleneck_err={} bottleneck_inside={}{}",
            mva.best_s,
            mva.worst_s,
            mva.err,
            mva.inside,
            bottleneck.err,
            bottleneck.inside,
            if self.mva.other_workers {
                " mva_other_workers=true"
            } else {
                ""
            }
        )
    }

    /// The full suite's failure: a makespan error beyond the wild error.
    pub(crate) fn wild_failure(&self) -> Option<String> {
        let (err, wild) = (self.judged_err(), WILD_ERROR.parse::<f64>().unwrap_or(0.25));
        (err.value() > wild || -err.value() > wild)
            .then(|| format!("{}: makespan error {err} beyond +-{WILD_ERROR}", self.name))
    }

    /// The gate's failure (a counted scenario): its median makespan outside
    /// `[0.90 best, 1.10 worst]`, a testbed scenario's at the calibration's speed.
    pub(crate) fn gate_failure(&self) -> Option<String> {
        if !self.counted {
            return None;
        }
        let (best, worst) = (&self.summary.best_s, &self.summary.worst_s);
        let inside = match (&self.simulation, &self.scaled) {
            (None, Some(m)) => {
                m.value() >= 0.90 * best.value() && m.value() <= 1.10 * worst.value()
            }
            _ => self.judged_gate_inside(),
        };
        let median = self.scaled.as_ref().unwrap_or(&self.summary.makespan_s);
        (!inside).then(|| {
            format!(
                "{}: median makespan {median} s outside [0.90 best, 1.10 worst] of {best} to {worst} s",
                self.name
            )
        })
    }
}

/// The scenario's runs as the document lists them: `a, b, c`.
pub(crate) fn listed(figures: &[Figure]) -> String {
    figures
        .iter()
        .map(Figure::text)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The ratios in the document: `-` for a run without one.
pub(crate) fn listed_ratios(row: &Row) -> String {
    row.cpu_drift_text().replace("nan", "-").replace(',', ", ")
}

/// A percentage as the document shows an error: `+1.5 %`.
pub(crate) fn percent(x: &Figure) -> String {
    format!("{} %", super::numbers::signed(100.0 * x.value(), 1))
}

/// A fraction as a percentage with one decimal: `1.3 %`.
pub(crate) fn plain_percent(x: f64) -> String {
    format!("{} %", fixed(100.0 * x, 1))
}

#[cfg(test)]
pub(crate) mod fixture {
    //! Rows as a real run makes them, for the tests of the totals and the document.

    use crate::validate::numbers::Figure;
    use crate::validate::row::{simulated_error, simulation_within, spread, MvaPrediction, Row};
    use crate::validate::tools::ReportSummary;

    /// A row of a closed-form scenario from its report line.
    pub(crate) fn row(name: &str, report: &str) -> Row {
        let summary = ReportSummary::parse(report).unwrap();
        let makespans: Vec<Figure> = ["5.010", "5.012", "5.004"]
            .iter()
            .map(|t| Figure::parse(t).unwrap())
            .collect();
        let simulated_s = summary.makespan_s.clone();
        let sim_err = simulated_error(&summary.makespan_s, &simulated_s);
        let spread = spread(&makespans).unwrap();
        Row {
            name: name.to_owned(),
            launcher_s: Some("5.5".to_owned()),
            sim_within: simulation_within(&sim_err, &spread),
            mva: MvaPrediction {
                summary: summary.clone(),
                other_workers: false,
            },
            summary,
            makespans,
            spread,
            cpu_drift: None,
            machine_busy: Vec::new(),
            scaled: None,
            scaled_err: None,
            simulated_s,
            sim_err,
            simulation: None,
            counted: true,
            capped: false,
            real_compute: false,
            calibrated: true,
            added: Some("f574092".to_owned()),
        }
    }

    /// The report line of one cluster's run: makespan, best, worst, err.
    pub(crate) fn report(m: &str, best: &str, worst: &str, err: &str) -> String {
        format!(
            "report name=val tasks=200 makespan_s={m} best_s={best} worst_s={worst} err={err} inside=true \
             gate_inside=true band_width=0.0150 efficiency=0.990 eff_best=1.000 eff_worst=0.985 \
             eff_within=true clusters_eff_within=1/1 shares_within=1/1 bottlenecks=local:compute"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::{report, row};
    use super::*;

    fn figures(texts: &[&str]) -> Vec<Figure> {
        texts.iter().map(|t| Figure::parse(t).unwrap()).collect()
    }

    fn run(name: &str, makespan: &str) -> Run {
        Run {
            name: name.to_owned(),
            launched: Launched::from_log(&format!(
                "launch clusters=1 tasks=1 makespan_s={makespan} stats=/s/{name}\n"
            ))
            .unwrap()
            .unwrap(),
            dir: PathBuf::from(name),
            machine_busy: None,
        }
    }

    #[test]
    fn the_median_run() {
        let runs = [
            run("a-run1", "1.148"),
            run("a-run2", "1.105"),
            run("a-run3", "1.125"),
        ];
        assert_eq!(median_run(&runs).unwrap().name, "a-run3");
        // Equal makespans: in the order they ran.
        let runs = [
            run("b-run1", "2.000"),
            run("b-run2", "2.000"),
            run("b-run3", "1.000"),
        ];
        assert_eq!(median_run(&runs).unwrap().name, "b-run1");
        let runs = [run("c-run1", "3.0"), run("c-run2", "1.0")];
        assert_eq!(median_run(&runs).unwrap().name, "c-run2");
        assert_eq!(median_run(&[]), None);
    }

    #[test]
    fn spread_and_errors() {
        let makespans = figures(&["1.105", "1.148", "1.125"]);
        // (1.148 - 1.105) / 1.125
        assert_eq!(spread(&makespans).unwrap().text(), "0.0382");
        assert_eq!(spread(&[]), None);
        let m = Figure::parse("1.125").unwrap();
        let (best, worst) = (
            Figure::parse("1.274").unwrap(),
            Figure::parse("1.305").unwrap(),
        );
        assert_eq!(error_from_middle(&m, &best, &worst).text(), "-0.1276");
        let simulated = Figure::parse("1.2974").unwrap();
        assert_eq!(simulated_error(&m, &simulated).text(), "-0.1329");
        let within = |e: &str, s: &str| {
            simulation_within(&Figure::parse(e).unwrap(), &Figure::parse(s).unwrap())
        };
        assert!(within("-0.0500", "0.0100"));
        assert!(!within("-0.0501", "0.0100"));
        assert!(within("0.0700", "0.0800"));
    }

    #[test]
    fn medians_at_the_calibrations_speed() {
        let makespans = figures(&["1.105", "1.125", "1.148"]);
        let ratios = [
            Figure::parse("0.876").map(Some).unwrap(),
            Figure::parse("0.891").map(Some).unwrap(),
            None,
        ];
        // 1.105 / 0.876 = 1.26142, 1.125 / 0.891 = 1.26263, 1.148 unscaled.
        assert_eq!(
            speed_scaled_median(&makespans, &ratios).unwrap().text(),
            "1.2614"
        );
        assert_eq!(speed_scaled_median(&[], &[]), None);
    }

    #[test]
    fn simulation_verdicts() {
        let simulated = Simulated::from_output(
            "simulate runs=3 median_s=15.5710 min_s=15.0000 max_s=16.0000 events=1 wall_s=0.1\n",
        )
        .unwrap();
        let clusters = (Count { passed: 2, of: 2 }, Count { passed: 1, of: 2 });
        let inside =
            SimulationVerdict::new(&Figure::parse("16.800").unwrap(), &simulated, clusters);
        assert!(inside.inside && inside.gate_inside);
        assert_eq!(
            inside.fields(),
            " sim_inside=true sim_gate_inside=true sim_band_width=0.0667 sim_shares_within=2/2 sim_clusters_eff_within=1/2"
        );
        let late = SimulationVerdict::new(&Figure::parse("16.801").unwrap(), &simulated, clusters);
        assert!(!late.inside && late.gate_inside);
        let early = SimulationVerdict::new(&Figure::parse("13.49").unwrap(), &simulated, clusters);
        assert!(!early.inside && !early.gate_inside);
    }

    #[test]
    fn rows_judged_by_their_predictor() {
        let mut r = row(
            "wan-outage",
            &report("15.671", "12.062", "12.162", "0.2938"),
        );
        assert_eq!(r.predictor(), "closed_form");
        assert_eq!(r.judged_err().text(), "0.2938");
        assert_eq!(
            r.wild_failure().as_deref(),
            Some("wan-outage: makespan error 0.2938 beyond +-0.25")
        );
        let simulated = Simulated::from_output(
            "simulate runs=3 median_s=15.5710 min_s=15.5710 max_s=15.5710 events=1 wall_s=0.1\n",
        )
        .unwrap();
        r.sim_err = simulated_error(&r.summary.makespan_s, &simulated.median_s);
        r.simulation = Some(SimulationVerdict::new(
            &r.summary.makespan_s,
            &simulated,
            (Count { passed: 0, of: 2 }, Count { passed: 1, of: 2 }),
        ));
        assert_eq!(r.predictor(), "simulate");
        assert_eq!(r.judged_err().text(), "0.0064");
        assert_eq!(r.judged_band_width().text(), "0.0000");
        assert_eq!(r.judged_shares_within(), Count { passed: 0, of: 2 });
        assert_eq!(r.wild_failure(), None);
        assert_eq!(r.gate_failure(), None);
        assert!(r.simulated_line().ends_with(
            "predictor=simulate sim_inside=true sim_gate_inside=true sim_band_width=0.0000 sim_shares_within=0/2 sim_clusters_eff_within=1/2"
        ));
    }

    #[test]
    fn the_two_contention_models() {
        let mut r = row("local-comm", &report("6.097", "6.055", "6.155", "-0.0010"));
        r.mva.summary = ReportSummary::parse(
            &report("6.097", "6.320", "6.420", "-0.0431").replace(" inside=true", " inside=false"),
        )
        .unwrap();
        assert_eq!(r.judged_mva_err().text(), "-0.0431");
        assert_eq!(r.judged_err().text(), "-0.0010");
        assert!(!r.judged_mva_inside() && r.judged_inside());
        assert_eq!(
            r.contention_line(),
            "  contention mva_best_s=6.320 mva_worst_s=6.420 mva_err=-0.0431 mva_inside=false \
             bottleneck_err=-0.0010 bottleneck_inside=true"
        );
        r.mva.other_workers = true;
        assert!(r
            .contention_line()
            .ends_with(" bottleneck_inside=true mva_other_workers=true"));
        // A scenario the simulation judges is judged alike under both.
        let simulated = Simulated::from_output(
            "simulate runs=3 median_s=6.0900 min_s=6.0800 max_s=6.1000 events=1 wall_s=0.1\n",
        )
        .unwrap();
        r.sim_err = simulated_error(&r.summary.makespan_s, &simulated.median_s);
        r.simulation = Some(SimulationVerdict::new(
            &r.summary.makespan_s,
            &simulated,
            (Count { passed: 1, of: 1 }, Count { passed: 1, of: 1 }),
        ));
        assert_eq!(r.judged_mva_err(), r.judged_err());
        assert_eq!(r.judged_mva_err().text(), "0.0011");
        assert!(r.judged_mva_inside() && r.judged_inside());
    }

    #[test]
    fn the_gate() {
        let mut r = row(
            "tb-tsp-hetero",
            &report("1.125", "1.274", "1.305", "-0.1276"),
        );
        r.summary.gate_inside = false;
        assert_eq!(
            r.gate_failure().as_deref(),
            Some("tb-tsp-hetero: median makespan 1.125 s outside [0.90 best, 1.10 worst] of 1.274 to 1.305 s")
        );
        // At the calibration's speed: 1.2614 is inside [1.1466, 1.4355].
        r.cpu_drift = Some(vec![Figure::parse("0.876"), Figure::parse("0.891"), None]);
        r.scaled = Figure::parse("1.2614");
        r.scaled_err = Figure::parse("-0.0213");
        assert_eq!(r.gate_failure(), None);
        assert_eq!(
            r.scaled_line().unwrap(),
            "  at the calibration's speed (CPU per operation, runs / calibration = 0.876,0.891,nan): median makespan 1.2614 s, error -0.0213"
        );
        assert_eq!(listed_ratios(&r), "0.876, 0.891, -");
        r.scaled = Figure::parse("1.1465");
        assert!(r
            .gate_failure()
            .unwrap()
            .contains("median makespan 1.1465 s outside"));
        r.counted = false;
        assert_eq!(r.gate_failure(), None);
    }

    #[test]
    fn the_documents_numbers() {
        assert_eq!(percent(&Figure::parse("0.0150").unwrap()), "+1.5 %");
        assert_eq!(percent(&Figure::parse("-0.0004").unwrap()), "-0.0 %");
        assert_eq!(plain_percent(0.0129), "1.3 %");
        assert_eq!(plain_percent(f64::NAN), "nan %");
        assert_eq!(listed(&figures(&["1.105", "1.125"])), "1.105, 1.125");
    }
}
