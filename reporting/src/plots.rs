//! The report's plots, each drawn once per backend of plotters: SVG (text kept as text)
//! and PNG. Text needs a TrueType font from the system ([`crate::font`]).

use std::path::Path;

use fairshare_sim::compare::{Comparison, Run};
use fairshare_sim::workload::{bursty_kind_name, Workload};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::chart::{legend, Chart};
use crate::ReportError;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Colors for series, in order.
pub(crate) fn color(i: usize) -> RGBColor {
    const PALETTE: [RGBColor; 6] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(127, 127, 127),
    ];
    PALETTE[i % PALETTE.len()]
}

/// The color of a user by its kind in the bursty mix, so that curves group visibly.
fn kind_color(kind: &str) -> RGBColor {
    match kind {
        "steady" => RGBColor(150, 150, 150),
        "moderate" => RGBColor(31, 119, 180),
        "on-off" => RGBColor(255, 127, 14),
        "heavy-tailed" => RGBColor(214, 39, 40),
        _ => RGBColor(44, 160, 44),
    }
}

/// A policy at an alpha, as legends and messages name it: `karma (alpha 0.5)`, `maxmin`.
pub fn variant(policy: &str, alpha: Option<f64>) -> String {
    match alpha {
        Some(a) => format!("{policy} (alpha {a})"),
        None => policy.to_string(),
    }
}

/// A run's name in legends.
fn label(run: &Run) -> String {
    variant(run.policy, run.alpha)
}

/// The runs on the first backend at the first alpha, one per policy: what the per-user
/// plots show.
pub fn primary(c: &Comparison) -> Vec<&Run> {
    let first_alpha = c.setup.alphas.first().map(|a| a.to_f64());
    let backend = c.runs.first().map(|r| r.backend.clone()).unwrap_or_default();
    c.runs.iter().filter(|r| r.backend == backend && (r.alpha.is_none() || r.alpha == first_alpha)).collect()
}

/// The report's plots.
#[derive(Clone, Copy, Debug)]
pub enum Plot {
    /// Cumulative allocation of each tracked user over time, one panel per policy.
    Cumulative,
    /// Karma's fairness for each alpha, with max-min and strict as lines.
    FairnessAlpha,
    /// The distribution of welfare across users, one curve per policy.
    WelfareCdf,
    /// Welfare of the non-conformant half, lying and truthful, per policy.
    Conformance,
}

impl Plot {
    /// Every plot.
    pub const ALL: [Plot; 4] = [Plot::Cumulative, Plot::FairnessAlpha, Plot::WelfareCdf, Plot::Conformance];

    /// The file name without extension.
    pub fn name(self) -> &'static str {
        match self {
            Plot::Cumulative => "cumulative",
            Plot::FairnessAlpha => "fairness_alpha",
            Plot::WelfareCdf => "welfare_cdf",
            Plot::Conformance => "conformance",
        }
    }

    /// One line saying what the plot shows.
    pub fn caption(self) -> &'static str {
        match self {
            Plot::Cumulative => {
                "Cumulative useful allocation per user over time (users colored by kind: steady grey, moderate \
                 blue, on/off orange, heavy-tailed red)"
            }
            Plot::FairnessAlpha => "Fairness (worst / best welfare) as alpha varies",
            Plot::WelfareCdf => "Distribution of welfare across users",
            Plot::Conformance => "Welfare of the non-conformant half: reporting max(demand, f) vs truthfully",
        }
    }

    fn draw<DB: DrawingBackend>(self, root: &DrawingArea<DB, Shift>, c: &Comparison) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        match self {
            Plot::Cumulative => cumulative(root, c),
            Plot::FairnessAlpha => fairness_alpha(root, c),
            Plot::WelfareCdf => welfare_cdf(root, c),
            Plot::Conformance => conformance(root, c),
        }?;
        root.present().map_err(err)
    }
}

/// One plot of one comparison, drawn through [`Chart`] like every chart.
struct PlotOf<'a>(Plot, &'a Comparison);

impl Chart for PlotOf<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        self.0.draw(root, self.1)
    }
}

/// Draws every plot into `dir` as `NAME.svg` and `NAME.png`.
pub fn write_all(dir: &Path, c: &Comparison) -> Result<(), ReportError> {
    for plot in Plot::ALL {
        PlotOf(plot, c).write(dir, plot.name())?;
    }
    Ok(())
}

fn cumulative<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &Comparison) -> Result<(), String> {
    let runs = primary(c);
    let top = runs.iter().flat_map(|r| r.curves.last().into_iter().flatten()).max().copied().unwrap_or(1).max(1);
    let quanta = c.setup.quanta.max(1) as f64;
    let bursty = c.setup.workload == Workload::Bursty;
    for (area, run) in root.split_evenly((1, runs.len().max(1))).iter().zip(&runs) {
        let mut chart = ChartBuilder::on(area)
            .caption(label(run), ("sans-serif", 18))
            .margin(8)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..quanta, 0.0..top as f64 * 1.02)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("quantum")
            .y_desc("cumulative allocation")
            .x_labels(4)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(err)?;
        for (j, &u) in c.tracked.iter().enumerate() {
            let style = if bursty { kind_color(bursty_kind_name(u)) } else { color(j) };
            let points = c.curve_quanta.iter().zip(&run.curves).map(|(&q, row)| (q as f64, row[j] as f64));
            chart.draw_series(LineSeries::new(points, style.stroke_width(1))).map_err(err)?;
        }
    }
    Ok(())
}

fn fairness_alpha<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &Comparison) -> Result<(), String> {
    let backend = c.runs.first().map(|r| r.backend.as_str()).unwrap_or_default();
    let runs: Vec<&Run> = c.runs.iter().filter(|r| r.backend == backend).collect();
    let top = runs.iter().map(|r| r.summary.fairness).fold(0.0, f64::max).max(0.1) * 1.1;
    let mut chart = ChartBuilder::on(root)
        .caption("Fairness (worst / best welfare) as alpha varies", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.02..1.02f64, 0.0..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("alpha (guaranteed fraction of the fair share)")
        .y_desc("fairness")
        .draw()
        .map_err(err)?;
    let mut karma: Vec<(f64, f64)> = runs.iter().filter_map(|r| r.alpha.map(|a| (a, r.summary.fairness))).collect();
    karma.sort_by(|a, b| a.0.total_cmp(&b.0));
    if !karma.is_empty() {
        let style = color(0).stroke_width(3);
        chart
            .draw_series(LineSeries::new(karma.clone(), style))
            .map_err(err)?
            .label("karma")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        chart.draw_series(karma.iter().map(|&p| Circle::new(p, 5, color(0).filled()))).map_err(err)?;
    }
    for (i, r) in runs.iter().filter(|r| r.alpha.is_none()).enumerate() {
        let style = color(i + 1).stroke_width(2);
        let y = r.summary.fairness;
        chart
            .draw_series(LineSeries::new(vec![(0.0, y), (1.0, y)], style))
            .map_err(err)?
            .label(r.policy)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    }
    legend(&mut chart, SeriesLabelPosition::MiddleMiddle)
}

fn welfare_cdf<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &Comparison) -> Result<(), String> {
    let mut chart = ChartBuilder::on(root)
        .caption("Distribution of welfare across users", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..1.02f64, 0.0..1.02f64)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("welfare (useful allocation / demand)")
        .y_desc("fraction of users")
        .draw()
        .map_err(err)?;
    for (i, run) in primary(c).into_iter().enumerate() {
        let mut w: Vec<f64> = run.summary.welfare.iter().flatten().copied().collect();
        w.sort_by(f64::total_cmp);
        let n = w.len().max(1) as f64;
        let mut steps = vec![(0.0, 0.0)];
        for (k, &x) in w.iter().enumerate() {
            steps.push((x, k as f64 / n));
            steps.push((x, (k + 1) as f64 / n));
        }
        let style = color(i).stroke_width(2);
        chart
            .draw_series(LineSeries::new(steps, style))
            .map_err(err)?
            .label(label(run))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

fn conformance<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &Comparison) -> Result<(), String> {
    let k = c.conformance.len().max(1);
    let names: Vec<String> = c.conformance.iter().map(|x| variant(x.policy, x.alpha)).collect();
    let mut chart = ChartBuilder::on(root)
        .caption("Welfare of the non-conformant half of the users", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..k as f64 - 0.5, 0.0..1.15f64)
        .map_err(err)?;
    let formatter = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            names.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(k)
        .x_label_formatter(&formatter)
        .y_desc("mean welfare of the half")
        .draw()
        .map_err(err)?;
    let bars = [
        ("non-conformant: reports max(demand, f)", 1usize, -0.36, -0.02),
        ("the same users, truthful", 0usize, 0.02, 0.36),
    ];
    for (legend, shade, lo, hi) in bars {
        let fill = color(shade).filled();
        let values: Vec<(f64, f64)> = c
            .conformance
            .iter()
            .enumerate()
            .map(|(i, x)| (i as f64, if shade == 1 { x.welfare_non_conformant } else { x.welfare_conformant }))
            .collect();
        chart
            .draw_series(values.iter().map(|&(i, v)| Rectangle::new([(i + lo, 0.0), (i + hi, v)], fill)))
            .map_err(err)?
            .label(legend)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], fill));
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}
