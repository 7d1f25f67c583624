//! `hmw predict PLAN --compare OTHER ...`: the same application on other shapes of the
//! federation (a star, a tree of regions, other parents), each predicted, side by side, and
//! why the faster one wins: what the links of each shape are asked against their rates
//! (173)(174), how many links the main cluster holds, how busy its master and CMs are (177),
//! and the round trips of the longest path (the extra hop).

use std::{fmt::Write as _, path::Path};

use anyhow::{anyhow, Result};
use hmw_model::{
    main_path::{cms_busy, links_at_main, messages_per_task},
    methodology::Prediction,
    params::ModelInput,
    plan::{load_plan, model_input_with_measured},
    predict,
    shared_links::{link_loads, LinkLoad},
};

use super::format::seconds;

/// One shape: its name for the table, the model's input, its prediction and the links its
/// clusters ask beyond their rate (173)(174), the most loaded first.
pub(super) struct Shape {
    name: String,
    input: ModelInput,
    prediction: Prediction,
    oversubscribed: Vec<LinkLoad>,
}

/// The shapes compared: the plan at `path` (its input and prediction already made) first, then
/// `others`.
pub(super) fn shapes(
    path: &Path,
    input: ModelInput,
    prediction: Prediction,
    others: Vec<Shape>,
) -> Vec<Shape> {
    std::iter::once(Shape::new(name_of(path), input, prediction))
        .chain(others)
        .collect()
}

/// A plan's name in the table: its file's stem.
fn name_of(path: &Path) -> String {
    path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into(),
    )
}

impl Shape {
    /// The plan at `path` predicted, with the measured system `measured` when given.
    pub(super) fn predicted(path: &Path, measured: Option<&Path>) -> Result<Shape> {
        let plan = load_plan(path)?;
        if plan.pipeline.is_some() {
            return Err(anyhow!(
                "{}: --compare takes master-worker plans",
                path.display()
            ));
        }
        let (input, _) = model_input_with_measured(&plan, path, measured)?;
        Shape::of(name_of(path), input).map_err(|e| anyhow!("{}: {e}", path.display()))
    }

    /// The shape `name` of the model's input `input`, predicted.
    fn of(name: String, input: ModelInput) -> Result<Shape, hmw_model::ModelError> {
        let prediction = predict(&input)?;
        Ok(Shape::new(name, input, prediction))
    }

    /// The shape `name` of `input` and its `prediction`.
    fn new(name: String, input: ModelInput, prediction: Prediction) -> Shape {
        let mut oversubscribed: Vec<LinkLoad> = link_loads(&input)
            .into_iter()
            .filter(|l| l.load() > 1.0)
            .collect();
        oversubscribed.sort_by(|a, b| b.load().total_cmp(&a.load()));
        Shape {
            name,
            input,
            prediction,
            oversubscribed,
        }
    }

    /// The middle of the predicted range, seconds.
    fn middle_s(&self) -> f64 {
        (self.prediction.run.t_ex_best + self.prediction.run.t_ex_worst) / 2.0
    }

    /// Tasks a second the whole run gathers in its steady state: every cluster's rate, all of
    /// which passes through the main master.
    fn steady_tasks_per_s(&self) -> f64 {
        let oper = self.input.application.oper;
        self.prediction
            .clusters
            .iter()
            .map(|c| c.perf_ste / oper)
            .sum()
    }

    /// External clusters whose link goes to the main cluster.
    fn main_links(&self) -> usize {
        links_at_main(&self.input)
    }

    /// The longest round trip from the master to a sub-master, seconds, and whose.
    fn longest_round_trip(&self) -> (f64, &str) {
        self.input
            .system
            .clusters
            .iter()
            .filter_map(|c| c.external.as_ref().map(|l| (l.wan_rtt_s, c.name.as_str())))
            .fold((0.0, "-"), |a, b| if b.0 > a.0 { b } else { a })
    }

    /// The main master's CPU per task, seconds (125), 0 when not known.
    fn master_cpu_s(&self) -> f64 {
        self.input.system.clusters[0].dispatch.master_s
    }

    /// The share of a core the main cluster's CMs spend at the predicted steady rates (177):
    /// their idle cost per link and their cost per task of each external cluster; `None`
    /// when neither is known.
    fn cms_busy(&self) -> Option<f64> {
        let clusters = &self.input.system.clusters;
        let main = clusters[0].dispatch;
        if main.cm_s == 0.0 && main.cm_idle_per_link == 0.0 {
            return None;
        }
        let oper = self.input.application.oper;
        let relayed: f64 = self
            .prediction
            .clusters
            .iter()
            .filter_map(|p| {
                let link = clusters
                    .iter()
                    .find(|c| c.name == p.name)?
                    .external
                    .as_ref()?;
                Some(p.perf_ste / oper * messages_per_task(Some(link)))
            })
            .sum();
        Some(cms_busy(&main, self.main_links(), relayed))
    }

    fn cluster_name(&self, c: usize) -> &str {
        &self.input.system.clusters[c].name
    }
}

/// The table of the shapes side by side, and the verdict with its reasons.
pub(super) fn to_text(shapes: &[Shape]) -> String {
    let mut out = String::from("\n== Shapes compared ==\n");
    let w = &mut out;
    let row = |w: &mut String, label: &str, cell: &dyn Fn(&Shape) -> String| {
        let _ = write!(w, "{label:<46}");
        for shape in shapes {
            let _ = write!(w, " {:>16}", cell(shape));
        }
        w.push('\n');
    };
    row(w, "plan", &|s| s.name.clone());
    row(w, "execution time best (s)", &|s| {
        seconds(s.prediction.run.t_ex_best)
    });
    row(w, "execution time worst (s)", &|s| {
        seconds(s.prediction.run.t_ex_worst)
    });
    row(w, "steady rate, all through the master (tasks/s)", &|s| {
        format!("{:.2}", s.steady_tasks_per_s())
    });
    row(w, "links at the main cluster", &|s| {
        s.main_links().to_string()
    });
    row(
        w,
        "main master busy (of a core)",
        &|s| match s.master_cpu_s() {
            c if c > 0.0 => format!("{:.3}", c * s.steady_tasks_per_s()),
            _ => "not known".into(),
        },
    );
    row(w, "main cluster's CMs busy (of a core)", &|s| {
        s.cms_busy()
            .map_or_else(|| "not known".into(), |b| format!("{b:.3}"))
    });
    row(w, "longest round trip (ms)", &|s| {
        format!("{:.0}", s.longest_round_trip().0 * 1e3)
    });
    row(w, "links asked beyond their rate", &|s| {
        s.oversubscribed.len().to_string()
    });
    row(w, "most loaded link (asked / rate)", &|s| {
        s.oversubscribed
            .first()
            .map_or("-".into(), |l| format!("{:.2}", l.load()))
    });
    if let Some(verdict) = verdict(shapes) {
        w.push_str(&verdict);
    }
    out
}

/// The shapes as JSON: per plan its range, steady rate, links at the main cluster, longest
/// round trip and links asked beyond their rate; and the verdict.
pub(super) fn to_json(shapes: &[Shape]) -> serde_json::Value {
    let plans: Vec<serde_json::Value> = shapes
        .iter()
        .map(|s| {
            serde_json::json!({
                "plan": s.name,
                "t_ex_best": s.prediction.run.t_ex_best,
                "t_ex_worst": s.prediction.run.t_ex_worst,
                "steady_tasks_per_s": s.steady_tasks_per_s(),
                "main_links": s.main_links(),
                "longest_rtt_s": s.longest_round_trip().0,
                "oversubscribed_links": s.oversubscribed.iter().map(|l| serde_json::json!({
                    "cluster": s.cluster_name(l.cluster),
                    "load": l.load(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({ "shapes": plans, "verdict": verdict(shapes) })
}

/// Which shape is predicted the fastest, by how much over each other, and why.
fn verdict(shapes: &[Shape]) -> Option<String> {
    let fastest = shapes
        .iter()
        .min_by(|a, b| a.middle_s().total_cmp(&b.middle_s()))?;
    let mut out = String::new();
    for other in shapes.iter().filter(|s| !std::ptr::eq(*s, fastest)) {
        let ratio = other.middle_s() / fastest.middle_s();
        let _ = writeln!(
            out,
            "{} is predicted {:.2} times as long as {} (the middles of their ranges): {}",
            other.name,
            ratio,
            fastest.name,
            reasons(fastest, other)
        );
    }
    Some(out)
}

/// Why `slower` takes longer than `faster`: the rate its links leave it, the main master's
/// load, or the round trips of its longest path.
fn reasons(faster: &Shape, slower: &Shape) -> String {
    let mut why = Vec::new();
    let (rate_f, rate_s) = (faster.steady_tasks_per_s(), slower.steady_tasks_per_s());
    if rate_s < 0.99 * rate_f {
        let mut because = format!("its steady rate is {rate_s:.2} tasks/s against {rate_f:.2}");
        let links = &slower.oversubscribed;
        if let Some(worst) = links.first() {
            let _ = write!(
                because,
                ", because {} of its links are asked beyond their rate, which their clusters \
                 share (173)(174): the link of {} carries {:.2} times its rate",
                links.len(),
                slower.cluster_name(worst.cluster),
                worst.load()
            );
        }
        why.push(because);
    }
    let busy = |s: &Shape| s.master_cpu_s() * s.steady_tasks_per_s();
    if busy(slower) > 0.5 && busy(slower) > busy(faster) {
        why.push(format!(
            "its main master is {:.2} of a core busy handling messages, against {:.2}",
            busy(slower),
            busy(faster)
        ));
    }
    let cms = |s: &Shape| s.cms_busy().unwrap_or(0.0);
    if cms(slower) > 0.5 && cms(slower) > cms(faster) {
        why.push(format!(
            "the main cluster's CMs are {:.2} of a core busy with its {} links, against {:.2} \
             (177)",
            cms(slower),
            slower.main_links(),
            cms(faster)
        ));
    }
    let (rtt_f, rtt_s) = (faster.longest_round_trip(), slower.longest_round_trip());
    if rtt_s.0 > rtt_f.0 {
        why.push(format!(
            "its longest path, to {}, has round trips of {:.0} ms against {:.0} ms, which its \
             startup and end wait (96)(97)",
            rtt_s.1,
            rtt_s.0 * 1e3,
            rtt_f.0 * 1e3
        ));
    }
    if why.is_empty() {
        "the same rates and round trips: its workers' start and end differ".into()
    } else {
        why.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use hmw_model::plan::Plan;

    use super::*;

    /// Three external clusters, each asking 60 B/s of tasks: under the main cluster (a star),
    /// or two of them under the first (a tree whose uplink of 100 B/s they share).
    fn shape(tree: bool) -> Shape {
        let cluster = |name: &str, parent: bool| {
            let parent = if parent { "parent = \"hub\"\n" } else { "" };
            format!(
                "[[cluster]]\nname = \"{name}\"\nlan_bytes_per_s = 1e6\nwan_in_bytes_per_s = 100\n\
                 wan_out_bytes_per_s = 100\nmachines = [\n{{ host = \"{name}-s\", role = \"submaster\" }},\n\
                 {{ host = \"{name}-1\", role = \"worker\", perf = 1.0 }},\n]\n[cluster.launch]\n\
                 wan_delay_ms = 10\n{parent}"
            )
        };
        let text = format!(
            "[application]\nname = \"shape\"\ntasks = 200\noper = 1.0\ntask_bytes = 60\n\
             result_bytes = 1\n[[cluster]]\nname = \"home\"\nmain = true\nlan_bytes_per_s = 1e6\n\
             machines = [\n{{ host = \"m\", role = \"master\" }},\n\
             {{ host = \"w1\", role = \"worker\", perf = 1.0 }},\n]\n{}{}{}",
            cluster("hub", false),
            cluster("leaf1", tree),
            cluster("leaf2", tree)
        );
        let input = Plan::from_toml_str(&text)
            .unwrap()
            .model_input(None)
            .unwrap();
        Shape::of(if tree { "tree" } else { "star" }.into(), input).unwrap()
    }

    #[test]
    fn the_tree_whose_uplink_its_region_oversubscribes_loses_and_says_why() {
        let shapes = [shape(false), shape(true)];
        assert_eq!(shapes[0].main_links(), 3);
        assert_eq!(shapes[1].main_links(), 1);
        assert!(shapes[0].oversubscribed.is_empty());
        let loads = &shapes[1].oversubscribed;
        assert_eq!(loads.len(), 1);
        assert_eq!(shapes[1].cluster_name(loads[0].cluster), "hub");
        assert!((loads[0].load() - 1.8).abs() < 1e-12);
        // The star: four clusters at one task a second; the tree: the main cluster's one and
        // the region's 100 B/s of 60 B tasks.
        assert!((shapes[0].steady_tasks_per_s() - 4.0).abs() < 1e-12);
        assert!((shapes[1].steady_tasks_per_s() - (1.0 + 100.0 / 60.0)).abs() < 1e-9);
        let text = to_text(&shapes);
        assert!(
            text.contains("tree is predicted")
                && text.contains("times as long as star")
                && text.contains("the link of hub carries 1.80 times its rate")
                && text.contains("its longest path, to leaf"),
            "{text}"
        );
        let json = to_json(&shapes);
        assert_eq!(
            json["shapes"][1]["oversubscribed_links"][0]["cluster"],
            "hub"
        );
        assert!(text.contains("main cluster's CMs busy (of a core)") && text.contains("not known"));
    }

    /// The main cluster's CMs at 0.2 of a core per idle link and 0.1 s a task (177): the star's
    /// three links and three tasks a second make 0.9 of a core, the tree's one link and 5/3
    /// tasks a second 0.367, and the star's CMs are among its reasons when it is the slower.
    #[test]
    fn the_main_cluster_s_cms_are_counted_per_shape() {
        let with_costs = |tree: bool| {
            let mut shape = shape(tree);
            let main = &mut shape.input.system.clusters[0].dispatch;
            main.cm_s = 0.1;
            main.cm_idle_per_link = 0.2;
            shape
        };
        let (star, tree) = (with_costs(false), with_costs(true));
        assert!((star.cms_busy().unwrap() - 0.9).abs() < 1e-9);
        assert!((tree.cms_busy().unwrap() - (0.2 + 0.1 * 100.0 / 60.0)).abs() < 1e-9);
        let why = reasons(&tree, &star);
        assert!(
            why.contains(
                "the main cluster's CMs are 0.90 of a core busy with its 3 links, against 0.37 \
                 (177)"
            ),
            "{why}"
        );
    }
}
