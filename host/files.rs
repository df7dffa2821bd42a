//! Output files: checked before the work that produces them, written whole or not at all, and
//! the one-line error report of the command line.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Why an output path cannot be written. Checked before hours of work, not after.
#[derive(Debug, thiserror::Error)]
pub enum OutputPathError {
    #[error("{path} is a directory; give a file name")]
    IsDirectory { path: PathBuf },
    #[error("cannot write {path}: the directory {dir} does not exist")]
    NoDirectory { path: PathBuf, dir: PathBuf },
    #[error("cannot write {path}: {dir} is not a directory")]
    NotADirectory { path: PathBuf, dir: PathBuf },
    #[error("cannot write {path} in {dir}")]
    NotWritable {
        path: PathBuf,
        dir: PathBuf,
        source: io::Error,
    },
}

/// Checks that `path` can be created as a file: not a directory, its directory exists, and a
/// probe file can be created there (permissions, read-only file systems). Writes nothing else.
pub fn check_output(path: &Path) -> Result<(), OutputPathError> {
    if path.is_dir() {
        return Err(OutputPathError::IsDirectory { path: path.into() });
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if dir.exists() && !dir.is_dir() {
        // A file where the directory should be: not "does not exist".
        return Err(OutputPathError::NotADirectory {
            path: path.into(),
            dir,
        });
    }
    if !dir.is_dir() {
        return Err(OutputPathError::NoDirectory {
            path: path.into(),
            dir,
        });
    }
    let probe = dir.join(format!(".warpkit-probe-{}", std::process::id()));
    File::create(&probe)
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|source| OutputPathError::NotWritable {
            path: path.into(),
            dir,
            source,
        })
}

/// The same file as `other`, whether or not `path` exists yet: both compared canonicalized (links
/// and `..` resolved), a path that does not exist by its canonical directory and file name.
pub fn same_file(path: &Path, other: &Path) -> bool {
    fn canonical(p: &Path) -> Option<PathBuf> {
        if let Ok(c) = std::fs::canonicalize(p) {
            return Some(c);
        }
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Some(std::fs::canonicalize(dir).ok()?.join(p.file_name()?))
    }
    matches!((canonical(path), canonical(other)), (Some(a), Some(b)) if a == b)
}

/// A command's output that would replace one of its inputs.
#[derive(Debug, thiserror::Error)]
#[error("{output_flag} {output} is the {input_flag} file: the output would replace its input")]
pub struct OverwritesInput {
    pub output_flag: String,
    pub output: PathBuf,
    pub input_flag: String,
}

/// Refuses an output (named by its option, e.g. `--vtu`) that is one of the inputs (each named
/// by its option): the one check every command makes before any work.
pub fn check_not_input(
    output_flag: &str,
    output: &Path,
    inputs: &[(&str, Option<&Path>)],
) -> Result<(), OverwritesInput> {
    match inputs
        .iter()
        .find_map(|(flag, p)| p.filter(|p| same_file(output, p)).map(|_| flag))
    {
        Some(flag) => Err(OverwritesInput {
            output_flag: output_flag.into(),
            output: output.into(),
            input_flag: (*flag).into(),
        }),
        None => Ok(()),
    }
}

/// Writes `path` through a temporary sibling (`path` + ".partial") and a rename; on any failure
/// the temporary file is removed, so nothing half-written is left under either name.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        let mut w = BufWriter::new(File::create(&tmp)?);
        write(&mut w)?;
        w.flush()?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// An error and its causes on one line, each cause once: a message that already quotes its
/// source's text (`"{path}: {source}"`, common with thiserror) does not repeat it.
pub fn error_report(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        cause = c.source();
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_checks() {
        let dir = std::env::temp_dir().join(format!("warpkit-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(check_output(&dir.join("a.npy")).is_ok());
        assert!(matches!(
            check_output(&dir),
            Err(OutputPathError::IsDirectory { .. })
        ));
        assert!(matches!(
            check_output(&dir.join("nodir/a.npy")),
            Err(OutputPathError::NoDirectory { .. })
        ));
        assert!(check_output(Path::new("plain-name.npy")).is_ok());
        // A file where the directory should be is named as such, not as missing.
        std::fs::write(dir.join("f"), b"").unwrap();
        assert!(matches!(
            check_output(&dir.join("f/a.npy")),
            Err(OutputPathError::NotADirectory { .. })
        ));
        std::fs::remove_file(dir.join("f")).unwrap();
        // A failed write leaves neither the file nor its temporary.
        let path = dir.join("x.txt");
        let e = write_atomically(&path, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        });
        assert!(e.is_err());
        assert!(!path.exists());
        assert!(!dir.join("x.txt.partial").exists());
        // A rename onto a directory fails after the temporary was written: removed too.
        std::fs::create_dir_all(dir.join("d")).unwrap();
        assert!(write_atomically(&dir.join("d"), |w| w.write_all(b"x")).is_err());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn outputs_that_are_inputs() {
        let dir = std::env::temp_dir().join(format!("warpkit-same-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let input = dir.join("m.msh");
        std::fs::write(&input, b"mesh").unwrap();
        // The same file through `..`, and a file that does not exist yet.
        assert!(same_file(&dir.join("sub/../m.msh"), &input));
        assert!(!same_file(&dir.join("new.vtu"), &input));
        assert!(same_file(&dir.join("sub/../new.vtu"), &dir.join("new.vtu")));
        let e = check_not_input(
            "--vtu",
            &dir.join("sub/../m.msh"),
            &[("--mesh", Some(&input))],
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("--vtu "), "{e}");
        assert!(e.to_string().contains("is the --mesh file"), "{e}");
        assert!(
            check_not_input("--vtu", &dir.join("out.vtu"), &[("--mesh", Some(&input))]).is_ok()
        );
        assert!(check_not_input("--vtu", &input, &[("--case", None)]).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[derive(Debug, thiserror::Error)]
    #[error("{path}: {source}")]
    struct Quoting {
        path: String,
        source: io::Error,
    }

    #[test]
    fn report_names_each_cause_once() {
        let io = || io::Error::from(io::ErrorKind::NotFound);
        let e = anyhow::Error::new(Quoting {
            path: "a.npy".into(),
            source: io(),
        })
        .context("reading the bodies");
        let text = error_report(e.as_ref());
        assert_eq!(
            text.matches(&io().to_string()).count(),
            1,
            "repeated: {text}"
        );
        assert!(text.starts_with("reading the bodies: a.npy: "), "{text}");
    }
}
