//! PNG images of the SVG charts, rasterised with resvg.
//!
//! Rasterising the very SVG the HTML embeds keeps the two identical.
//! Text needs a font: resvg reads the system's fonts (Debian's
//! fonts-dejavu-core provides DejaVu Sans); without any font the lines
//! still render and the labels are missing, so the caller is told.

use std::sync::Arc;

use resvg::{tiny_skia, usvg};

/// Why an SVG could not be rasterised.
#[derive(thiserror::Error, Debug)]
pub enum PngError {
    /// The SVG did not parse.
    #[error("chart SVG: {0}")]
    Svg(#[from] usvg::Error),
    /// The pixel buffer could not be made or encoded.
    #[error("PNG encoding: {0}")]
    Encode(String),
}

/// A rasteriser that loads the system fonts once.
pub struct Rasteriser {
    options: usvg::Options<'static>,
}

impl Default for Rasteriser {
    fn default() -> Self {
        Self::new()
    }
}

impl Rasteriser {
    /// Loads the system fonts (this reads the font directories once).
    pub fn new() -> Self {
        let mut db = usvg::fontdb::Database::new();
        db.load_system_fonts();
        db.set_sans_serif_family("DejaVu Sans");
        let options = usvg::Options {
            fontdb: Arc::new(db),
            ..Default::default()
        };
        Rasteriser { options }
    }

    /// Number of font faces found; 0 means the labels will be missing.
    pub fn fonts(&self) -> usize {
        self.options.fontdb.len()
    }

    /// Renders `svg` at `scale` × its own size on a white background.
    pub fn png(&self, svg: &str, scale: f32) -> Result<Vec<u8>, PngError> {
        let tree = usvg::Tree::from_str(svg, &self.options)?;
        let size = tree.size();
        let w = (size.width() * scale).ceil() as u32;
        let h = (size.height() * scale).ceil() as u32;
        let mut pixmap = tiny_skia::Pixmap::new(w, h)
            .ok_or_else(|| PngError::Encode(format!("cannot make a {w}×{h} image")))?;
        pixmap.fill(tiny_skia::Color::WHITE);
        resvg::render(
            &tree,
            tiny_skia::Transform::from_scale(scale, scale),
            &mut pixmap.as_mut(),
        );
        pixmap
            .encode_png()
            .map_err(|e| PngError::Encode(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rasterises_a_chart() {
        let svg = crate::svg::render(&crate::svg::Chart {
            title: "t".into(),
            subtitle: String::new(),
            overlays: Vec::new(),
            x_label: "threads".into(),
            y_label: "MB/s".into(),
            y_log: false,
            series: vec![crate::svg::Series {
                colour: 0,
                dashed: false,
                label: "a".into(),
                failed: vec![(2.0, 1)],
                points: vec![
                    crate::svg::Point {
                        x: 1.0,
                        y: 1.0,
                        lo: 1.0,
                        hi: 1.0,
                    },
                    crate::svg::Point {
                        x: 4.0,
                        y: 3.0,
                        lo: 2.0,
                        hi: 4.0,
                    },
                ],
            }],
        });
        let png = Rasteriser::new().png(&svg, 1.0).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let img = tiny_skia::Pixmap::decode_png(&png).unwrap();
        assert_eq!((img.width(), img.height()), (760, 440));
        // The blue line: some pixels are strongly blue.
        let blue = img
            .pixels()
            .iter()
            .filter(|p| p.blue() > 150 && p.red() < 60)
            .count();
        assert!(blue > 100, "{blue} blue pixels");
    }
}
