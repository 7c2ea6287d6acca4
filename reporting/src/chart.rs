//! A log-log line chart of named series, written as SVG and PNG: what the benchmark
//! report draws (time per quantum against users).

use std::ops::Range;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::ReportError;

/// One line of points with its legend and color (red, green, blue).
#[derive(Clone, Debug)]
pub struct Series {
    /// The legend's text.
    pub name: String,
    /// `(x, y)` points, both positive (the axes are logarithmic).
    pub points: Vec<(f64, f64)>,
    /// The line's color.
    pub rgb: (u8, u8, u8),
}

/// A chart: title, axes and series.
#[derive(Clone, Debug)]
pub struct LogLogChart {
    /// The caption above the chart.
    pub title: String,
    /// The x axis' label and range.
    pub x: (String, Range<f64>),
    /// The y axis' label and range.
    pub y: (String, Range<f64>),
    /// The lines, in legend order.
    pub series: Vec<Series>,
}

/// Pixel size of the chart.
const SIZE: (u32, u32) = (960, 600);

/// A chart drawn once per plotters backend: SVG (text kept as text) and PNG.
pub trait Chart {
    /// Draws the chart on `root`; plotters' message on failure.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;

    /// Draws the chart as `dir/STEM.svg` and `dir/STEM.png`; returns both paths.
    fn write(&self, dir: &Path, stem: &str) -> Result<[PathBuf; 2], ReportError> {
        crate::font::register()?;
        let svg = dir.join(format!("{stem}.svg"));
        let png = dir.join(format!("{stem}.png"));
        self.draw(&SVGBackend::new(&svg, SIZE).into_drawing_area())
            .map_err(|message| ReportError::Plot { path: svg.clone(), message })?;
        self.draw(&BitMapBackend::new(&png, SIZE).into_drawing_area())
            .map_err(|message| ReportError::Plot { path: png.clone(), message })?;
        Ok([svg, png])
    }
}

impl Chart for LogLogChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(self.x.1.clone().log_scale(), self.y.1.clone().log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(&self.x.0)
            .y_desc(&self.y.0)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y}"))
            .draw()
            .map_err(err)?;
        for s in &self.series {
            let color = RGBColor(s.rgb.0, s.rgb.1, s.rgb.2);
            let style = color.stroke_width(2);
            chart
                .draw_series(LineSeries::new(s.points.clone(), style))
                .map_err(err)?
                .label(s.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)
    }
}

/// A chart of named series over time, linear axes (e.g. throughput and allocation).
#[derive(Clone, Debug)]
pub struct TimeChart {
    /// The caption above the chart.
    pub title: String,
    /// The x axis' label and range.
    pub x: (String, Range<f64>),
    /// The y axis' label and range.
    pub y: (String, Range<f64>),
    /// The lines, in legend order; a series whose name ends in "(points)" is drawn as
    /// points only.
    pub series: Vec<Series>,
}

impl Chart for TimeChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(self.x.1.clone(), self.y.1.clone())
            .map_err(err)?;
        chart.configure_mesh().x_desc(&self.x.0).y_desc(&self.y.0).draw().map_err(err)?;
        for s in &self.series {
            let color = RGBColor(s.rgb.0, s.rgb.1, s.rgb.2);
            if s.name.ends_with("(points)") {
                chart
                    .draw_series(s.points.iter().map(|&p| Circle::new(p, 2, color.filled())))
                    .map_err(err)?
                    .label(s.name.trim_end_matches(" (points)").to_string())
                    .legend(move |(x, y)| Circle::new((x + 10, y), 3, color.filled()));
            } else {
                let style = color.stroke_width(2);
                chart
                    .draw_series(LineSeries::new(s.points.clone(), style))
                    .map_err(err)?
                    .label(s.name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)
    }
}
