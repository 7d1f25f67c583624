//! Drawing a [`Report`]: a title with the verdict (is the measured makespan inside the
//! tolerance?) and the headline figures; the completion rate per cluster over time (measured
//! solid, predicted dashed, worst-case end dotted); the tasks done over time, same lines;
//! shaded, the tolerance on the makespan, the predicted makespan range inside it, and when a
//! cluster's link was down; below, one row per cluster behind a communication manager with its
//! link's outages (recorded by the CM; inferred from a cluster delivering nothing while others
//! did when the statistics have no such records); re-planning decisions (`[run] adapt`) as
//! short ticks at the top of both charts, in the colour of the cluster they concern; on the
//! right, the legend and the figures.
//!
//! One function draws on any plotters backend; [`Report::svg`] and [`Report::png`] pick one.
//! Text is measured (SVG) and drawn (PNG) with the system's sans-serif font, found through
//! fontconfig (plotters' `ttf` feature).
//!
//! The parts, each a file: `picture.rs` (the whole picture, its layout and title),
//! `time_charts.rs` (the completion rate and the tasks done over time), `shading.rs` (what
//! both charts shade), `links.rs` (the links strip), `side.rs` (the legend and the figures),
//! `style.rs` (fonts, colours and sizes).
//!
//! [`Report`]: super::document::Report
//! [`Report::svg`]: super::document::Report::svg
//! [`Report::png`]: super::document::Report::png

mod links;
mod picture;
mod shading;
mod side;
mod style;
#[cfg(test)]
mod tests;
mod time_charts;
