//! A pipeline plan as the pipeline model's input: its `[pipeline]` table, its clusters and
//! workers, and the values of a measured system.

use super::{
    error::{invalid, invalid_machine, PlanError},
    validated::Plan,
};
use crate::params::MeasuredSystem;
use crate::pipeline::{PipelineApp, PipelineCluster, PipelineNode, PipelineSystem};

impl Plan {
    /// The pipeline model's input: every worker of every cluster a node, each stage's time on
    /// it `oper / perf` or, from `measured`, the times a calibration took (`stage_s`); the
    /// clusters' LANs and WANs as for [`Plan::model_input`]. Fails on a plan without
    /// `[pipeline]`, a value neither the plan nor `measured` gives, or measured stage times
    /// that do not match the stages.
    pub fn pipeline_system(
        &self,
        measured: Option<&MeasuredSystem>,
    ) -> Result<PipelineSystem, PlanError> {
        let Some(pipeline) = &self.pipeline else {
            return Err(invalid(
                None,
                "pipeline",
                "the plan has no [pipeline] table: it is a master-worker plan",
            ));
        };
        let input = self.model_input(measured)?;
        let mut clusters = Vec::new();
        let mut nodes = Vec::new();
        for (index, (plan, params)) in self.clusters.iter().zip(&input.system.clusters).enumerate()
        {
            let launch = plan
                .launch_settings()
                .map_err(|e| invalid(Some(&plan.name), "launch", e.message().trim().to_string()))?;
            let parent = match launch.parent {
                _ if plan.main => None,
                Some(name) => Some(
                    self.clusters
                        .iter()
                        .position(|c| c.name == name)
                        .ok_or_else(|| {
                            invalid(
                                Some(&plan.name),
                                "launch.parent",
                                format!("names no cluster of the plan: `{name}`"),
                            )
                        })?,
                ),
                None => Some(0),
            };
            let link = params.external.as_ref();
            clusters.push(PipelineCluster {
                name: plan.name.clone(),
                parent,
                lan_bytes_per_s: params.lan_bytes_per_s,
                wan_in_bytes_per_s: link.map_or(f64::INFINITY, |l| l.wan_in_bytes_per_s),
                wan_out_bytes_per_s: link.map_or(f64::INFINITY, |l| l.wan_out_bytes_per_s),
                wan_rtt_s: plan.wan_rtt_s(measured),
            });
            let measured_cluster =
                measured.and_then(|m| m.clusters.iter().find(|c| c.name == plan.name));
            for worker in &params.workers {
                let measured_worker =
                    measured_cluster.and_then(|c| c.workers.iter().find(|w| w.host == worker.host));
                let timed = measured_worker.and_then(|w| w.stage_s.clone());
                let stage_s = match timed {
                    Some(times) if times.len() == pipeline.stages.len() => times,
                    Some(times) => {
                        return Err(invalid_machine(
                            &plan.name,
                            &worker.host,
                            "stage_s",
                            format!(
                                "the measured system gives {} stage times, the plan has {} \
                                 stages",
                                times.len(),
                                pipeline.stages.len()
                            ),
                        ))
                    }
                    None => pipeline
                        .stages
                        .iter()
                        .map(|s| s.oper / worker.perf)
                        .collect(),
                };
                nodes.push(PipelineNode {
                    cluster: index,
                    host: worker.host.clone(),
                    stage_s,
                    repeat_cv: measured_worker.and_then(|w| w.chain_cv).unwrap_or(0.0),
                });
            }
        }
        Ok(PipelineSystem {
            app: PipelineApp {
                items: pipeline.items,
                item_bytes: pipeline.item_bytes,
                stages: pipeline.stages.clone(),
            },
            nodes,
            clusters,
            options: pipeline.options.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{MeasuredCluster, MeasuredWorker};
    use crate::plan::{MappingMode, Threshold};

    /// A pipeline of three stages over two clusters.
    const PIPE: &str = r#"
[application]
name = "signal"

[pipeline]
items = 100
item_bytes = 16
threshold = 0.5
[[pipeline.stage]]
name = "fft"
oper = 4.0
output_bytes = 1000
[[pipeline.stage]]
name = "filter"
oper = 1.0
output_bytes = 1000
[[pipeline.stage]]
name = "reduce"
oper = 1.0
output_bytes = 8

[[cluster]]
name = "home"
main = true
lan_bytes_per_s = 1e6
machines = [
  { host = "m", role = "master" },
  { host = "w1", role = "worker", perf = 2.0 },
]

[[cluster]]
name = "away"
lan_bytes_per_s = 1e6
wan_in_bytes_per_s = 1e4
wan_out_bytes_per_s = 2e4
wan_rtt_s = 0.05
machines = [
  { host = "s", role = "submaster" },
  { host = "c", role = "cm" },
  { host = "x1", role = "worker", perf = 1.0 },
]
"#;

    fn error_of(text: &str) -> String {
        Plan::from_toml_str(text).unwrap_err().to_string()
    }

    #[test]
    fn a_pipeline_plan_loads_and_gives_the_model_its_input() {
        let plan = Plan::from_toml_str(PIPE).unwrap();
        let pipeline = plan.pipeline.as_ref().unwrap();
        assert_eq!(pipeline.stages.len(), 3);
        assert_eq!(pipeline.threshold, Threshold::Fixed(0.5));
        assert_eq!(pipeline.mapping, MappingMode::Model);
        // The items are the run's tasks, an item through every stage its operations.
        assert_eq!(plan.application.tasks, 100);
        assert_eq!(plan.application.oper, 6.0);
        assert_eq!(plan.application.result_bytes, 8.0);
        let system = plan.pipeline_system(None).unwrap();
        assert_eq!(system.nodes.len(), 2);
        assert_eq!(system.nodes[0].stage_s, vec![2.0, 0.5, 0.5]);
        assert_eq!(system.nodes[1].stage_s, vec![4.0, 1.0, 1.0]);
        assert_eq!(system.clusters[1].parent, Some(0));
        assert_eq!(system.clusters[1].wan_rtt_s, 0.05);
        // A calibration's stage times replace oper / perf.
        let measured = MeasuredSystem {
            clusters: vec![MeasuredCluster {
                name: "away".into(),
                lan_bytes_per_s: None,
                wan_in_bytes_per_s: None,
                wan_out_bytes_per_s: None,
                wan_rtt_s: None,
                wan_in_ramp_s: None,
                wan_out_ramp_s: None,
                master_cpu_per_task_s: None,
                cm_cpu_per_task_s: None,
                lan_scv: None,
                workers: vec![MeasuredWorker {
                    host: "x1".into(),
                    perf: 1.0,
                    own_comm_bytes_per_s: None,
                    cores: None,
                    stage_s: Some(vec![3.0, 1.0, 0.5]),
                    chain_cv: Some(0.02),
                }],
                lan_runs: Vec::new(),
            }],
            ..MeasuredSystem::default()
        };
        let system = plan.pipeline_system(Some(&measured)).unwrap();
        assert_eq!(system.nodes[1].stage_s, vec![3.0, 1.0, 0.5]);
        assert_eq!(system.nodes[1].repeat_cv, 0.02);
        let mut wrong = measured.clone();
        wrong.clusters[0].workers[0].stage_s = Some(vec![1.0]);
        let err = plan.pipeline_system(Some(&wrong)).unwrap_err().to_string();
        assert!(
            err.contains(
                "cluster `away`, machine `x1`, key `stage_s`: the measured system gives 1"
            ),
            "{err}"
        );
    }

    #[test]
    fn bad_pipeline_keys_are_named() {
        let cases = [
            (
                "items = 100",
                "items = 0",
                "key `pipeline.items`: must be at least 1",
            ),
            (
                "threshold = 0.5",
                "threshold = -1.0",
                "key `pipeline.threshold`",
            ),
            (
                "threshold = 0.5",
                "threshold = \"sometimes\"",
                "key `pipeline.threshold`",
            ),
            (
                "threshold = 0.5",
                "treshold = 0.5",
                "unknown key `treshold`",
            ),
            (
                "oper = 4.0",
                "oper = 0.0",
                "key `pipeline.stage[name = fft].oper`",
            ),
            (
                "name = \"filter\"",
                "name = \"fft\"",
                "pipeline.stage[name = fft].name",
            ),
            (
                "output_bytes = 8",
                "output_bytes = 8\nspeed = 2",
                "unknown key `speed`",
            ),
            (
                "item_bytes = 16",
                "item_bytes = 16\nmapping = \"best\"",
                "unknown variant `best`",
            ),
            (
                "item_bytes = 16",
                "item_bytes = 16\nwindow = 0",
                "key `pipeline.window`",
            ),
        ];
        for (from, to, needle) in cases {
            let text = PIPE.replacen(from, to, 1);
            assert_ne!(text, PIPE, "{from}");
            let err = error_of(&text);
            assert!(err.contains(needle), "{to}: {err}");
        }
        let err = error_of(&PIPE.replacen("threshold = 0.5", "treshold = 0.5", 1));
        assert!(
            err.starts_with("line 8, column 1: [pipeline]: unknown key `treshold`, expected"),
            "{err}"
        );
        let err = error_of(&PIPE.replace("name = \"signal\"", "name = \"signal\"\ntasks = 3"));
        assert!(
            err.contains("key `application.tasks`: a pipeline plan"),
            "{err}"
        );
        let never = Plan::from_toml_str(&PIPE.replace("threshold = 0.5", "threshold = \"never\""));
        assert_eq!(never.unwrap().pipeline.unwrap().threshold, Threshold::Never);
        let plain = Plan::from_toml_str(&PIPE.replace("threshold = 0.5\n", "")).unwrap();
        assert_eq!(plain.pipeline.unwrap().threshold, Threshold::Default);
    }

    #[test]
    fn a_master_worker_plan_has_no_pipeline_system() {
        let text = PIPE.split("[pipeline]").next().unwrap().replace(
            "name = \"signal\"",
            "name = \"mw\"\ntasks = 5\ntask_bytes = 1\nresult_bytes = 1",
        ) + &PIPE[PIPE.find("[[cluster]]").unwrap()..];
        let plan = Plan::from_toml_str(&text).unwrap();
        let err = plan.pipeline_system(None).unwrap_err().to_string();
        assert!(err.contains("no [pipeline] table"), "{err}");
        let err = error_of(&text.replace("task_bytes = 1\n", ""));
        assert!(err.contains("missing key `task_bytes`"), "{err}");
    }
}
