//! A log-log line chart of named series, written as SVG and PNG: what the benchmark
//! report draws (time per quantum against users).

use std::ops::Range;
use std::path::{Path, PathBuf};

use plotters::coord::{CoordTranslate, Shift};
use plotters::prelude::*;

use crate::ReportError;

/// One line of points with its legend and color (red, green, blue).
#[derive(Clone, Debug)]
pub struct Series {
    /// The legend's text.
    pub name: String,
    /// `(x, y)` points (both positive on logarithmic axes).
    pub points: Vec<(f64, f64)>,
    /// The line's color.
    pub rgb: (u8, u8, u8),
    /// How the points are drawn.
    pub marks: Marks,
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marks {
    /// A line through the points, each marked with a dot.
    LineAndPoints,
    /// A line only.
    Line,
    /// Dots only (measurements).
    Points,
}

/// Draws one series with its legend entry, on any pair of axes.
fn draw_series<DB: DrawingBackend, CT: CoordTranslate<From = (f64, f64)>>(
    chart: &mut ChartContext<'_, DB, CT>,
    s: &Series,
) -> Result<(), String> {
    let color = RGBColor(s.rgb.0, s.rgb.1, s.rgb.2);
    let style = color.stroke_width(2);
    let dots = || s.points.iter().map(move |&p| Circle::new(p, 3, color.filled()));
    if s.marks == Marks::Points {
        chart
            .draw_series(dots())
            .map_err(|e| e.to_string())?
            .label(s.name.clone())
            .legend(move |(x, y)| Circle::new((x + 10, y), 3, color.filled()));
        return Ok(());
    }
    chart
        .draw_series(LineSeries::new(s.points.clone(), style))
        .map_err(|e| e.to_string())?
        .label(s.name.clone())
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    if s.marks == Marks::LineAndPoints {
        chart.draw_series(dots()).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A line chart: title, axes and series, on linear or log-log axes.
#[derive(Clone, Debug)]
pub struct LineChart {
    /// The caption above the chart.
    pub title: String,
    /// The x axis' label and range.
    pub x: (String, Range<f64>),
    /// The y axis' label and range.
    pub y: (String, Range<f64>),
    /// Linear axes (e.g. throughput over time, legend upper right) or log-log (e.g. time
    /// against users, legend upper left).
    pub scale: Scale,
    /// The series, in legend order.
    pub series: Vec<Series>,
}

/// The axes of a [`LineChart`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Both axes linear.
    Linear,
    /// Both axes logarithmic.
    LogLog,
}

/// A chart drawn once per plotters backend: SVG (text kept as text) and PNG.
pub trait Chart {
    /// Pixel size of the chart.
    const SIZE: (u32, u32) = (960, 600);

    /// Draws the chart on `root`; plotters' message on failure.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;

    /// Draws the chart as `dir/STEM.svg` and `dir/STEM.png`; returns both paths.
    fn write(&self, dir: &Path, stem: &str) -> Result<[PathBuf; 2], ReportError> {
        crate::font::register()?;
        let svg = dir.join(format!("{stem}.svg"));
        let png = dir.join(format!("{stem}.png"));
        self.draw(&SVGBackend::new(&svg, Self::SIZE).into_drawing_area())
            .map_err(|message| ReportError::Plot { path: svg.clone(), message })?;
        self.draw(&BitMapBackend::new(&png, Self::SIZE).into_drawing_area())
            .map_err(|message| ReportError::Plot { path: png.clone(), message })?;
        Ok([svg, png])
    }
}

/// Draws the legend of `chart`'s labelled series at `position`, on a white box.
pub(crate) fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())
}

/// Every series with its legend entry, the legend at `position`, and the page shown.
fn series_and_legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate<From = (f64, f64)>>(
    root: &DrawingArea<DB, Shift>,
    chart: &mut ChartContext<'a, DB, CT>,
    series: &[Series],
    position: SeriesLabelPosition,
) -> Result<(), String> {
    for s in series {
        draw_series(chart, s)?;
    }
    legend(chart, position)?;
    root.present().map_err(|e| e.to_string())
}

impl Chart for LineChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let mut builder = ChartBuilder::on(root);
        builder.caption(&self.title, ("sans-serif", 20)).margin(12).x_label_area_size(40).y_label_area_size(70);
        let (x, y) = (self.x.1.clone(), self.y.1.clone());
        match self.scale {
            Scale::Linear => {
                let mut chart = builder.build_cartesian_2d(x, y).map_err(err)?;
                chart.configure_mesh().x_desc(&self.x.0).y_desc(&self.y.0).draw().map_err(err)?;
                series_and_legend(root, &mut chart, &self.series, SeriesLabelPosition::UpperRight)
            }
            Scale::LogLog => {
                let mut chart = builder.build_cartesian_2d(x.log_scale(), y.log_scale()).map_err(err)?;
                chart
                    .configure_mesh()
                    .x_desc(&self.x.0)
                    .y_desc(&self.y.0)
                    .x_label_formatter(&|x| format!("{x:.0}"))
                    .y_label_formatter(&|y| format!("{y}"))
                    .draw()
                    .map_err(err)?;
                series_and_legend(root, &mut chart, &self.series, SeriesLabelPosition::UpperLeft)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(name: &str, marks: Marks) -> Series {
        Series { name: name.into(), points: vec![(1.0, 2.0), (10.0, 20.0), (100.0, 30.0)], rgb: (1, 2, 3), marks }
    }

    /// Both scales write an SVG and a PNG naming every series in the legend; dots are
    /// drawn for points, none for a bare line.
    #[test]
    fn charts_write_svg_and_png_with_their_legends() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let x = ("x".to_string(), 0.5..200.0);
        let y = ("y".to_string(), 0.5..50.0);
        let log = LineChart {
            title: "log".into(),
            x: x.clone(),
            y: y.clone(),
            scale: Scale::LogLog,
            series: vec![series("dotted line", Marks::LineAndPoints)],
        };
        let time = LineChart {
            title: "time".into(),
            x,
            y,
            scale: Scale::Linear,
            series: vec![series("bare line", Marks::Line), series("measured", Marks::Points)],
        };
        for (svg, names, circles) in [
            (log.write(dir.path(), "log")?[0].clone(), vec!["dotted line"], 3),
            (time.write(dir.path(), "time")?[0].clone(), vec!["bare line", "measured"], 3 + 1),
        ] {
            let text = std::fs::read_to_string(&svg)?;
            for n in names {
                assert!(text.contains(n), "{n} in {}", svg.display());
            }
            // Three dots per dotted series, plus the legend's dot for a points series.
            assert_eq!(text.matches("<circle").count(), circles, "{}", svg.display());
            assert!(svg.with_extension("png").exists());
        }
        Ok(())
    }
}
