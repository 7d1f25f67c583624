//! What every part of the chart shares: the chart over time, the font, the sizes, the cluster
//! palette and the other colours, and drawing errors as the report's.

use plotters::{
    coord::types::RangedCoordf64,
    prelude::*,
    style::{FontStyle, RGBColor},
};

use crate::report::document::ReportError;

/// A chart over time.
pub(super) type TimeChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The font family of every text.
pub(super) const FAMILY: &str = "sans-serif";

/// Fail early, with a message saying what to install, when there is no font to draw with.
pub(super) fn ensure_font() -> Result<(), ReportError> {
    FontDesc::new(FontFamily::SansSerif, 12.0, FontStyle::Normal)
        .box_size("0")
        .map(|_| ())
        .map_err(|e| ReportError::Font(format!("{e:?}")))
}

/// Width and height of the picture, pixels.
#[cfg(test)]
pub const DEFAULT_SIZE: (u32, u32) = (1500, 950);

/// Cluster colours (a colour-blind-safe qualitative palette), in cluster order.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(120, 94, 240),
    RGBColor(100, 100, 100),
];
pub(super) const TOTAL: RGBColor = RGBColor(20, 20, 20);
pub(super) const BAND: RGBColor = RGBColor(150, 150, 150);
/// The tolerance on the makespan: a yellow no cluster has, its edges darker.
pub(super) const TOLERANCE: RGBColor = RGBColor(240, 228, 66);
pub(super) const TOLERANCE_EDGE: RGBColor = RGBColor(160, 145, 0);
pub(super) const SILENCE: RGBColor = RGBColor(220, 50, 47);
pub(super) const PASS: RGBColor = RGBColor(0, 130, 60);
pub(super) const FAIL: RGBColor = RGBColor(200, 30, 30);
pub(super) const END_LINE: RGBColor = RGBColor(90, 90, 90);
pub(super) const LINK_UP: RGBColor = RGBColor(225, 225, 225);
pub(super) const SIDE_WIDTH: u32 = 430;
pub(super) const TITLE_HEIGHT: u32 = 78;
/// Height of one cluster's row in the links strip, pixels.
pub(super) const LINK_ROW: u32 = 30;

pub(super) fn drawn<T, E: std::fmt::Display>(result: Result<T, E>) -> Result<T, ReportError> {
    result.map_err(|e| ReportError::Draw(e.to_string()))
}

/// A cluster's colour: its place in the prediction's order, else in the run's.
pub(super) fn colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}
