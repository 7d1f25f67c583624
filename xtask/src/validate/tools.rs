//! What the tools print, read: `hmw launch`'s last line and wall time, `hmw report`'s summary
//! line and cluster table, `hmw simulate`'s last line and cluster table, `hmw calibrate`'s
//! tables and timing, `hmw predict`'s workers.

use anyhow::{anyhow, Context, Result};

use super::keyvalue::{Count, KeyValues};
use super::numbers::Figure;

/// The last line of `text` that starts with `prefix`.
pub(crate) fn last_line_starting<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines().rev().find(|line| line.starts_with(prefix))
}

/// `hmw launch`'s last line: `launch clusters=N tasks=T makespan_s=S stats=PATH`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Launched {
    /// Tasks the run computed.
    pub(crate) tasks: Figure,
    /// The main master's makespan.
    pub(crate) makespan_s: Figure,
    /// The main master's statistics file.
    pub(crate) stats: String,
}

impl Launched {
    /// The last `launch clusters=` line of a launch's log; `Ok(None)` when there is none.
    pub(crate) fn from_log(log: &str) -> Result<Option<Launched>> {
        let Some(line) = last_line_starting(log, "launch clusters=") else {
            return Ok(None);
        };
        let kv = KeyValues::parse(line);
        Ok(Some(Launched {
            tasks: kv.figure("tasks")?,
            makespan_s: kv.figure("makespan_s")?,
            stats: kv.text("stats")?.to_owned(),
        }))
    }
}

/// `hmw report`'s summary line: the measured makespan against the predicted range.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ReportSummary {
    /// The line as printed.
    pub(crate) line: String,
    /// The compared run's makespan.
    pub(crate) makespan_s: Figure,
    /// The predicted best case.
    pub(crate) best_s: Figure,
    /// The predicted worst case.
    pub(crate) worst_s: Figure,
    /// `(measured - mid) / mid`.
    pub(crate) err: Figure,
    /// In `[0.95 best, 1.05 worst]`.
    pub(crate) inside: bool,
    /// In `[0.90 best, 1.10 worst]`.
    pub(crate) gate_inside: bool,
    /// `worst / best - 1`.
    pub(crate) band_width: Figure,
    /// Clusters whose busy efficiency is within 5 points of the predicted range.
    pub(crate) clusters_eff_within: Count,
    /// Clusters whose share is within 5 points of the middle of its predicted range.
    pub(crate) shares_within: Count,
    /// `cluster:bottleneck,...`.
    pub(crate) bottlenecks: String,
}

impl ReportSummary {
    /// The last `report ` line of `hmw report`'s output.
    pub(crate) fn from_output(output: &str) -> Result<ReportSummary> {
        let line = last_line_starting(output, "report ")
            .ok_or_else(|| anyhow!("hmw report printed no `report ...` line"))?;
        ReportSummary::parse(line)
    }

    /// A summary line read.
    pub(crate) fn parse(line: &str) -> Result<ReportSummary> {
        let kv = KeyValues::parse(line);
        Ok(ReportSummary {
            line: line.to_owned(),
            makespan_s: kv.figure("makespan_s")?,
            best_s: kv.figure("best_s")?,
            worst_s: kv.figure("worst_s")?,
            err: kv.figure("err")?,
            inside: kv.boolean("inside")?,
            gate_inside: kv.boolean("gate_inside")?,
            band_width: kv.figure("band_width")?,
            clusters_eff_within: kv.count("clusters_eff_within")?,
            shares_within: kv.count("shares_within")?,
            bottlenecks: kv.text("bottlenecks")?.to_owned(),
        })
    }
}

/// `hmw simulate`'s last line: `simulate runs=3 median_s=M min_s=A max_s=B ...`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Simulated {
    /// The median makespan of the seeded runs.
    pub(crate) median_s: Figure,
    /// The shortest.
    pub(crate) min_s: Figure,
    /// The longest.
    pub(crate) max_s: Figure,
}

impl Simulated {
    /// The last `simulate ` line of `hmw simulate`'s output.
    pub(crate) fn from_output(output: &str) -> Result<Simulated> {
        let line = last_line_starting(output, "simulate ")
            .ok_or_else(|| anyhow!("hmw simulate printed no `simulate ...` line"))?;
        let kv = KeyValues::parse(line);
        Ok(Simulated {
            median_s: kv.figure("median_s")?,
            min_s: kv.figure("min_s")?,
            max_s: kv.figure("max_s")?,
        })
    }
}

/// How long `hmw calibrate` took (`workers 9 s, LANs 8 s, WANs 0 s`): from the last line
/// holding `workers N s`, that match to the end of its line; empty when none does.
pub(crate) fn calibration_time(log: &str) -> &str {
    log.lines()
        .rev()
        .find_map(|line| {
            line.match_indices("workers ").find_map(|(at, word)| {
                let rest = line[at + word.len()..]
                    .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
                rest.starts_with(" s").then(|| &line[at..])
            })
        })
        .unwrap_or("")
}

/// `hmw calibrate`'s tables: from each `cluster  worker ...` header to the next
/// `measured in: ` line (to the end when none follows), as `sed -n '/A/,/B/p'` prints them.
pub(crate) fn calibration_tables(log: &str) -> Vec<&str> {
    let starts = |line: &str| {
        line.strip_prefix("cluster ")
            .is_some_and(|rest| rest.trim_start_matches(' ').starts_with("worker "))
    };
    let mut inside = false;
    let mut out = Vec::new();
    for line in log.lines() {
        if inside {
            out.push(line);
            inside = !line.starts_with("measured in: ");
        } else if starts(line) {
            out.push(line);
            inside = true;
        }
    }
    out
}

/// The launcher's own wall time, `X` of its last `== wall time X s` line.
pub(crate) fn launcher_wall_time(log: &str) -> Option<&str> {
    log.lines()
        .rev()
        .find_map(|line| {
            let rest = line.strip_prefix("== wall time ")?;
            let digits = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len());
            rest[digits..].starts_with(" s").then(|| &rest[..digits])
        })
        .filter(|time| !time.is_empty())
}

/// `hmw predict`'s `NAME workers: ...` lines (the workers each cluster uses).
pub(crate) fn predicted_workers(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter(|line| {
            let name = line
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(line.len());
            name > 0 && line[name..].starts_with(" workers: ")
        })
        .collect()
}

/// Each cluster's measured share of the tasks and busy efficiency (`hmw report`'s table)
/// against the simulation's (`hmw simulate`'s table), within 5 points: the shares within and
/// the efficiencies within, each of the clusters found in both.
pub(crate) fn clusters_within(report: &str, simulate: &str) -> (Count, Count) {
    let mut simulated = std::collections::HashMap::new();
    for line in simulate.lines() {
        if let Some((name, share, efficiency)) = simulated_cluster(line) {
            simulated.insert(name, (share / 100.0, efficiency / 100.0));
        }
    }
    let (mut shares, mut efficiencies) = (Count::default(), Count::default());
    for line in report.lines() {
        let Some((name, share, efficiency)) = reported_cluster(line) else {
            continue;
        };
        if let Some(&(simulated_share, simulated_efficiency)) = simulated.get(name) {
            shares.of += 1;
            efficiencies.of += 1;
            shares.passed += u64::from((share / 100.0 - simulated_share).abs() <= 0.05);
            efficiencies.passed += u64::from((efficiency - simulated_efficiency).abs() <= 0.05);
        }
    }
    (shares, efficiencies)
}

/// A line of `hmw simulate`'s cluster table, `NAME WORKERS TASKS SHARE% EFFICIENCY%`: its
/// name, share and efficiency in percent.
fn simulated_cluster(line: &str) -> Option<(&str, f64, f64)> {
    let mut c = Cursor(line);
    let name = c.word()?;
    c.spaces()?;
    c.digits()?;
    c.spaces()?;
    c.digits()?;
    c.spaces()?;
    let share = c.number()?;
    c.literal("%")?;
    c.spaces()?;
    let efficiency = c.number()?;
    c.literal("%")?;
    c.0.is_empty().then_some((name, share, efficiency))
}

/// A line of `hmw report`'s cluster table, `NAME BOTTLENECK P / M TASKS P% / M% B/W/M ...`:
/// its name, measured share in percent and measured busy efficiency.
fn reported_cluster(line: &str) -> Option<(&str, f64, f64)> {
    let mut c = Cursor(line);
    let name = c.word()?;
    c.spaces()?;
    c.word()?;
    c.spaces()?;
    c.number()?;
    c.literal(" / ")?;
    c.number()?;
    c.spaces()?;
    c.word()?;
    c.spaces()?;
    c.number()?;
    c.literal("% / ")?;
    let share = c.number()?;
    c.literal("%")?;
    c.spaces()?;
    c.number()?;
    c.literal("/")?;
    c.number()?;
    c.literal("/")?;
    let efficiency = c.number()?;
    Some((name, share, efficiency))
}

/// A reader of a table's line, left to right; each step `None` when the line does not
/// continue as expected.
struct Cursor<'a>(&'a str);

impl<'a> Cursor<'a> {
    fn take(&mut self, pred: impl Fn(char) -> bool) -> Option<&'a str> {
        let end = self.0.find(|c: char| !pred(c)).unwrap_or(self.0.len());
        let (taken, rest) = self.0.split_at(end);
        self.0 = rest;
        (!taken.is_empty()).then_some(taken)
    }
    fn word(&mut self) -> Option<&'a str> {
        self.take(|c| !c.is_whitespace())
    }
    fn spaces(&mut self) -> Option<()> {
        self.take(char::is_whitespace).map(drop)
    }
    fn digits(&mut self) -> Option<()> {
        self.take(|c| c.is_ascii_digit()).map(drop)
    }
    fn number(&mut self) -> Option<f64> {
        self.take(|c| c.is_ascii_digit() || c == '.')?.parse().ok()
    }
    fn literal(&mut self, text: &str) -> Option<()> {
        self.0 = self.0.strip_prefix(text)?;
        Some(())
    }
}

/// Reads a tool's output file, naming it when it cannot.
pub(crate) fn read_output(path: &std::path::Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "\
== val-two: predicted (configs/validation/two-clusters.toml) against measured (x/lyon.stats.json)
                  best      worst   measured     error  target
makespan s      12.062     12.162     15.671    +29.4%  inside [0.95 best, 1.05 worst]: no

cluster      bottleneck  steady tasks/s p / m tasks p best/worst/m       share p / m   efficiency (busy) p b/w/m  within
lyon         compute            19.98 / 20.00          241/242/312     40.2% / 52.0%           1.000/0.996/0.996  share no, efficiency yes
spain        wan_out             29.97 / 9.57          359/358/288     59.8% / 48.0%           0.993/0.982/0.617  share no, efficiency no
brazil       compute     19.98 /  20.00 1/2/3 40.2% / 52.0% 1.000/0.996/0.5
report name=val-two tasks=600 makespan_s=15.671 best_s=12.062 worst_s=12.162 err=0.2938 inside=false gate_inside=false band_width=0.0083 efficiency=0.766 eff_best=0.996 eff_worst=0.988 eff_within=false clusters_eff_within=1/2 shares_within=0/2 bottlenecks=lyon:compute,spain:wan_out
chart: x.svg
";

    const SIMULATE: &str = "\
== simulated val-two (configs/validation/two-clusters.toml): 3 runs, seeds 1..3
makespan     median 15.571 s, min 15.571 s, max 15.571 s
cluster      workers     tasks   share efficiency
lyon               2       309   51.5%      99.6%
spain              3       291   48.5%      62.5%
brazil             3       291   48.5%      62.5% 
simulate runs=3 median_s=15.5710 min_s=15.5710 max_s=15.5712 events=1234 wall_s=0.12
";

    #[test]
    fn launch_lines() {
        let log = "mpirun ...\nlaunch clusters=1 tasks=5 makespan_s=1.000 stats=old\n\
                   == wall time 5.5 s\nlaunch clusters=2 tasks=80 makespan_s=6.500 stats=/w/lyon.stats.json\n\
                   == wall time 7.1 s (3 clusters)\n";
        let launched = Launched::from_log(log).unwrap().unwrap();
        assert_eq!(launched.makespan_s.text(), "6.500");
        assert_eq!(launched.tasks.value(), 80.0);
        assert_eq!(launched.stats, "/w/lyon.stats.json");
        assert_eq!(launcher_wall_time(log), Some("7.1"));
        assert_eq!(Launched::from_log("nothing\n").unwrap(), None);
        assert!(Launched::from_log("launch clusters=2 tasks=80\n").is_err());
        assert_eq!(launcher_wall_time("== wall time  s\n"), None);
        assert_eq!(launcher_wall_time("== wall time 5.5s\n"), None);
    }

    #[test]
    fn report_summary() {
        let summary = ReportSummary::from_output(REPORT).unwrap();
        assert_eq!(summary.makespan_s.text(), "15.671");
        assert_eq!(summary.err.value(), 0.2938);
        assert!(!summary.inside && !summary.gate_inside);
        assert_eq!(summary.clusters_eff_within, Count { passed: 1, of: 2 });
        assert_eq!(summary.shares_within.to_string(), "0/2");
        assert_eq!(summary.bottlenecks, "lyon:compute,spain:wan_out");
        assert!(summary.line.starts_with("report name=val-two"));
        assert!(ReportSummary::from_output("chart: x.svg\n").is_err());
        assert!(ReportSummary::parse("report name=x tasks=3 makespan_s=1.0").is_err());
    }

    #[test]
    fn simulate_line() {
        let simulated = Simulated::from_output(SIMULATE).unwrap();
        assert_eq!(simulated.median_s.text(), "15.5710");
        assert_eq!(simulated.max_s.value(), 15.5712);
        assert!(Simulated::from_output("== simulated\n").is_err());
    }

    #[test]
    fn cluster_tables() {
        assert_eq!(
            reported_cluster(REPORT.lines().nth(5).unwrap()),
            Some(("lyon", 52.0, 0.996))
        );
        // Spaces other than single ones around a `/` do not match the table's pattern.
        assert_eq!(reported_cluster(REPORT.lines().nth(7).unwrap()), None);
        assert_eq!(
            simulated_cluster("spain              3       291   48.5%      62.5%"),
            Some(("spain", 48.5, 62.5))
        );
        // Trailing text (a space here) does not match: the pattern ends at the `%`.
        assert_eq!(
            simulated_cluster("brazil             3       291   48.5%      62.5% "),
            None
        );
        assert_eq!(
            simulated_cluster("cluster      workers     tasks   share efficiency"),
            None
        );
        // lyon: 52.0 % against 51.5 %, 0.996 against 99.6 %; spain: 48.0 against 48.5, 0.617
        // against 62.5 %; brazil is not in the report's table.
        assert_eq!(
            clusters_within(REPORT, SIMULATE),
            (Count { passed: 2, of: 2 }, Count { passed: 2, of: 2 })
        );
        let far = SIMULATE.replace("48.5%      62.5%", "38.5%      72.5%");
        assert_eq!(
            clusters_within(REPORT, &far),
            (Count { passed: 1, of: 2 }, Count { passed: 1, of: 2 })
        );
        assert_eq!(
            clusters_within("", SIMULATE),
            (Count::default(), Count::default())
        );
    }

    #[test]
    fn calibrate_log() {
        let log = "\
cluster      worker                  ops/s    tasks/s
lyon         lyon-1               9.9902e0      9.990
LAN of lyon: 1040 B tasks, all 2 workers s
measured in: workers 18 s, LANs 6 s, WANs 16 s
after
cluster  worker again
tail line
";
        assert_eq!(calibration_time(log), "workers 18 s, LANs 6 s, WANs 16 s");
        assert_eq!(calibration_time("with 3 workers, 2 s\n"), "");
        assert_eq!(calibration_time("workers  s\n"), "workers  s");
        assert_eq!(
            calibration_tables(log),
            vec![
                "cluster      worker                  ops/s    tasks/s",
                "lyon         lyon-1               9.9902e0      9.990",
                "LAN of lyon: 1040 B tasks, all 2 workers s",
                "measured in: workers 18 s, LANs 6 s, WANs 16 s",
                "cluster  worker again",
                "tail line",
            ]
        );
        assert!(calibration_tables("clusterworker x\n").is_empty());
    }

    #[test]
    fn workers_of_a_prediction() {
        let predict = "lyon workers: lyon-1 lyon-2\nspain_2 workers: s-1\n workers: x\nlyon  workers: y\nbest 4.0 s\n";
        assert_eq!(
            predicted_workers(predict),
            vec!["lyon workers: lyon-1 lyon-2", "spain_2 workers: s-1"]
        );
    }
}
