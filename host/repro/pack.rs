//! Packing an output directory into one uncompressed tar file (POSIX ustar), so that a run whose
//! caller keeps only a few files (the lent GPU machine returns at most 8) brings everything back.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes every regular file under `dir` into the tar archive `out`, with paths relative to the
/// parent of `dir` (so `results/sort/table.md` unpacks as `results/sort/table.md`). The archive
/// itself is skipped when it lies inside `dir`.
pub fn tar_dir(dir: &Path, out: &Path) -> io::Result<()> {
    let base = dir
        .file_name()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("out"));
    let mut files = Vec::new();
    collect(dir, &base, &mut files)?;
    files.sort();
    // An archive written inside `dir` must not contain (an older copy of) itself.
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    let out_abs = fs::canonicalize(parent.unwrap_or(Path::new(".")))
        .map(|p| p.join(out.file_name().unwrap_or_default()))
        .unwrap_or_else(|_| out.to_path_buf());
    // Whole or nothing: a failure leaves no half archive (`out.partial` is removed).
    crate::files::write_atomically(out, |w| {
        for (path, name) in files {
            if fs::canonicalize(&path).is_ok_and(|p| p == out_abs) {
                continue;
            }
            let data = fs::read(&path)?;
            w.write_all(&header(&name, data.len() as u64)?)?;
            w.write_all(&data)?;
            let pad = (512 - data.len() % 512) % 512;
            w.write_all(&vec![0u8; pad])?;
        }
        w.write_all(&[0u8; 1024])
    })
}

fn collect(dir: &Path, rel: &Path, files: &mut Vec<(PathBuf, String)>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let rel = rel.join(entry.file_name());
        if kind.is_dir() {
            collect(&entry.path(), &rel, files)?;
        } else if kind.is_file()
            && !rel.to_string_lossy().ends_with(".tmp")
            && !rel.to_string_lossy().ends_with(".partial")
        {
            files.push((entry.path(), rel.to_string_lossy().replace('\\', "/")));
        }
    }
    Ok(())
}

/// A ustar header for a regular file `name` of `size` bytes (mode 0644, mtime 0 is avoided: now).
fn header(name: &str, size: u64) -> io::Result<[u8; 512]> {
    let mut h = [0u8; 512];
    let bytes = name.as_bytes();
    // Names over 100 bytes go into the 155-byte prefix, split at a '/'.
    let (prefix, short) = if bytes.len() <= 100 {
        (&[][..], bytes)
    } else {
        let split = bytes[..bytes.len().min(156)]
            .iter()
            .rposition(|&b| b == b'/')
            .filter(|&k| bytes.len() - k - 1 <= 100)
            .ok_or_else(|| io::Error::other(format!("path too long for tar: {name}")))?;
        (&bytes[..split], &bytes[split + 1..])
    };
    h[..short.len()].copy_from_slice(short);
    let mtime = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let octal = |h: &mut [u8; 512], at: usize, len: usize, v: u64| {
        let s = format!("{v:0w$o}\0", w = len - 1);
        h[at..at + len].copy_from_slice(s.as_bytes());
    };
    octal(&mut h, 100, 8, 0o644);
    octal(&mut h, 108, 8, 0);
    octal(&mut h, 116, 8, 0);
    octal(&mut h, 124, 12, size);
    octal(&mut h, 136, 12, mtime);
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[345..345 + prefix.len()].copy_from_slice(prefix);
    // The checksum is computed with its own field as spaces.
    h[148..156].copy_from_slice(b"        ");
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    Ok(h)
}
