//! The scenarios: which run in each mode, where each one's plan is, and what the suite reads
//! from a plan (with the `toml` crate: the launched binary, a testbed, WAN outages, the
//! application's message sizes; as text: its description and the LAN figure the run used).

use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use super::options::Mode;

/// Every scenario, in the order of issue 6 then issue 16's additions (latency-200ms,
/// lossy-wan, wan-in-nt4, depth2-tree, wan-outage, wan-outage-rejoin), then the testbed's
/// scenarios of real computation (tb-*: the applications computing on emulated hosts whose
/// CPU quotas differ from the plans' perf, each calibrated just before), the demo's plan
/// (configs/demo-three-clusters.toml), and issue 45's short runs over links of a high
/// bandwidth-delay product (tb-cold-*).
pub(crate) const FULL: &[&str] = &[
    "local-compute",
    "local-comm",
    "two-clusters",
    "wan-out",
    "wan-out-nr3",
    "hetero-reassign",
    "hetero-no-reassign",
    "hetero-no-reassign-buffered",
    "three-auto",
    "latency-200ms",
    "lossy-wan",
    "wan-in-nt4",
    "depth2-tree",
    "wan-outage",
    "wan-outage-rejoin",
    "tb-tsp-hetero",
    "tb-srmsd-hetero-no-reassign",
    "tb-matmul-local",
    "tb-matmul-two-clusters",
    "tb-srmsd-one-to-many",
    "tb-tsp-three-clusters",
    "demo-three-clusters",
    "tb-cold-wan-in",
    "tb-cold-wan-out",
    "tb-cold-far",
];

/// Scenarios run with a model-derived cap (`load_balance = true`): listed after the others in
/// full mode, not counted.
pub(crate) const APART: &[&str] = &["two-clusters-capped"];

/// The gate: two of real computation with calibrated inputs on the testbed, in place of
/// local-compute and hetero-no-reassign (the same regimes with sleeping tasks).
pub(crate) const QUICK: &[&str] = &[
    "tb-tsp-hetero",
    "two-clusters",
    "tb-srmsd-hetero-no-reassign",
    "latency-200ms",
];

/// The scenario whose LAN is measured just before it (by `configs/validation/
/// lan-calibration.toml`) and given to its plan.
pub(crate) const LAN_MEASURED: &str = "local-comm";

/// The plan of the LAN calibration.
pub(crate) const LAN_CALIBRATION_PLAN: &str = "configs/validation/lan-calibration.toml";

/// One scenario of the suite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scenario {
    /// Its name (the plan's file name without `.toml`).
    pub(crate) name: String,
    /// Its committed plan, relative to the repository: `configs/validation/NAME.toml`, or the
    /// demo's `configs/NAME.toml`.
    pub(crate) plan: String,
    /// Whether it counts in the totals (not one of [`APART`]).
    pub(crate) counted: bool,
}

impl Scenario {
    /// The scenario `name`, its plan looked for under `root`.
    pub(crate) fn new(root: &Path, name: &str) -> Scenario {
        let validation = format!("configs/validation/{name}.toml");
        let plan = if root.join(&validation).exists() {
            validation
        } else {
            format!("configs/{name}.toml")
        };
        Scenario {
            name: name.to_owned(),
            plan,
            counted: !APART.contains(&name),
        }
    }

    /// Whether its LAN is measured just before it.
    pub(crate) fn lan_measured(&self) -> bool {
        self.name == LAN_MEASURED
    }

    /// `hmw calibrate`'s `--lan-runs` for it: local-comm's LAN is the one the LAN calibration
    /// measures in its own regime, so its calibration leaves the plan's value.
    pub(crate) fn lan_runs(&self) -> [&'static str; 2] {
        ["--lan-runs", if self.lan_measured() { "0" } else { "1" }]
    }
}

/// The scenarios a mode runs, or those of `--only` (each of which must have a plan: the name
/// of the first that has none otherwise).
pub(crate) fn selected(
    root: &Path,
    mode: Mode,
    only: Option<&[String]>,
) -> Result<Vec<Scenario>, String> {
    let names: Vec<&str> = match (only, mode) {
        (Some(only), _) => only.iter().map(String::as_str).collect(),
        (None, Mode::Full) => FULL.iter().chain(APART).copied().collect(),
        (None, Mode::Quick) => QUICK.to_vec(),
    };
    let scenarios: Vec<Scenario> = names.iter().map(|name| Scenario::new(root, name)).collect();
    if only.is_some() {
        if let Some(missing) = scenarios.iter().find(|s| !root.join(&s.plan).exists()) {
            return Err(missing.name.clone());
        }
    }
    Ok(scenarios)
}

/// What the suite reads from a plan's TOML.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct PlanFacts {
    /// `[launch] binary`: the application run.
    pub(crate) binary: Option<String>,
    /// Whether it has a `[testbed]` table: it runs on emulated hosts.
    pub(crate) testbed: bool,
    /// Whether it has a WAN outage (a `wan_outages` list of one at least, in any table): the
    /// closed form has none, so the simulation judges it.
    pub(crate) wan_outages: bool,
    /// `[application] task_bytes + result_bytes`.
    pub(crate) message_bytes: Option<f64>,
}

#[derive(Deserialize)]
struct PlanToml {
    launch: Option<LaunchToml>,
    testbed: Option<toml::Value>,
    application: Option<ApplicationToml>,
}

#[derive(Deserialize)]
struct LaunchToml {
    binary: Option<String>,
}

#[derive(Deserialize)]
struct ApplicationToml {
    task_bytes: Option<f64>,
    result_bytes: Option<f64>,
}

impl PlanFacts {
    /// The facts of the plan at `path`.
    pub(crate) fn read(path: &Path) -> Result<PlanFacts> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the plan {}", path.display()))?;
        PlanFacts::parse(&text).with_context(|| format!("in the plan {}", path.display()))
    }

    /// The facts of a plan's text.
    pub(crate) fn parse(text: &str) -> Result<PlanFacts> {
        let plan: PlanToml = toml::from_str(text)?;
        let value: toml::Value = toml::from_str(text)?;
        let application = plan.application.as_ref();
        Ok(PlanFacts {
            binary: plan.launch.and_then(|launch| launch.binary),
            testbed: plan.testbed.as_ref().is_some_and(toml::Value::is_table),
            wan_outages: has_outages(&value),
            message_bytes: application.and_then(|a| Some(a.task_bytes? + a.result_bytes?)),
        })
    }

    /// Whether the application computes for real (not `hmw-synthetic`'s sleeps).
    pub(crate) fn real_compute(&self) -> bool {
        self.binary
            .as_deref()
            .is_some_and(|b| !b.is_empty() && b != "hmw-synthetic")
    }
}

/// Whether some table of `value` has `wan_outages` as a list whose first item is a string.
fn has_outages(value: &toml::Value) -> bool {
    match value {
        toml::Value::Table(table) => table.iter().any(|(key, value)| {
            (key == "wan_outages"
                && value
                    .as_array()
                    .and_then(|list| list.first())
                    .is_some_and(toml::Value::is_str))
                || has_outages(value)
        }),
        toml::Value::Array(items) => items.iter().any(has_outages),
        _ => false,
    }
}

/// A plan's description: its opening comment (up to its first empty line), `Validation: `
/// dropped, on one line, its first letter a capital.
pub(crate) fn description(plan_text: &str) -> String {
    let mut joined = String::new();
    for (number, line) in plan_text.lines().enumerate() {
        if let Some(comment) = line.strip_prefix('#') {
            let comment = comment.strip_prefix(' ').unwrap_or(comment);
            joined.push_str(comment.strip_prefix("Validation: ").unwrap_or(comment));
            joined.push(' ');
        }
        // `sed -n '1,/^$/...'`: the end of the range is looked for from the second line.
        if line.is_empty() && number > 0 {
            break;
        }
    }
    let trimmed = joined.trim_end_matches(' ');
    let mut chars = trimmed.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The plan `text` with each `lan_bytes_per_s = N  # ...` line given `value`, its comment
/// saying where the value comes from.
pub(crate) fn with_measured_lan(text: &str, value: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        match measured_lan_line(body, value) {
            Some(replaced) => out.push_str(&replaced),
            None => out.push_str(body),
        }
        out.push_str(end);
    }
    out
}

fn measured_lan_line(line: &str, value: &str) -> Option<String> {
    let rest = line.strip_prefix("lan_bytes_per_s = ")?;
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit() || ".e+-".contains(c));
    let spaces = &rest[..rest.len() - rest.trim_start_matches(' ').len()];
    rest[spaces.len()..].starts_with('#').then(|| {
        format!("lan_bytes_per_s = {value}{spaces}# measured just now by lan-calibration.toml")
    })
}

/// The plan `text` with `[model] contention = "VALUE"` (docs/model.md section 16): the key
/// written first in its `[model]` table in place of any it had, or a `[model]` table of that
/// key added at the end when the plan has none; read back to check that it says so.
pub(crate) fn with_contention(text: &str, value: &str) -> Result<String> {
    let key = format!("contention = \"{value}\"\n");
    let (mut out, mut in_model, mut has_model) = (String::with_capacity(text.len()), false, false);
    for line in text.split_inclusive('\n') {
        if let Some(name) = table_header(line) {
            in_model = name == "model";
            if in_model {
                has_model = true;
                out.push_str(line);
                if !line.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&key);
                continue;
            }
        }
        if in_model && sets_key(line, "contention") {
            continue;
        }
        out.push_str(line);
    }
    if !has_model {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("\n[model]\n");
        out.push_str(&key);
    }
    let read: toml::Value = toml::from_str(&out).context("the plan with `[model] contention`")?;
    let written = read
        .get("model")
        .and_then(|model| model.get("contention"))
        .and_then(toml::Value::as_str);
    anyhow::ensure!(
        written == Some(value),
        "the plan with `[model] contention = \"{value}\"` reads {written:?}"
    );
    Ok(out)
}

/// The name of the table a `[NAME]` line opens; empty for an array of tables' `[[NAME]]`.
fn table_header(line: &str) -> Option<&str> {
    let inner = line.trim().strip_prefix('[')?;
    if inner.starts_with('[') {
        return Some("");
    }
    inner.split_once(']').map(|(name, _)| name.trim())
}

/// Whether `line` sets `key` (`key = ...`).
fn sets_key(line: &str, key: &str) -> bool {
    line.trim_start()
        .strip_prefix(key)
        .is_some_and(|rest| rest.trim_start().starts_with('='))
}

/// The text of the first `lan_bytes_per_s = N` of a plan, `N` as written.
pub(crate) fn written_lan(plan_text: &str) -> String {
    plan_text
        .lines()
        .find_map(|line| line.strip_prefix("lan_bytes_per_s = "))
        .map(|rest| {
            let end = rest
                .find(|c: char| !(c.is_ascii_digit() || ".e+-".contains(c)))
                .unwrap_or(rest.len());
            rest[..end].to_owned()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "\
# Validation: a WAN outage. two-clusters.toml with
#   spain's WAN down
#
# (more)

# not the description
[application]
name = \"x\"
task_bytes = 2097168
result_bytes = 16

[launch]
binary = \"hmw-synthetic\"

[[cluster]]
name = \"lyon\"
lan_bytes_per_s = 3.1e9     # lan-calibration.toml, mean of three runs
wan_outages = []

[[cluster]]
name = \"spain\"
lan_bytes_per_s = 2.0e9
[cluster.launch]
wan_outages = [\"3-9\"]
";

    #[test]
    fn facts_of_a_plan() {
        let facts = PlanFacts::parse(PLAN).unwrap();
        assert_eq!(
            facts,
            PlanFacts {
                binary: Some("hmw-synthetic".into()),
                testbed: false,
                wan_outages: true,
                message_bytes: Some(2_097_184.0),
            }
        );
        assert!(!facts.real_compute());
        let tb = PlanFacts::parse("[launch]\nbinary = \"hmw-tsp\"\n[testbed]\nquota_perf = 1\n")
            .unwrap();
        assert!(tb.testbed && tb.real_compute() && !tb.wan_outages && tb.message_bytes.is_none());
        let none = PlanFacts::parse("[[cluster]]\nwan_outages = []\n").unwrap();
        assert_eq!(none, PlanFacts::default());
        assert!(PlanFacts::parse("[launch\n").is_err());
        assert!(PlanFacts::parse("[launch]\nbinary = 3\n").is_err());
    }

    #[test]
    fn descriptions() {
        assert_eq!(
            description(PLAN),
            "A WAN outage. two-clusters.toml with   spain's WAN down  (more)"
        );
        assert_eq!(description("[application]\n"), "");
        assert_eq!(description("#no space\n#\n"), "No space");
        // An empty first line does not end the opening comment (sed's range looks for its end
        // from the second line).
        assert_eq!(description("\n# a\n\n# b\n"), "A");
    }

    #[test]
    fn the_measured_lan_given_to_a_plan() {
        let plan = with_measured_lan(PLAN, "2.9300e+09");
        assert!(plan.contains(
            "lan_bytes_per_s = 2.9300e+09     # measured just now by lan-calibration.toml\n"
        ));
        // A line without a comment is left as written.
        assert!(plan.contains("lan_bytes_per_s = 2.0e9\n"));
        assert_eq!(plan.lines().count(), PLAN.lines().count());
        assert_eq!(written_lan(&plan), "2.9300e+09");
        assert_eq!(written_lan(PLAN), "3.1e9");
        assert_eq!(written_lan("[run]\n"), "");
        assert_eq!(
            with_measured_lan("lan_bytes_per_s = 1#x", "2"),
            "lan_bytes_per_s = 2# measured just now by lan-calibration.toml"
        );
    }

    #[test]
    fn the_contention_given_to_a_plan() {
        let model = "[application]\nname = \"x\"\n\n[model]   # the model\nselection = \"all\"\n\n[[cluster]]\nname = \"lyon\"\n";
        let mva = with_contention(model, "mva").unwrap();
        assert_eq!(
            mva,
            model.replace("# the model\n", "# the model\ncontention = \"mva\"\n")
        );
        // A contention written in the plan is replaced, one in another table left alone.
        let written = model.replace(
            "selection = \"all\"\n",
            "contention  = \"bottleneck\"\nselection = \"all\"\n",
        ) + "contention = \"kept\"\n";
        let mva = with_contention(&written, "mva").unwrap();
        assert!(!mva.contains("bottleneck") && mva.contains("contention = \"kept\""));
        assert_eq!(mva.matches("contention = \"mva\"").count(), 1);
        // A plan without `[model]` gets one at its end, also after a last line without its
        // line end.
        assert_eq!(
            with_contention("[run]\nworker_buffers = 2", "mva").unwrap(),
            "[run]\nworker_buffers = 2\n\n[model]\ncontention = \"mva\"\n"
        );
        // Every plan of the suite reads back as its own plan with the key.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for s in selected(&root, Mode::Full, None).unwrap() {
            let text = std::fs::read_to_string(root.join(&s.plan)).unwrap();
            let mva: toml::Value = toml::from_str(&with_contention(&text, "mva").unwrap()).unwrap();
            let mut plan: toml::Value = toml::from_str(&text).unwrap();
            plan["model"]
                .as_table_mut()
                .unwrap()
                .insert("contention".into(), "mva".into());
            assert_eq!(mva, plan, "{}", s.name);
        }
        // A plan the key cannot be written in is an error, not a plan that says otherwise.
        assert!(with_contention("model = 3\n", "mva").is_err());
        assert!(with_contention("[model\n", "mva").is_err());
    }

    #[test]
    fn scenario_tables() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let full = selected(&root, Mode::Full, None).unwrap();
        assert_eq!(full.len(), FULL.len() + APART.len());
        assert!(
            full.iter().all(|s| root.join(&s.plan).exists()),
            "every plan is there"
        );
        assert_eq!(full.iter().filter(|s| !s.counted).count(), 1);
        let demo = full
            .iter()
            .find(|s| s.name == "demo-three-clusters")
            .unwrap();
        assert_eq!(demo.plan, "configs/demo-three-clusters.toml");
        let quick = selected(&root, Mode::Quick, None).unwrap();
        assert_eq!(
            quick.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            QUICK
        );
        let only = ["two-clusters-capped".to_owned(), "nothing-such".to_owned()];
        assert_eq!(
            selected(&root, Mode::Quick, Some(&only)),
            Err("nothing-such".into())
        );
        let only = selected(&root, Mode::Quick, Some(&only[..1])).unwrap();
        assert!(!only[0].counted);
        assert_eq!(
            Scenario::new(&root, "local-comm").lan_runs(),
            ["--lan-runs", "0"]
        );
        assert_eq!(
            Scenario::new(&root, "wan-out").lan_runs(),
            ["--lan-runs", "1"]
        );
        // Only the scenarios of the testbed run on it, and only the outages are simulated.
        for s in &full {
            let facts = PlanFacts::read(&root.join(&s.plan)).unwrap();
            assert_eq!(facts.testbed, s.name.starts_with("tb-"), "{}", s.name);
            assert_eq!(
                facts.wan_outages,
                s.name.starts_with("wan-outage"),
                "{}",
                s.name
            );
        }
    }
}
