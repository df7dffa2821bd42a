//! Where a reproduction's files go (`DIR/<name>/` with `data.csv`, `table.md`, `meta.json` and
//! figures: the library's [`warpkit::output`], with the Ctrl-C flag that ends a sweep after a
//! row), and progress on standard error.

use std::io::{self, IsTerminal};
pub use warpkit::output::*;

/// The interval of plain progress lines in milliseconds (`--progress-every`).
static PROGRESS_EVERY_MS: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new((PROGRESS_EVERY_S * 1e3) as u64);

/// Sets the seconds between plain progress lines (0: none) for the bars made after it.
pub fn set_progress_every(seconds: f64) {
    let ms = (seconds.max(0.0) * 1e3).min(u64::MAX as f64) as u64;
    PROGRESS_EVERY_MS.store(ms, std::sync::atomic::Ordering::Relaxed);
}

/// Progress of a sweep or run on stderr: a bar on a terminal; elsewhere (a batch job's log) a
/// plain line every [`set_progress_every`] seconds with the count, rate and time left.
pub fn progress(len: u64, what: &str) -> Progress {
    let ms = PROGRESS_EVERY_MS.load(std::sync::atomic::Ordering::Relaxed);
    progress_every(len, what, ms as f64 / 1e3)
}

/// [`progress`] with plain lines every `seconds` (0: none).
pub fn progress_every(len: u64, what: &str, seconds: f64) -> Progress {
    if !io::stderr().is_terminal() {
        let plain = (seconds > 0.0).then(|| {
            std::sync::Mutex::new(Plain::new(
                what,
                len,
                std::time::Duration::from_secs_f64(seconds.min(1e9)),
            ))
        });
        return Progress {
            bar: indicatif::ProgressBar::hidden(),
            plain,
            pos: std::sync::atomic::AtomicU64::new(0),
            msg: std::sync::Mutex::new(String::new()),
        };
    }
    let pb = indicatif::ProgressBar::new(len);
    let style = indicatif::ProgressStyle::with_template(
        "{prefix:>10} [{elapsed_precise}] {bar:30} {pos}/{len} {per_sec} {msg}",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    pb.set_style(style);
    pb.set_prefix(what.to_string());
    Progress {
        bar: pb,
        plain: None,
        pos: std::sync::atomic::AtomicU64::new(0),
        msg: std::sync::Mutex::new(String::new()),
    }
}

/// A terminal bar, or the plain lines of a log ([`progress`]).
pub struct Progress {
    bar: indicatif::ProgressBar,
    plain: Option<std::sync::Mutex<Plain>>,
    pos: std::sync::atomic::AtomicU64,
    msg: std::sync::Mutex<String>,
}

impl Progress {
    pub fn inc(&self, delta: u64) {
        self.bar.inc(delta);
        let pos = self
            .pos
            .fetch_add(delta, std::sync::atomic::Ordering::Relaxed)
            + delta;
        self.update(pos);
    }

    pub fn set_position(&self, pos: u64) {
        self.bar.set_position(pos);
        self.pos.store(pos, std::sync::atomic::Ordering::Relaxed);
        self.update(pos);
    }

    pub fn set_message(&self, msg: impl Into<std::borrow::Cow<'static, str>>) {
        let msg = msg.into();
        // A message alone prints nothing: the next count does.
        if let Ok(mut m) = self.msg.lock() {
            *m = msg.to_string();
        }
        self.bar.set_message(msg);
    }

    pub fn finish_and_clear(&self) {
        self.bar.finish_and_clear();
    }

    fn update(&self, pos: u64) {
        let Some(plain) = &self.plain else { return };
        let msg = self.msg.lock().map(|m| m.clone()).unwrap_or_default();
        if let Ok(mut p) = plain.lock() {
            p.update(pos, &msg);
        }
    }
}
