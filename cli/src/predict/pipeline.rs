//! `hmw predict` on a pipeline plan (`docs/model.md` section 13): the mapping the run starts
//! with and each part's time, the bottleneck, latency, throughput and makespan, the three
//! mappings side by side, the advice, and what a remap brings under a slowdown
//! (`--slowdown`).

use std::fmt::Write as _;

use anyhow::{anyhow, bail, Context as _, Result};
use hmw_model::{
    pipeline::{
        predict_pipeline, Evaluation, Mapping, Part, PipelineAdvice, PipelinePrediction,
        PipelineSystem, Slowdown,
    },
    plan::{Plan, Threshold},
};

use super::format::{amount, num, seconds};

/// A slowdown as the command line gives it: `HOST=FACTOR@WHEN`, `HOST` a worker's host or
/// `bottleneck` (the first node of the bottleneck group), `FACTOR` how many times slower,
/// `WHEN` seconds from the start or `P%` of the predicted makespan.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowdownSpec {
    host: Option<String>,
    factor: f64,
    at: When,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum When {
    Seconds(f64),
    Share(f64),
}

impl std::str::FromStr for SlowdownSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let usage = "expected HOST=FACTOR@WHEN, e.g. bottleneck=3@30% or spain-1=2@12.5";
        let (host, rest) = text.split_once('=').ok_or(usage)?;
        let (factor, at) = rest.split_once('@').ok_or(usage)?;
        let factor: f64 = factor
            .parse()
            .ok()
            .filter(|f: &f64| f.is_finite() && *f > 0.0)
            .ok_or_else(|| format!("`{factor}`: the factor is a positive number ({usage})"))?;
        let at = match at.strip_suffix('%') {
            Some(p) => p
                .parse()
                .ok()
                .filter(|p: &f64| (0.0..=100.0).contains(p))
                .map(|p| When::Share(p / 100.0)),
            None => at
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                .map(When::Seconds),
        }
        .ok_or_else(|| format!("`{at}`: seconds, 0 or more, or a percentage ({usage})"))?;
        Ok(SlowdownSpec {
            host: (host != "bottleneck").then(|| host.to_owned()),
            factor,
            at,
        })
    }
}

impl SlowdownSpec {
    /// The slowdown on `system`, whose run would take `makespan_s` and whose bottleneck
    /// group's first node is `bottleneck_node`.
    pub fn resolve(
        &self,
        system: &PipelineSystem,
        makespan_s: f64,
        bottleneck_node: Option<usize>,
    ) -> Result<Slowdown> {
        let node = match &self.host {
            Some(host) => system
                .nodes
                .iter()
                .position(|n| &n.host == host)
                .ok_or_else(|| anyhow!("--slowdown: `{host}` is not a worker of the plan"))?,
            None => bottleneck_node
                .context("--slowdown bottleneck: the bottleneck is a WAN, not a node")?,
        };
        let at_s = match self.at {
            When::Seconds(s) => s,
            When::Share(p) => p * makespan_s,
        };
        Ok(Slowdown {
            node,
            factor: self.factor,
            at_s,
        })
    }
}

/// The first node of the bottleneck group of `evaluation`, when it is a group.
pub fn bottleneck_node(mapping: &Mapping, evaluation: &Evaluation) -> Option<usize> {
    match evaluation.parts[evaluation.bottleneck].part {
        Part::Group { group } => mapping.groups[group].replicas.first().copied(),
        Part::Wan { .. } => None,
    }
}

/// The prediction of a pipeline plan, with the gain under `slowdown` when given.
pub fn predict(
    plan: &Plan,
    system: &PipelineSystem,
    slowdown: Option<&SlowdownSpec>,
) -> Result<PipelinePrediction> {
    let pipeline = plan.pipeline.as_ref().context("not a pipeline plan")?;
    let first = predict_pipeline(system, pipeline.mapping, pipeline.threshold, None)?;
    let Some(spec) = slowdown else {
        return Ok(first);
    };
    let chosen = &first.chosen;
    let slowdown = spec.resolve(
        system,
        chosen.evaluation.makespan_s,
        bottleneck_node(&chosen.mapping, &chosen.evaluation),
    )?;
    Ok(predict_pipeline(
        system,
        pipeline.mapping,
        pipeline.threshold,
        Some(slowdown),
    )?)
}

/// A part's name: its stages (`fft`, `fft..reduce`) or its WAN (`WAN to spain`).
fn part_name(system: &PipelineSystem, mapping: &Mapping, part: &Part) -> String {
    match *part {
        Part::Group { group } => {
            let g = &mapping.groups[group];
            let stages = &system.app.stages;
            if g.first == g.last {
                stages[g.first].name.clone()
            } else {
                format!("{}..{}", stages[g.first].name, stages[g.last].name)
            }
        }
        Part::Wan { cluster, up, .. } => {
            let c = &system.clusters[cluster];
            match (up, c.parent) {
                (true, Some(p)) => format!("WAN {} -> {}", c.name, system.clusters[p].name),
                (false, Some(p)) => format!("WAN {} -> {}", system.clusters[p].name, c.name),
                _ => format!("WAN of {}", c.name),
            }
        }
    }
}

/// Where a part runs: its nodes (and manager), or its bytes and rate.
fn part_place(system: &PipelineSystem, mapping: &Mapping, part: &Part) -> String {
    match *part {
        Part::Group { group } => {
            let g = &mapping.groups[group];
            let hosts: Vec<&str> = g
                .replicas
                .iter()
                .map(|&k| system.nodes[k].host.as_str())
                .collect();
            let cluster = &system.clusters[system.nodes[g.replicas[0]].cluster].name;
            if g.managed() {
                format!("{} (manager: {cluster}'s head)", hosts.join(", "))
            } else {
                hosts.join(", ")
            }
        }
        Part::Wan { cluster, up, bytes } => {
            let c = &system.clusters[cluster];
            let rate = if up {
                c.wan_out_bytes_per_s
            } else {
                c.wan_in_bytes_per_s
            };
            format!("{} B at {} B/s", amount(bytes), num(rate))
        }
    }
}

fn hms(s: f64) -> String {
    if !(s.is_finite() && s < 1e9) {
        return "-".into();
    }
    let s = s.round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn threshold_text(plan_threshold: Threshold, value: Option<f64>) -> String {
    match (plan_threshold, value) {
        (_, None) => "never".into(),
        (Threshold::Default, Some(x)) => format!("default (158), X = {x:.3}"),
        (_, Some(x)) => format!("fixed, X = {x:.3}"),
    }
}

/// The prediction as text.
pub fn to_text(plan: &Plan, system: &PipelineSystem, p: &PipelinePrediction) -> String {
    let mut t = String::new();
    let app = &system.app;
    let threshold = plan
        .pipeline
        .as_ref()
        .map_or(Threshold::Default, |pp| pp.threshold);
    let _ = writeln!(
        t,
        "{}: a pipeline of {} stages, {} items; an item {} B from the source",
        plan.name,
        app.stages.len(),
        amount(app.items as f64),
        amount(app.item_bytes)
    );
    let _ = writeln!(
        t,
        "mapping {} ({} nodes on {} clusters), threshold {}, window {} items, watched over {} \
         items",
        p.chosen.mode.name(),
        system.nodes.len(),
        system.clusters.len(),
        threshold_text(threshold, p.threshold),
        p.window,
        p.detection_items
    );
    let _ = writeln!(t, "\n== Stages ==");
    let _ = writeln!(
        t,
        "{:<16} {:>12} {:>12} {:>14}",
        "stage", "oper", "bytes out", "fastest node s"
    );
    for (j, s) in app.stages.iter().enumerate() {
        let fastest = system
            .nodes
            .iter()
            .map(|n| n.stage_s[j])
            .fold(f64::INFINITY, f64::min);
        let _ = writeln!(
            t,
            "{:<16} {:>12} {:>12} {:>14}",
            s.name,
            num(s.oper),
            amount(s.output_bytes),
            seconds(fastest)
        );
    }
    let (mapping, e) = (&p.chosen.mapping, &p.chosen.evaluation);
    let _ = writeln!(t, "\n== Mapping ({}) ==", p.chosen.mode.name());
    let _ = writeln!(
        t,
        "{:<22} {:<44} {:>10} {:>10} {:>10}",
        "part", "where", "Tr s", "held s", "latency s"
    );
    for (i, part) in e.parts.iter().enumerate() {
        let mark = if i == e.bottleneck {
            " <- bottleneck"
        } else {
            ""
        };
        let _ = writeln!(
            t,
            "{:<22} {:<44} {:>10} {:>10} {:>10}{mark}",
            part_name(system, mapping, &part.part),
            part_place(system, mapping, &part.part),
            seconds(part.production_s),
            seconds(part.held_s),
            seconds(part.latency_s)
        );
    }
    let _ = writeln!(
        t,
        "bottleneck {} ({} s per item); latency {} s; throughput {} items/s; makespan {} s ({})",
        part_name(system, mapping, &e.parts[e.bottleneck].part),
        seconds(e.bottleneck_s),
        seconds(e.latency_s),
        num(e.throughput),
        seconds(e.makespan_s),
        hms(e.makespan_s)
    );
    let _ = writeln!(t, "\n== The three mappings ==");
    for m in &p.alternatives {
        let hosts: Vec<String> = m
            .mapping
            .groups
            .iter()
            .map(|g| {
                let stages = if g.first == g.last {
                    app.stages[g.first].name.clone()
                } else {
                    format!("{}..{}", app.stages[g.first].name, app.stages[g.last].name)
                };
                let nodes: Vec<&str> = g
                    .replicas
                    .iter()
                    .map(|&k| system.nodes[k].host.as_str())
                    .collect();
                format!("{stages}: {}", nodes.join(","))
            })
            .collect();
        let _ = writeln!(
            t,
            "{:<7} bottleneck {:>9} s, {:>9} items/s, makespan {:>10} s | {}",
            m.mode.name(),
            seconds(m.evaluation.bottleneck_s),
            num(m.evaluation.throughput),
            seconds(m.evaluation.makespan_s),
            hosts.join(" | ")
        );
    }
    let _ = writeln!(t, "\n== Tuning advice ==");
    if p.advice.is_empty() {
        let _ = writeln!(t, "none");
    }
    for a in &p.advice {
        let _ = writeln!(t, "{}", advice_text(system, mapping, a));
    }
    if let Some(g) = &p.gain {
        let _ = writeln!(t, "\n== A remap under a slowdown ==");
        let node = &system.nodes[g.slowdown.node].host;
        let _ = writeln!(
            t,
            "{node} {}x slower from {} s ({} items through): the mapping kept (never) ends at \
             {} s",
            num(g.slowdown.factor),
            seconds(g.slowdown.at_s),
            num(g.items_before),
            seconds(g.never_s)
        );
        match &g.remapped {
            Some((m, new)) if g.remaps => {
                let _ = writeln!(
                    t,
                    "adaptive: detection {} s, drain {} s, calibration and remap {} s; then {} \
                     s per item ({}); ends at {} s",
                    seconds(g.detect_s),
                    seconds(g.drain_s),
                    seconds(g.calibrate_s),
                    seconds(new.bottleneck_s),
                    m.groups
                        .iter()
                        .map(|gr| gr
                            .replicas
                            .iter()
                            .map(|&k| system.nodes[k].host.as_str())
                            .collect::<Vec<_>>()
                            .join(","))
                        .collect::<Vec<_>>()
                        .join(" | "),
                    seconds(g.adaptive_s)
                );
            }
            _ => {
                let _ = writeln!(t, "adaptive: the threshold is not passed, no remap");
            }
        }
        let _ = writeln!(t, "remap gain {:.3} (1 - adaptive / never)", g.gain);
    }
    t
}

fn advice_text(system: &PipelineSystem, mapping: &Mapping, advice: &PipelineAdvice) -> String {
    let stages = |(a, b): (usize, usize)| {
        let s = &system.app.stages;
        if a == b {
            s[a].name.clone()
        } else {
            format!("{}..{}", s[a].name, s[b].name)
        }
    };
    match advice {
        PipelineAdvice::Replicate {
            stages: st,
            target_s,
            replicas: n,
            ..
        } => format!(
            "replicate {} on {n} nodes behind a manager: down to {} s per item, the next \
             slowest part's (PL(4)/(5))",
            stages(*st),
            seconds(*target_s)
        ),
        PipelineAdvice::Merge {
            stages: st,
            merged_s,
            node,
            saves_wan,
            ..
        } => format!(
            "merge {} on {}: {} s per item, no slower than the bottleneck; frees a node{}",
            stages(*st),
            system.nodes[*node].host,
            seconds(*merged_s),
            if *saves_wan {
                " and a WAN crossing"
            } else {
                ""
            }
        ),
        PipelineAdvice::WanBound {
            cluster,
            up,
            production_s,
            ..
        } => {
            let part = Part::Wan {
                cluster: *cluster,
                up: *up,
                bytes: 0.0,
            };
            format!(
                "the {} limits the pipeline ({} s per item): keep the stages on either side in \
                 one cluster, or send fewer bytes across it",
                part_name(system, mapping, &part),
                seconds(*production_s)
            )
        }
    }
}

/// The prediction as JSON: [`PipelinePrediction`]'s fields, and each node's host (`hosts`)
/// and cluster (`node_clusters`), in the order of the mappings' node indices.
pub fn to_json(system: &PipelineSystem, p: &PipelinePrediction) -> Result<serde_json::Value> {
    let mut json = serde_json::to_value(p)?;
    json["hosts"] = serde_json::to_value(
        system
            .nodes
            .iter()
            .map(|n| n.host.as_str())
            .collect::<Vec<_>>(),
    )?;
    json["node_clusters"] = serde_json::to_value(
        system
            .nodes
            .iter()
            .map(|n| system.clusters[n.cluster].name.as_str())
            .collect::<Vec<_>>(),
    )?;
    Ok(json)
}

/// An error when a pipeline option is given for a master-worker plan.
pub fn not_a_pipeline(option: &str) -> Result<()> {
    bail!("{option} applies to a pipeline plan (one with [pipeline]) only")
}
