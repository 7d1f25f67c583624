//! Drawing the dashboard from a live state: the header (the run, its end as predicted and as
//! the live prediction says, the warnings), the clusters with their progress bars, the tasks
//! done against the predicted band, the links, the event log; or one cluster's workers. Pure:
//! the state, what the user chose and the time in, a frame out.

use ratatui::{
    layout::{Constraint, Layout, Rect},
    style::{Color, Modifier, Style, Stylize as _},
    symbols::Marker,
    text::{Line, Span},
    widgets::{
        Axis, Block, Chart, Dataset, GraphType, LegendPosition, Paragraph, Row, Table, TableState,
    },
    Frame,
};

use super::choice::{Choice, Screen};
use super::figures::{bytes_per_s, clock, elapsed_s, fraction_done, opt, seconds};
use crate::live_state::{ClusterPhase, ClusterState, LiveState};

/// The whole dashboard.
pub(crate) fn draw(frame: &mut Frame<'_>, state: &LiveState, choice: &Choice, now_unix_s: f64) {
    let area = frame.area();
    let warnings = state
        .warnings
        .len()
        .min(if area.height > 30 { 3 } else { 1 }) as u16;
    let [head, body, keys] = Layout::vertical([
        Constraint::Length(2 + warnings),
        Constraint::Min(6),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(frame, head, state, now_unix_s);
    match &choice.screen {
        Screen::Overview => draw_overview(frame, body, state, choice),
        Screen::Workers(name) => draw_workers(frame, body, state, name, choice),
    }
    let keys_text = match choice.screen {
        Screen::Overview => format!(
            " q quit  ↑↓ select  enter workers  s sort: {}",
            choice.sort.word()
        ),
        Screen::Workers(_) => format!(" q quit  esc back  s sort: {}", choice.sort.word()),
    };
    frame.render_widget(Paragraph::new(keys_text).dim(), keys);
}

fn draw_header(frame: &mut Frame<'_>, area: Rect, state: &LiveState, now: f64) {
    let p = &state.progress;
    let total = p.tasks_total.map_or(String::new(), |t| format!("/{t}"));
    let percent = p.tasks_total.filter(|&t| t > 0).map_or(String::new(), |t| {
        format!(" ({:.1}%)", 100.0 * p.tasks_done as f64 / t as f64)
    });
    let status = match &state.end {
        Some(end) => Span::styled(
            format!("run {}", end.outcome),
            if end.outcome == "completed" {
                Style::new().green().bold()
            } else {
                Style::new().red().bold()
            },
        ),
        None => Span::raw("running"),
    };
    let first = Line::from(vec![
        Span::raw(format!("{} ", state.run)).bold(),
        status,
        Span::raw(format!(
            "  t {}  {}{total} tasks{percent}  {:.1}/s",
            seconds(elapsed_s(state, now)),
            p.tasks_done,
            p.tasks_per_s
        )),
    ]);
    let model = state.prediction.as_ref().map_or("-".to_owned(), |m| {
        format!("{:.1}-{:.1} s", m.makespan_best_s, m.makespan_worst_s)
    });
    let live = match (p.predicted_total_s, p.predicted_low_s, p.predicted_high_s) {
        (Some(t), Some(low), Some(high)) => format!("{t:.1} s [{low:.1}, {high:.1}]"),
        (Some(t), _, _) => format!("{t:.1} s"),
        _ => "-".to_owned(),
    };
    let figures = match p.t_s {
        Some(t) => format!("figures {t:.0} s"),
        None => "no figures yet".to_owned(),
    };
    let second = Line::from(format!(
        "model {model}  live {live}  eff {}  {figures}, {:.0} s ago",
        opt(p.predicted_efficiency, |e| format!("{e:.2}")),
        (now - state.updated_unix_s).max(0.0)
    ))
    .dim();
    let mut lines = vec![first, second];
    let shown = area.height.saturating_sub(2) as usize;
    for (i, w) in state.warnings.iter().take(shown).enumerate() {
        let more = state.warnings.len() - shown;
        let text = if i + 1 == shown && more > 0 {
            format!("! {w} (+{more} more)")
        } else {
            format!("! {w}")
        };
        lines.push(Line::from(text).yellow());
    }
    frame.render_widget(Paragraph::new(lines), area);
}

fn draw_overview(frame: &mut Frame<'_>, area: Rect, state: &LiveState, choice: &Choice) {
    let clusters = (state.clusters.len() as u16 + 3).min(area.height / 2);
    let events = (area.height / 4).clamp(5, 14);
    let [table, middle, log] = Layout::vertical([
        Constraint::Length(clusters),
        Constraint::Min(4),
        Constraint::Length(events),
    ])
    .areas(area);
    draw_clusters(frame, table, state, choice);
    let links = if area.width >= 120 {
        Constraint::Percentage(38)
    } else {
        Constraint::Length(40.min(area.width / 2))
    };
    let [chart, link_table] = Layout::horizontal([Constraint::Min(20), links]).areas(middle);
    draw_chart(frame, chart, state);
    draw_links(frame, link_table, state);
    draw_events(frame, log, state);
}

fn phase_style(phase: ClusterPhase) -> Style {
    match phase {
        ClusterPhase::Computing | ClusterPhase::Done => Style::new().green(),
        ClusterPhase::Starting => Style::new(),
        ClusterPhase::Rejoined | ClusterPhase::Restarted => Style::new().yellow(),
        ClusterPhase::Lost | ClusterPhase::Failed => Style::new().red().bold(),
    }
}

/// A bar of `width` cells, `fraction` of it full.
fn bar(fraction: f64, width: usize) -> String {
    let full = (fraction.clamp(0.0, 1.0) * width as f64).round() as usize;
    format!("{}{}", "█".repeat(full), "░".repeat(width - full))
}

fn draw_clusters(frame: &mut Frame<'_>, area: Rect, state: &LiveState, choice: &Choice) {
    // A wide terminal also shows each cluster's bottleneck, its share of the tasks left and
    // its predicted share; the progress bar takes what is left, up to 48 cells.
    let wide = area.width >= 110;
    let mut columns: Vec<(&str, u16)> = vec![
        ("cluster", 10),
        ("state", 9),
        ("wk", 3),
        ("progress", 0),
        ("done", 6),
        ("held", 5),
        ("rate/pred", 11),
        ("eff", 4),
    ];
    if wide {
        columns.extend([("bottleneck", 10), ("left", 6), ("predicted", 9)]);
    }
    let fixed: u16 = columns.iter().map(|(_, w)| w + 1).sum();
    let bar_width = area.width.saturating_sub(2 + fixed).clamp(4, 48);
    columns[3].1 = bar_width;
    let header = Row::new(columns.iter().map(|(name, _)| *name)).bold();
    let order = choice.cluster_order(state);
    let rows = order.iter().map(|&i| {
        let c = &state.clusters[i];
        let mut cells = vec![
            Line::from(c.name.clone()),
            Line::from(c.phase.word()).style(phase_style(c.phase)),
            Line::from(c.workers.to_string()),
            Line::from(bar(fraction_done(c), bar_width as usize)).cyan(),
            Line::from(c.tasks_done.to_string()),
            Line::from(opt(c.in_flight, |h| h.to_string())),
            Line::from(format!(
                "{}/{}",
                opt(c.tasks_per_s, |r| format!("{r:.1}")),
                opt(c.predicted_tasks_per_s, |r| format!("{r:.1}"))
            )),
            Line::from(opt(c.efficiency, |e| format!("{:.0}%", 100.0 * e))),
        ];
        if wide {
            cells.extend([
                Line::from(c.bottleneck.clone().unwrap_or_else(|| "-".to_owned())),
                Line::from(opt(c.remaining_tasks, |r| format!("{r:.0}"))),
                Line::from(match (c.predicted_tasks_best, c.predicted_tasks_worst) {
                    (Some(b), Some(w)) => format!("{}-{}", b.min(w), b.max(w)),
                    _ => "-".to_owned(),
                }),
            ]);
        }
        Row::new(cells)
    });
    let widths: Vec<Constraint> = columns
        .iter()
        .map(|&(_, w)| Constraint::Length(w))
        .collect();
    let table = Table::new(rows, widths)
        .header(header)
        .block(Block::bordered().title(" clusters "))
        .row_highlight_style(
            Style::new()
                .bg(Color::DarkGray)
                .add_modifier(Modifier::BOLD),
        );
    let mut selected = TableState::default().with_selected(
        order
            .iter()
            .position(|&i| i == choice.selected_index(state)),
    );
    frame.render_stateful_widget(table, area, &mut selected);
}

fn draw_chart(frame: &mut Frame<'_>, area: Rect, state: &LiveState) {
    let done: Vec<(f64, f64)> = state
        .history
        .iter()
        .map(|h| (h.t_s, h.tasks_done as f64))
        .chain(
            state
                .end
                .as_ref()
                .and_then(|e| Some((e.makespan_s?, e.tasks? as f64))),
        )
        .collect();
    let (best, worst): (Points, Points) = state
        .prediction
        .iter()
        .flat_map(|p| &p.band)
        .map(|b| ((b.t_s, b.best), (b.t_s, b.worst)))
        .unzip();
    let x_end = done
        .iter()
        .chain(&best)
        .map(|&(t, _)| t)
        .fold(1.0, f64::max)
        * 1.02;
    let y_end = done
        .iter()
        .chain(&best)
        .chain(&worst)
        .map(|&(_, d)| d)
        .chain(state.progress.tasks_total.map(|t| t as f64))
        .fold(1.0, f64::max);
    let chart = Chart::new(vec![
        line("model best", &best, Style::new().fg(Color::Blue)),
        line("model worst", &worst, Style::new().fg(Color::Magenta)),
        line("done", &done, Style::new().fg(Color::Green).bold()),
    ])
    .block(Block::bordered().title(" tasks done against the model "))
    .x_axis(
        Axis::default()
            .bounds([0.0, x_end])
            .labels(["0".to_owned(), format!("{x_end:.0} s")])
            .dark_gray(),
    )
    .y_axis(
        Axis::default()
            .bounds([0.0, y_end])
            .labels(["0".to_owned(), format!("{y_end:.0}")])
            .dark_gray(),
    )
    .legend_position(Some(LegendPosition::TopLeft))
    .hidden_legend_constraints((Constraint::Ratio(1, 2), Constraint::Ratio(2, 3)));
    frame.render_widget(chart, area);
}

/// The points of a line of the chart.
type Points = Vec<(f64, f64)>;

/// A line of the chart.
fn line<'a>(name: &'static str, points: &'a [(f64, f64)], style: Style) -> Dataset<'a> {
    Dataset::default()
        .name(name)
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(style)
        .data(points)
}

fn draw_links(frame: &mut Frame<'_>, area: Rect, state: &LiveState) {
    let header = Row::new(["link", "rtt", "out", "in", "resent", "rc"]).bold();
    let rows = state.links.iter().map(|l| {
        let row = Row::new([
            l.cluster.clone(),
            if l.reported {
                format!("{:.0}ms", l.rtt_ms)
            } else {
                "-".to_owned()
            },
            bytes_per_s(l.out_bytes_per_s),
            bytes_per_s(l.in_bytes_per_s),
            format!("{}/{}", l.blocks_resent, l.packets_lost),
            l.reconnections.to_string(),
        ]);
        match (l.reported, l.connected) {
            (true, false) => row.red().bold(),
            (false, _) => row.dim(),
            (true, true) => row,
        }
    });
    let widths = [
        Constraint::Length(8),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(7),
        Constraint::Length(3),
    ];
    let table = Table::new(rows, widths)
        .header(header)
        .block(Block::bordered().title(" links: B/s, resent/lost, reconnects "));
    frame.render_widget(table, area);
}

fn draw_events(frame: &mut Frame<'_>, area: Rect, state: &LiveState) {
    let room = area.height.saturating_sub(2) as usize;
    let lines: Vec<Line> = state
        .events
        .iter()
        .skip(state.events.len().saturating_sub(room))
        .map(|e| {
            let line = Line::from(format!("{} {}", clock(e.unix_s), e.text));
            if e.text.starts_with("warning") {
                line.yellow()
            } else {
                line
            }
        })
        .collect();
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" events ")),
        area,
    );
}

fn draw_workers(frame: &mut Frame<'_>, area: Rect, state: &LiveState, name: &str, choice: &Choice) {
    let Some(cluster) = state.clusters.iter().find(|c| c.name == name) else {
        frame.render_widget(Paragraph::new(format!("no cluster {name}")), area);
        return;
    };
    let header = Row::new(["rank", "host", "done", "held", "tasks/s", "busy", "state"]).bold();
    let workers = choice.worker_order(cluster);
    let rows = workers.iter().map(|w| {
        let row = Row::new([
            w.rank.to_string(),
            w.host.clone(),
            w.tasks_done.to_string(),
            w.held.to_string(),
            opt(w.tasks_per_s, |r| format!("{r:.2}")),
            opt(w.busy_share, |b| format!("{:.0}%", 100.0 * b)),
            if w.lost { "lost" } else { "" }.to_owned(),
        ]);
        if w.lost {
            row.red()
        } else {
            row
        }
    });
    let widths = [
        Constraint::Length(5),
        Constraint::Min(12),
        Constraint::Length(7),
        Constraint::Length(5),
        Constraint::Length(8),
        Constraint::Length(5),
        Constraint::Length(5),
    ];
    let title = worker_title(cluster);
    let table = Table::new(rows, widths)
        .header(header)
        .block(Block::bordered().title(title));
    let mut scroll = TableState::default().with_offset(choice.worker_offset);
    frame.render_stateful_widget(table, area, &mut scroll);
}

fn worker_title(c: &ClusterState) -> String {
    let omitted = if c.workers_omitted > 0 {
        format!(", {} more not in the file", c.workers_omitted)
    } else {
        String::new()
    };
    if c.worker_list.is_empty() {
        format!(
            " {}: {} workers, {} (their figures come with its master's first figures) ",
            c.name,
            c.workers,
            c.phase.word()
        )
    } else {
        format!(
            " {}: {} workers, {}, {} tasks{omitted} ",
            c.name,
            c.workers,
            c.phase.word(),
            c.tasks_done
        )
    }
}
