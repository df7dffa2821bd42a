//! What `warpkit nbody` (and `repro collision`) draws and shows while a run goes: surface-density
//! pictures (PNG frames, a GIF and the end panel), the energy and virial plots, and a progress
//! bar: the run's [`Observer`].

use crate::image;
use crate::repro::output::{Progress, progress_every};
use crate::repro::plot::{self, Axis, LineChart, Scale, Series};
use warpkit::nbody::Particles;
use warpkit::nbody::cpu::Diagnostics;
use warpkit::nbody::run::{IcKind, Observer, RunConfig, RunError};
use warpkit::output::OutDir;

/// The command line's [`Observer`]: a progress bar (plain lines in a log), the movie and, at the
/// end, the energy plot.
pub struct RunFigures {
    movie: Option<Movie>,
    bar: Option<Progress>,
    progress_every: f64,
}

impl RunFigures {
    pub fn new(c: &RunConfig) -> Self {
        RunFigures {
            movie: None,
            bar: None,
            progress_every: c.output.progress_every,
        }
    }
}

impl Observer for RunFigures {
    fn start(
        &mut self,
        dir: &OutDir,
        c: &RunConfig,
        p: &Particles,
        time: f64,
        step: u64,
    ) -> Result<(), RunError> {
        self.movie = Some(Movie::new(dir, c, p, (time, step))?);
        Ok(())
    }

    fn frame(&mut self, dir: &OutDir, p: &Particles, time: f64, step: u64) -> Result<(), RunError> {
        match self.movie.as_mut() {
            Some(m) => m.frame(dir, p, time, step),
            None => Ok(()),
        }
    }

    fn progress(&mut self, done: u64, steps: u64, status: &str) {
        let every = self.progress_every;
        let bar = self
            .bar
            .get_or_insert_with(|| progress_every(steps, "nbody", every));
        bar.set_message(status.to_string());
        bar.set_position(done);
    }

    fn steps_done(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    fn finish(&mut self, dir: &OutDir, history: &[Diagnostics]) -> Result<(), RunError> {
        energy_plot(dir, history).map_err(|e| RunError::Plot(e.to_string()))?;
        match self.movie.take() {
            Some(m) => m.finish(dir),
            None => Ok(()),
        }
    }
}

/// Relative energy change and virial ratio against time.
fn energy_plot(dir: &OutDir, h: &[Diagnostics]) -> Result<(), plot::PlotError> {
    let e0 = h[0].total;
    let de: Vec<(f64, f64)> = h
        .iter()
        .map(|d| (d.time, ((d.total - e0) / e0).abs().max(1e-16)))
        .collect();
    let chart = LineChart {
        title: "energy conservation: |E(t) − E(0)| / |E(0)|".into(),
        x: Axis::new("time", Scale::Linear),
        y: Axis::new("|ΔE/E|", Scale::Log10),
        series: vec![Series::data("total energy", de)],
    };
    plot::line_chart(dir.path(), "energy", &chart)?;
    let q: Vec<(f64, f64)> = h.iter().map(|d| (d.time, d.virial_ratio)).collect();
    let chart = LineChart {
        title: "virial ratio 2K/|W|".into(),
        x: Axis::new("time", Scale::Linear),
        y: Axis::new("2K/|W|", Scale::Linear),
        series: vec![Series::data("2K/|W|", q)],
    };
    plot::line_chart(dir.path(), "virial", &chart)?;
    Ok(())
}

/// Surface-density pictures of a run: the stars (disk + bulge; every particle when there are none)
/// seen along z on a view and colour scale fixed by the first frame, as PNGs, one GIF, and a
/// panel of six moments at the end.
struct Movie {
    on: bool,
    types: image::Types,
    view: Option<image::View>,
    style: image::Style,
    smooth: f64,
    gif: Option<image::Gif>,
    frames: Vec<(f64, image::Map)>,
    /// The end panel's file: `collision.png` for the collision, else `panel.png`.
    panel: &'static str,
}

impl Movie {
    /// `at`: the first frame's time and step.
    fn new(dir: &OutDir, c: &RunConfig, p: &Particles, at: (f64, u64)) -> Result<Movie, RunError> {
        let err = |e: image::ImageError| RunError::Plot(e.to_string());
        let stars = p
            .ptype
            .iter()
            .any(|&t| t == warpkit::nbody::DISK || t == warpkit::nbody::BULGE);
        let types = if stars {
            image::Types::STARS
        } else {
            image::Types::ALL
        };
        let mut m = Movie {
            on: c.output.image_every > 0,
            types,
            view: None,
            style: image::Style::default(),
            // Few particles come out as dots: smooth them into a surface.
            smooth: if p.len() < 100_000 { 1.5 } else { 0.0 },
            gif: None,
            frames: Vec::new(),
            panel: if c.ic.kind == IcKind::Collision {
                "collision.png"
            } else {
                "panel.png"
            },
        };
        if !m.on {
            return Ok(m);
        }
        if matches!(c.ic.kind, IcKind::Disk | IcKind::Collision) {
            // The default galaxy's units (ic::DiskGalaxy::default).
            m.style.units = image::Units::new(3.5, "kpc", 14.0, "Myr").with_mass(5e10, "M☉");
            m.style.colorbar = true;
        }
        let px = c.output.image_pixels;
        let mut view =
            image::View::frame_particles(p, types, image::Axis::Z, px, 0.99).map_err(err)?;
        if c.ic.kind == IcKind::Collision {
            // After pericentre the galaxies fly apart past the frame of their starting places
            // (seen at t ≈ 900 Myr of the default run): a wider view keeps them in.
            view.half_width *= 1.6;
        }
        let first = m.map(p, &view)?;
        m.style.range = Some(image::Range::dynamic([&first], 4.0).map_err(err)?);
        std::fs::create_dir_all(dir.file("images")).map_err(|source| RunError::Io {
            path: dir.file("images"),
            source,
        })?;
        m.view = Some(view);
        m.gif = Some(
            image::Gif::create(&dir.file("movie.gif"), px, px, 8, &[m.style.colormap])
                .map_err(err)?,
        );
        m.frame(dir, p, at.0, at.1)?;
        Ok(m)
    }

    fn map(&self, p: &Particles, view: &image::View) -> Result<image::Map, RunError> {
        let map = image::Map::of(p, self.types, view).map_err(|e| RunError::Plot(e.to_string()))?;
        Ok(if self.smooth > 0.0 {
            map.smoothed(self.smooth)
        } else {
            map
        })
    }

    fn frame(&mut self, dir: &OutDir, p: &Particles, time: f64, step: u64) -> Result<(), RunError> {
        let Some(view) = self.view else {
            return Ok(());
        };
        let err = |e: image::ImageError| RunError::Plot(e.to_string());
        let map = self.map(p, &view)?;
        let style = image::Style {
            time: Some(time),
            ..self.style.clone()
        };
        let img = image::render(&map, &style).map_err(err)?;
        img.write_png(&dir.file(&format!("images/stars_z_{step:06}.png")))
            .map_err(err)?;
        if let Some(g) = self.gif.as_mut() {
            g.add(&img).map_err(err)?;
        }
        self.frames.push((time, map));
        Ok(())
    }

    /// The GIF closed and the panel of six evenly spaced frames written.
    fn finish(mut self, dir: &OutDir) -> Result<(), RunError> {
        let err = |e: image::ImageError| RunError::Plot(e.to_string());
        if let Some(g) = self.gif.take() {
            g.finish().map_err(err)?;
        }
        if self.frames.len() < 2 {
            return Ok(());
        }
        let k = self.frames.len().min(6);
        let picks: Vec<usize> = (0..k)
            .map(|i| i * (self.frames.len() - 1) / (k - 1))
            .collect();
        let styles: Vec<image::Style> = picks
            .iter()
            .map(|&i| image::Style {
                time: Some(self.frames[i].0),
                ..self.style.clone()
            })
            .collect();
        let maps: Vec<(&image::Map, &image::Style)> = picks
            .iter()
            .zip(&styles)
            .map(|(&i, s)| (&self.frames[i].1, s))
            .collect();
        let panel = image::panel(&maps, 3).map_err(err)?;
        panel.write_png(&dir.file(self.panel)).map_err(err)?;
        Ok(())
    }
}
