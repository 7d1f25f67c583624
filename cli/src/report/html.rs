//! `hmw report --html`: the report as one self-contained HTML file, to open in any browser
//! with no network: the verdict, the whole run's chart and one chart per cluster (the
//! report's SVG, inline), the predicted against measured figures of the run and of each
//! cluster (shares, rates, efficiencies), the links, the outages, clusters lost and back, and
//! the re-planning decisions; the text tables of `hmw report` last. No script, no style
//! sheet, image or font from elsewhere, no URL at all.

use std::fmt::Write as _;

use hmw_core::stats::{ClusterReport, RunStats};

use super::document::{Report, ReportError};

/// The size of each cluster's chart, pixels.
const CLUSTER_CHART: (u32, u32) = (1200, 760);

/// `text` with `&`, `<`, `>` and `"` escaped, for HTML text and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// An SVG document as an element of an HTML page: without its XML namespace declaration
/// (an HTML parser puts `<svg>` in it anyway), so the page holds no URL; scaled to the page's
/// width.
fn inline_svg(svg: &str) -> String {
    svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
        .replacen(
            "<svg ",
            "<svg style=\"max-width:100%;height:auto\" preserveAspectRatio=\"xMinYMin meet\" ",
            1,
        )
}

/// An id for cluster `name`, for anchors and for a test to find its chart.
fn id_of(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:1500px;padding:0 1em;\
color:#222}h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:.25em .6em;\
text-align:right}td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}\
.pass{color:#1a7f37;font-weight:bold}.fail{color:#c62828;font-weight:bold}\
figure{margin:1em 0}figcaption{color:#555}pre{background:#f6f6f6;padding:1em;overflow:auto}\
nav a{margin-right:1em}";

/// A table from its header and rows of cells already escaped.
fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    out.push_str("<table><tr>");
    for h in header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>\n");
}

fn yes_no(ok: bool) -> String {
    if ok {
        "<span class=\"pass\">yes</span>".to_owned()
    } else {
        "<span class=\"fail\">no</span>".to_owned()
    }
}

/// Every cluster report of the run, down the tree.
fn cluster_reports(stats: &RunStats) -> Vec<&ClusterReport> {
    let mut all = Vec::new();
    let mut below = vec![stats];
    while let Some(s) = below.pop() {
        for c in &s.clusters {
            all.push(c);
            below.extend(c.stats.as_deref());
        }
    }
    all
}

impl Report {
    /// The report as a self-contained HTML page; `stats` are the run's statistics the report
    /// was made from, `text` the tables `hmw report` prints.
    pub fn html(
        &self,
        stats: &RunStats,
        size: (u32, u32),
        text: &str,
    ) -> Result<String, ReportError> {
        let title = escape(&self.title);
        let mut out = format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>hmw report: {title}</title><style>{STYLE}</style></head><body>\n\
             <h1>hmw report: {title}</h1>\n"
        );
        match &self.comparison {
            Some(c) => {
                let class = if c.run.inside { "pass" } else { "fail" };
                let _ = writeln!(
                    out,
                    "<p class=\"{class}\" id=\"verdict\">{}</p>",
                    escape(&c.verdict())
                );
            }
            None => out.push_str("<p id=\"verdict\">No plan given: the measured run only.</p>\n"),
        }
        let names: Vec<String> = self
            .observed
            .clusters
            .iter()
            .map(|c| c.name.clone())
            .collect();
        out.push_str("<nav>");
        for name in &names {
            let _ = write!(
                out,
                "<a href=\"#cluster-{}\">{}</a>",
                id_of(name),
                escape(name)
            );
        }
        out.push_str("<a href=\"#links\">links</a><a href=\"#tables\">tables</a></nav>\n");

        out.push_str("<h2 id=\"run\">The run</h2>\n");
        self.run_tables(&mut out);
        let _ = writeln!(
            out,
            "<figure id=\"chart-run\">{}<figcaption>The whole run: each cluster's completion \
             rate and tasks done, measured (solid) against predicted (dashed; the worst case \
             dotted).</figcaption></figure>",
            inline_svg(&self.svg(size)?)
        );

        for name in &names {
            let one = self.of_cluster(name);
            let id = id_of(name);
            let _ = writeln!(
                out,
                "<section id=\"cluster-{id}\"><h2>Cluster {}</h2>",
                escape(name)
            );
            if let Some(c) = one.comparison.as_ref().and_then(|c| c.clusters.first()) {
                let _ = writeln!(
                    out,
                    "<p>{} tasks ({:.1}% of the run; predicted {} to {}), {} bound as \
                     predicted.</p>",
                    c.tasks,
                    100.0 * c.share,
                    c.tasks_best.min(c.tasks_worst),
                    c.tasks_best.max(c.tasks_worst),
                    c.bottleneck
                );
            }
            let _ = writeln!(
                out,
                "<figure class=\"cluster-chart\" id=\"chart-{id}\">{}<figcaption>{}: its \
                 completion rate and tasks done, measured against predicted.</figcaption>\
                 </figure></section>",
                inline_svg(&one.svg(CLUSTER_CHART)?),
                escape(name)
            );
        }

        out.push_str("<h2 id=\"links\">Links, outages, clusters lost and back</h2>\n");
        self.link_tables(&mut out, stats);
        if !self.observed.adaptations.is_empty() {
            out.push_str("<h2>Re-planning decisions</h2>\n");
            let rows: Vec<Vec<String>> = self
                .observed
                .adaptations
                .iter()
                .map(|a| {
                    vec![
                        format!("{:.1}", a.t_s),
                        escape(&a.cluster),
                        escape(&a.action),
                        escape(&a.reason),
                    ]
                })
                .collect();
            table(&mut out, &["s", "cluster", "decision", "why"], &rows);
        }
        let _ = writeln!(
            out,
            "<h2 id=\"tables\">The tables of hmw report</h2>\n<pre>{}</pre>\n</body></html>",
            escape(text)
        );
        Ok(out)
    }

    /// The run's and each cluster's predicted against measured figures.
    fn run_tables(&self, out: &mut String) {
        let Some(c) = &self.comparison else {
            let _ = writeln!(
                out,
                "<p>{} tasks in {:.3} s.</p>",
                self.observed.tasks, self.observed.wall_s
            );
            return;
        };
        let r = &c.run;
        let (low, high) = c.tolerance();
        table(
            out,
            &["", "best", "worst", "measured", "error", "target met"],
            &[
                vec![
                    "makespan s".into(),
                    format!("{:.3}", r.makespan_best_s),
                    format!("{:.3}", r.makespan_worst_s),
                    format!("{:.3}", r.makespan_s),
                    format!("{:+.1}%", 100.0 * r.error),
                    format!("{} (inside {low:.3} to {high:.3} s)", yes_no(r.inside)),
                ],
                vec![
                    "efficiency".into(),
                    format!("{:.3}", r.efficiency_best),
                    format!("{:.3}", r.efficiency_worst),
                    format!("{:.3}", r.efficiency),
                    String::new(),
                    yes_no(r.efficiency_within),
                ],
            ],
        );
        let rows: Vec<Vec<String>> = c
            .clusters
            .iter()
            .map(|k| {
                vec![
                    format!(
                        "<a href=\"#cluster-{}\">{}</a>",
                        id_of(&k.name),
                        escape(&k.name)
                    ),
                    k.bottleneck.to_owned(),
                    format!("{:.2}", k.steady_tasks_per_s),
                    k.measured_steady_tasks_per_s
                        .map_or("-".into(), |r| format!("{r:.2}")),
                    format!(
                        "{}-{}",
                        k.tasks_best.min(k.tasks_worst),
                        k.tasks_best.max(k.tasks_worst)
                    ),
                    k.tasks.to_string(),
                    format!("{:.1}%", 100.0 * k.share_predicted),
                    format!("{:.1}% {}", 100.0 * k.share, yes_no(k.share_within)),
                    format!("{:.3}-{:.3}", k.efficiency_worst, k.efficiency_best),
                    k.efficiency.map_or("-".into(), |e| {
                        format!("{e:.3} {}", yes_no(k.efficiency_within))
                    }),
                ]
            })
            .collect();
        table(
            out,
            &[
                "cluster",
                "bottleneck",
                "tasks/s predicted",
                "measured",
                "tasks predicted",
                "measured",
                "share predicted",
                "measured",
                "efficiency predicted",
                "measured",
            ],
            &rows,
        );
    }

    /// Each link's figures, its outages, and the clusters lost or back.
    fn link_tables(&self, out: &mut String, stats: &RunStats) {
        let reports = cluster_reports(stats);
        let rows: Vec<Vec<String>> = reports
            .iter()
            .filter_map(|c| {
                let l = c.link.as_ref()?;
                Some(vec![
                    escape(&c.name),
                    format!("{:.0}", l.send_bytes_per_s),
                    format!("{:.0}", l.recv_bytes_per_s),
                    l.disconnections.to_string(),
                    format!("{:.1}", l.disconnected_s),
                    l.blocks_retransmitted.to_string(),
                    l.packets_lost.to_string(),
                    l.refused.to_string(),
                ])
            })
            .collect();
        if rows.is_empty() {
            out.push_str("<p>No link to another cluster.</p>\n");
        } else {
            table(
                out,
                &[
                    "cluster",
                    "out B/s",
                    "in B/s",
                    "disconnections",
                    "s down",
                    "blocks resent",
                    "packets lost",
                    "refused",
                ],
                &rows,
            );
        }
        let outages: Vec<Vec<String>> = self
            .observed
            .clusters
            .iter()
            .flat_map(|c| {
                c.outages.iter().map(|o| {
                    vec![
                        escape(&c.name),
                        format!("{:.1}", o.from_s),
                        if o.open {
                            "still down at the end".to_owned()
                        } else {
                            format!("{:.1}", o.to_s)
                        },
                    ]
                })
            })
            .collect();
        if outages.is_empty() {
            out.push_str("<p>No outage recorded.</p>\n");
        } else {
            table(out, &["cluster", "down from s", "up at s"], &outages);
        }
        let lost: Vec<Vec<String>> = reports
            .iter()
            .filter(|c| c.lost || c.rejoins > 0)
            .map(|c| {
                vec![
                    escape(&c.name),
                    if c.lost { "lost at the end" } else { "back" }.to_owned(),
                    c.rejoins.to_string(),
                    c.taken_back.to_string(),
                    c.tasks_done_after_rejoin.to_string(),
                ]
            })
            .collect();
        if lost.is_empty() {
            out.push_str("<p>No cluster was lost.</p>\n");
        } else {
            table(
                out,
                &[
                    "cluster",
                    "at the end",
                    "times back",
                    "tasks taken back",
                    "tasks done since back",
                ],
                &lost,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{
        comparison::tests::two_cluster_prediction, observed::tests::two_cluster_stats,
        observed::Observed,
    };

    /// The page of a two-cluster run: both clusters' charts inline, the figures, the links,
    /// the outage the statistics infer, and not one URL.
    #[test]
    fn one_self_contained_page_with_every_clusters_chart() {
        let stats = two_cluster_stats();
        let observed = Observed::from_stats(&stats);
        let report =
            Report::from_parts("two clusters", observed, Some(two_cluster_prediction()), 80);
        let page = report.html(&stats, (1500, 950), "a <table>").unwrap();
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.ends_with("</body></html>\n"));
        for url in ["http://", "https://", "src=", "<script", "<link"] {
            assert!(!page.contains(url), "{url} in the page");
        }
        assert_eq!(
            page.matches("<svg ").count(),
            3,
            "the run's chart and two clusters'"
        );
        for id in ["chart-run", "chart-main", "chart-spain"] {
            assert!(page.contains(&format!("id=\"{id}\"><svg ")), "{id}");
        }
        assert!(
            page.contains("two clusters: spain"),
            "spain's chart's title"
        );
        assert!(page.contains("PASS: measured makespan 6.500 s inside"));
        assert!(page.contains("<pre>a &lt;table&gt;</pre>"));
        assert!(page.contains("<td>spain</td>"), "spain's link row");
        // spain keeps its colour of the whole run's chart in its own.
        let spain = &page[page.find("id=\"chart-spain\"").unwrap()..];
        assert!(spain.contains("stroke=\"#E69F00\""));
    }

    #[test]
    fn names_are_escaped_and_ids_are_plain() {
        assert_eq!(escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
        assert_eq!(id_of("my cluster/2"), "my-cluster-2");
    }
}
