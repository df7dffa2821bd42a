//! Animations: maps as GIF frames on one palette.

use super::*;

/// A looping GIF written frame by frame into a temporary file beside `path`, renamed to `path`
/// by [`Gif::finish`]; dropped unfinished (or failing), it removes the temporary file, so `path`
/// is never half-written. Frames share one palette built from the colour maps they use (plus
/// greys for the labels), so a colour means the same density in every frame.
pub struct Gif {
    path: PathBuf,
    tmp: PathBuf,
    encoder: Option<gif::Encoder<BufWriter<File>>>,
    width: u32,
    height: u32,
    delay_cs: u16,
    palette: Vec<[u8; 3]>,
    nearest: HashMap<[u8; 3], u8>,
    frames: usize,
}

impl Gif {
    /// `delay_cs`: time per frame in hundredths of a second; `colormaps`: those the frames use.
    pub fn create(
        path: &Path,
        width: u32,
        height: u32,
        delay_cs: u16,
        colormaps: &[Colormap],
    ) -> Result<Gif, ImageError> {
        if colormaps.is_empty() {
            return Err(ImageError::Figure(
                "a GIF needs at least one colour map".into(),
            ));
        }
        Self::with_palette(path, width, height, delay_cs, gif_palette(colormaps))
    }

    /// [`Gif::create`] with the frames' colours drawn from `palette` (1 to 256 colours; each
    /// pixel takes the nearest).
    pub fn with_palette(
        path: &Path,
        width: u32,
        height: u32,
        delay_cs: u16,
        palette: Vec<[u8; 3]>,
    ) -> Result<Gif, ImageError> {
        if width == 0 || height == 0 || width > u16::MAX as u32 || height > u16::MAX as u32 {
            return Err(ImageError::Figure(format!(
                "a GIF of {width} × {height} pixels (1 ..= 65535 each)"
            )));
        }
        if palette.is_empty() || palette.len() > 256 {
            return Err(ImageError::Figure(format!(
                "a GIF palette of {} colours (1 ..= 256)",
                palette.len()
            )));
        }
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".tmp{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let fail = |e: &dyn std::fmt::Display| ImageError::Write {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let file = File::create(&tmp).map_err(|e| fail(&e))?;
        let flat: Vec<u8> = palette.iter().flatten().copied().collect();
        let made = gif::Encoder::new(BufWriter::new(file), width as u16, height as u16, &flat)
            .and_then(|mut e| e.set_repeat(gif::Repeat::Infinite).map(|()| e));
        let encoder = match made {
            Ok(e) => e,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(fail(&e));
            }
        };
        let nearest = palette
            .iter()
            .enumerate()
            .map(|(k, &c)| (c, k as u8))
            .collect();
        Ok(Gif {
            path: path.to_path_buf(),
            tmp,
            encoder: Some(encoder),
            width,
            height,
            delay_cs,
            palette,
            nearest,
            frames: 0,
        })
    }

    /// Appends a frame of the GIF's size.
    pub fn add(&mut self, image: &Image) -> Result<(), ImageError> {
        if (image.width, image.height) != (self.width, self.height) {
            return Err(ImageError::Figure(format!(
                "a {} × {} frame in a {} × {} GIF",
                image.width, image.height, self.width, self.height
            )));
        }
        let mut indices = Vec::with_capacity(image.rgb.len() / 3);
        for px in image.rgb.chunks_exact(3) {
            let c = [px[0], px[1], px[2]];
            let k = match self.nearest.get(&c) {
                Some(&k) => k,
                None => {
                    let k = closest(&self.palette, c);
                    self.nearest.insert(c, k);
                    k
                }
            };
            indices.push(k);
        }
        let mut frame =
            gif::Frame::from_indexed_pixels(self.width as u16, self.height as u16, indices, None);
        frame.delay = self.delay_cs;
        let Some(encoder) = self.encoder.as_mut() else {
            return Err(ImageError::Figure("the GIF is finished".into()));
        };
        encoder.write_frame(&frame).map_err(|e| ImageError::Write {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        self.frames += 1;
        Ok(())
    }

    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Writes the trailer, syncs and renames onto the final path.
    pub fn finish(mut self) -> Result<PathBuf, ImageError> {
        let fail = |m: String| ImageError::Write {
            path: self.path.clone(),
            message: m,
        };
        if self.frames == 0 {
            return Err(fail("no frame was added".into()));
        }
        let encoder = self.encoder.take().expect("present until finish");
        let file = encoder
            .into_inner()
            .map_err(|e| fail(e.to_string()))?
            .into_inner()
            .map_err(|e| fail(e.error().to_string()))?;
        file.sync_all().map_err(|e| fail(e.to_string()))?;
        fs::rename(&self.tmp, &self.path).map_err(|e| fail(e.to_string()))?;
        Ok(self.path.clone())
    }
}

impl Drop for Gif {
    fn drop(&mut self) {
        // Unfinished or failed: leave no partial file. (After a successful rename the temporary
        // name no longer exists and this is a no-op.)
        if let Some(e) = self.encoder.take() {
            drop(e);
        }
        let _ = fs::remove_file(&self.tmp);
    }
}

/// Up to 256 colours: 16 greys for the labels, the rest split evenly among the colour maps,
/// sampled evenly along each (both ends kept).
pub(super) fn gif_palette(maps: &[Colormap]) -> Vec<[u8; 3]> {
    let mut p: Vec<[u8; 3]> = (0..16u32).map(|k| [(k * 17) as u8; 3]).collect();
    let each = (256 - p.len()) / maps.len();
    for m in maps {
        let t = m.table();
        for k in 0..each {
            p.push(t[k * 255 / (each - 1).max(1)]);
        }
    }
    p
}

pub(super) fn closest(palette: &[[u8; 3]], c: [u8; 3]) -> u8 {
    let d = |p: &[u8; 3]| {
        (0..3)
            .map(|k| (p[k] as i32 - c[k] as i32).pow(2))
            .sum::<i32>()
    };
    palette
        .iter()
        .enumerate()
        .min_by_key(|(_, p)| d(p))
        .map(|(k, _)| k as u8)
        .unwrap_or(0)
}

/// Writes `frames` (one size) as a looping GIF through [`Gif`].
pub fn write_gif(
    path: &Path,
    frames: &[Image],
    delay_cs: u16,
    colormaps: &[Colormap],
) -> Result<(), ImageError> {
    let first = frames
        .first()
        .ok_or_else(|| ImageError::Figure("a GIF needs at least one frame".into()))?;
    let mut gif = Gif::create(path, first.width, first.height, delay_cs, colormaps)?;
    for f in frames {
        gif.add(f)?;
    }
    gif.finish().map(|_| ())
}
