//! Packing an output directory into one uncompressed tar file (the `tar` crate), so that a run whose
//! caller keeps only a few files (the lent GPU machine returns at most 8) brings everything back.

use std::fs;
use std::io;
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
    warpkit::files::write_atomically(out, |w| {
        let mut tar = tar::Builder::new(w);
        tar.mode(tar::HeaderMode::Deterministic);
        for (path, name) in files {
            if fs::canonicalize(&path).is_ok_and(|p| p == out_abs) {
                continue;
            }
            let data = fs::read(&path)?;
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_entry_type(tar::EntryType::Regular);
            tar.append_data(&mut h, name, data.as_slice())?;
        }
        tar.finish()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file comes back with its contents, long paths (past ustar's 255 bytes) included.
    #[test]
    fn archives_read_back_with_long_names() {
        let root = std::env::temp_dir().join(format!("warpkit-pack-{}", std::process::id()));
        let dir = root.join("out");
        let deep = dir
            .join("d".repeat(120))
            .join("e".repeat(120))
            .join("f".repeat(40));
        fs::create_dir_all(&deep).unwrap();
        fs::write(dir.join("table.md"), b"| a |\n").unwrap();
        fs::write(deep.join("data.csv"), vec![7u8; 1000]).unwrap();
        let out = root.join("out.tar");
        tar_dir(&dir, &out).unwrap();
        let mut got = Vec::new();
        let mut archive = tar::Archive::new(fs::File::open(&out).unwrap());
        for e in archive.entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut data = Vec::new();
            io::Read::read_to_end(&mut e, &mut data).unwrap();
            got.push((name, data));
        }
        got.sort();
        let long = format!(
            "out/{}/{}/{}/data.csv",
            "d".repeat(120),
            "e".repeat(120),
            "f".repeat(40)
        );
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], (long, vec![7u8; 1000]));
        assert_eq!(got[1], ("out/table.md".to_string(), b"| a |\n".to_vec()));
        fs::remove_dir_all(&root).unwrap();
    }
}
