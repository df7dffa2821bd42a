//! Files a run or a reproduction writes: a directory checked writable up front, CSV rows
//! appended and flushed as they are measured, Markdown tables, and whole files written to a
//! temporary name and renamed, so a reader never sees half a file. Also the plain progress lines
//! of a long run in a log ([`Plain`]); a terminal's progress bar is the front end's.

use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Failures to write a reproduction's outputs, each naming the path.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("cannot create the output directory {path}: {source}")]
    CreateDir { path: PathBuf, source: io::Error },
    #[error("the output directory {path} is not writable: {source}")]
    NotWritable { path: PathBuf, source: io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("interrupted (Ctrl-C)")]
    Interrupted,
    #[error("{path}: a row has {got} fields but the header has {want}")]
    RowWidth {
        path: PathBuf,
        got: usize,
        want: usize,
    },
}

/// Set by Ctrl-C (`warpkit repro` installs the handler): the next row ends the sweep.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Asks the running sweep to stop after the row being measured; it then writes its table,
/// figures and `meta.json` (status "interrupted") from the rows it has.
pub fn interrupt() {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`interrupt`] was called.
pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed)
}

/// `DIR/<name>/`, created and checked writable.
#[derive(Clone, Debug)]
pub struct OutDir {
    path: PathBuf,
}

impl OutDir {
    /// Creates `root/name` (and its parents) and checks that a file can be written in it.
    pub fn create(root: &Path, name: &str) -> Result<Self, OutputError> {
        let path = root.join(name);
        fs::create_dir_all(&path).map_err(|source| OutputError::CreateDir {
            path: path.clone(),
            source,
        })?;
        let probe = path.join(".warpkit-write-probe");
        File::create(&probe)
            .and_then(|mut f| f.write_all(b"ok"))
            .and_then(|()| fs::remove_file(&probe))
            .map_err(|source| OutputError::NotWritable {
                path: path.clone(),
                source,
            })?;
        Ok(OutDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes `name` whole (temporary file, then rename).
    pub fn write(&self, name: &str, contents: &[u8]) -> Result<PathBuf, OutputError> {
        let path = self.file(name);
        write_atomic(&path, contents)?;
        Ok(path)
    }
}

/// Writes `path` through `path.partial` and a rename, so a crash leaves the old file or none.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), OutputError> {
    // One atomic writer for the project: it removes its temporary file when a write fails.
    crate::files::write_atomically(path, |w| std::io::Write::write_all(w, contents)).map_err(
        |source| OutputError::Write {
            path: path.to_path_buf(),
            source,
        },
    )
}

/// A CSV file written as measurements come in: each [`Csv::row`] appends one whole line and
/// flushes, so a sweep that fails keeps every row measured before the failure.
pub struct Csv {
    path: PathBuf,
    file: File,
    width: usize,
}

impl Csv {
    /// Creates (truncates) `path` and writes the header line.
    pub fn create(path: PathBuf, header: &[&str]) -> Result<Self, OutputError> {
        let file = File::create(&path).map_err(|source| OutputError::Write {
            path: path.clone(),
            source,
        })?;
        let mut csv = Csv {
            path,
            file,
            width: header.len(),
        };
        csv.row(header)?;
        Ok(csv)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one row (as many fields as the header) and flushes it to the file.
    pub fn row<S: AsRef<str>>(&mut self, fields: &[S]) -> Result<(), OutputError> {
        if fields.len() != self.width {
            return Err(OutputError::RowWidth {
                path: self.path.clone(),
                got: fields.len(),
                want: self.width,
            });
        }
        let mut line = String::new();
        for (k, f) in fields.iter().enumerate() {
            if k > 0 {
                line.push(',');
            }
            line.push_str(&csv_field(f.as_ref()));
        }
        line.push('\n');
        // One write of the whole line, then flush: never half a row from this process.
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|source| OutputError::Write {
                path: self.path.clone(),
                source,
            })?;
        // Every sweep streams its rows through here: the one place to stop after a whole row,
        // so the sweep's failure path finishes what was measured.
        if interrupted() {
            return Err(OutputError::Interrupted);
        }
        Ok(())
    }
}

/// Quotes a CSV field when it holds a comma, quote or line break (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Parses CSV text as written by [`Csv`] (and by ncu): quoted fields, doubled quotes.
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let (mut quoted, mut chars) = (false, text.chars().peekable());
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
                any = false;
            }
            (false, c) => field.push(c),
        }
    }
    if any {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// A Markdown table.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new<S: AsRef<str>>(header: &[S]) -> Self {
        Table {
            header: header.iter().map(|s| s.as_ref().to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.header.len());
        self.rows.push(row);
    }

    pub fn to_markdown(&self) -> String {
        let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        let line = |r: &[String]| {
            let cells: Vec<String> = r.iter().map(|s| cell(s)).collect();
            format!("| {} |\n", cells.join(" | "))
        };
        let mut s = line(&self.header);
        s.push_str(&format!("|{}\n", " --- |".repeat(self.header.len())));
        for r in &self.rows {
            s.push_str(&line(r));
        }
        s
    }
}

/// `table.md`: a title, then paragraphs, tables and figure links in order.
#[derive(Clone, Debug, Default)]
pub struct Report {
    text: String,
}

impl Report {
    pub fn new(title: &str) -> Self {
        Report {
            text: format!("# {title}\n"),
        }
    }

    pub fn heading(&mut self, h: &str) -> &mut Self {
        let _ = write!(self.text, "\n## {h}\n");
        self
    }

    pub fn para(&mut self, p: &str) -> &mut Self {
        let _ = write!(self.text, "\n{p}\n");
        self
    }

    pub fn table(&mut self, t: &Table) -> &mut Self {
        let _ = write!(self.text, "\n{}", t.to_markdown());
        self
    }

    /// Links a figure written as `stem.png` and `stem.svg` beside `table.md`.
    pub fn figure(&mut self, stem: &str, caption: &str) -> &mut Self {
        let _ = write!(
            self.text,
            "\n![{caption}]({stem}.png)\n\n({caption}: [PNG]({stem}.png), [SVG]({stem}.svg))\n"
        );
        self
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Writes `table.md` into `dir`.
    pub fn write(&self, dir: &OutDir) -> Result<PathBuf, OutputError> {
        dir.write("table.md", self.text.as_bytes())
    }
}

/// Seconds between plain progress lines by default ([`progress`] when standard error is not a
/// terminal).
pub const PROGRESS_EVERY_S: f64 = 10.0;

/// Plain progress lines for a log: `what: 120/1000 (12.0%), 3.40/s, elapsed 35s, ETA 4m 19s,
/// MESSAGE`, at most one every `every`.
pub struct Plain {
    what: String,
    len: u64,
    pos: u64,
    msg: String,
    start: std::time::Instant,
    last: std::time::Instant,
    every: std::time::Duration,
}

impl Plain {
    /// Lines every `every` (none when it is zero) of a count that runs to `len`.
    pub fn new(what: &str, len: u64, every: std::time::Duration) -> Self {
        let now = std::time::Instant::now();
        Plain {
            what: what.to_string(),
            len,
            pos: 0,
            msg: String::new(),
            start: now,
            last: now,
            every,
        }
    }

    /// At `pos` of the count, with `msg` after the numbers: a line when `every` has passed
    /// since the last.
    pub fn update(&mut self, pos: u64, msg: &str) {
        self.pos = pos;
        if self.msg != msg {
            self.msg = msg.to_string();
        }
        if !self.every.is_zero() && self.last.elapsed() >= self.every {
            self.last = std::time::Instant::now();
            eprintln!("{}", self.line());
        }
    }

    /// The line: `nbody: 120/1000 (12.0%), 3.40/s, ETA 4m 19s, t = 1.2`.
    fn line(&self) -> String {
        let elapsed = self.start.elapsed().as_secs_f64();
        let rate = self.pos as f64 / elapsed.max(1e-9);
        let eta = if self.pos > 0 {
            duration(self.len.saturating_sub(self.pos) as f64 / rate)
        } else {
            "unknown".into()
        };
        let mut line = format!(
            "{}: {}/{} ({:.1}%), {rate:.3}/s, elapsed {}, ETA {eta}",
            self.what,
            self.pos,
            self.len,
            100.0 * self.pos as f64 / self.len.max(1) as f64,
            duration(elapsed)
        );
        if !self.msg.is_empty() {
            line.push_str(", ");
            line.push_str(&self.msg);
        }
        line
    }
}

/// Seconds as `1h 02m 03s`, `4m 05s` or `6s`.
fn duration(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m {sec:02}s"),
        (h, m, sec) => format!("{h}h {m:02}m {sec:02}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quoting_round_trips() {
        let rows = vec![
            vec!["a".to_string(), "b,c".into(), "say \"hi\"".into()],
            vec!["1".into(), "".into(), "x\ny".into()],
        ];
        let mut text = String::new();
        for r in &rows {
            let f: Vec<String> = r.iter().map(|s| csv_field(s)).collect();
            text.push_str(&f.join(","));
            text.push('\n');
        }
        assert_eq!(parse_csv(&text), rows);
    }

    #[test]
    fn markdown_table_escapes_pipes() {
        let mut t = Table::new(&["a", "b"]);
        t.push(vec!["x|y".into(), "1".into()]);
        assert_eq!(t.to_markdown(), "| a | b |\n| --- | --- |\n| x\\|y | 1 |\n");
    }
}
