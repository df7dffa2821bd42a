//! NumPy `.npy` input and output for side-by-side runs with other codes: bodies as an N×4 float
//! array (x, y, z, m) in (N×5 with each particle's smoothing length for the neighbour search),
//! accelerations as N×3 float32 and neighbour lists as int64 out. The format (header dict, byte
//! order, C or Fortran order) is the `npyz` crate's; this module adds what a file from outside
//! needs before npyz sees it: every length in the header checked against the bytes present, so a
//! bad header is an error, never a panic or an allocation the file cannot fill.

use crate::device::bh::{Accel, Body};
use npyz::{DType, NpyFile, Order, TypeChar, WriterBuilder};
use std::path::Path;

/// What can be wrong with a `.npy` file.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a .npy file ({reason})")]
    Format { path: String, reason: String },
    #[error("{path}: expected an {want} array of float32/float64, found {found}")]
    Shape {
        path: String,
        /// The shapes accepted, e.g. "N×4".
        want: String,
        found: String,
    },
    #[error(
        "{path}: value {value:e} (row {row}, column {col}) is beyond float32's range (±3.4e38), \
         which warpkit computes in"
    )]
    Range {
        path: String,
        row: usize,
        col: usize,
        value: f64,
    },
}

/// Why a file's bytes are not an N×`cols` float array; the path is added by the caller.
enum Refusal {
    Format(String),
    Shape(String),
    /// A finite float64 that float32 cannot hold: element (row, column) and its value.
    Range(usize, usize, f64),
}

/// Reads an N×4 array of (x, y, z, m), float32 or float64 (converted), either byte order, C or
/// Fortran order.
pub fn read_bodies(path: &Path) -> Result<Vec<Body>, NpyError> {
    let (v, _) = read_file(path, &[4])?;
    Ok(v.chunks_exact(4).map(body).collect())
}

/// Reads an N×4 array of (x, y, z, m) or an N×5 array of (x, y, z, m, h) as [`read_bodies`]
/// does: the bodies, and the smoothing lengths when the file has them.
pub fn read_particles(path: &Path) -> Result<(Vec<Body>, Option<Vec<f32>>), NpyError> {
    let (v, cols) = read_file(path, &[4, 5])?;
    let bodies = v.chunks_exact(cols).map(body).collect();
    let h = (cols == 5).then(|| v.chunks_exact(5).map(|r| r[4]).collect());
    Ok((bodies, h))
}

fn body(r: &[f32]) -> Body {
    Body {
        x: r[0],
        y: r[1],
        z: r[2],
        m: r[3],
    }
}

/// A file's N×c array for a `c` in `cols`, as row-major float32, and its `c`.
fn read_file(path: &Path, cols: &[usize]) -> Result<(Vec<f32>, usize), NpyError> {
    let p = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| NpyError::Io {
        path: p.clone(),
        source,
    })?;
    read_rows(&bytes, cols).map_err(|r| match r {
        Refusal::Format(reason) => NpyError::Format { path: p, reason },
        Refusal::Shape(found) => NpyError::Shape {
            path: p,
            want: cols
                .iter()
                .map(|c| format!("N×{c}"))
                .collect::<Vec<_>>()
                .join(" or "),
            found,
        },
        Refusal::Range(row, col, value) => NpyError::Range {
            path: p,
            row,
            col,
            value,
        },
    })
}

/// The header's length field against the bytes after it: npyz allocates that many bytes before
/// reading them (up to 4 GiB from a version 2 header).
fn check_header_length(bytes: &[u8]) -> Result<(), Refusal> {
    let (len, start) = match (bytes.get(..6), bytes.get(6)) {
        (Some(b"\x93NUMPY"), Some(1)) if bytes.len() >= 10 => {
            (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10)
        }
        (Some(b"\x93NUMPY"), Some(2 | 3)) if bytes.len() >= 12 => {
            let b: [u8; 4] = bytes[8..12].try_into().unwrap();
            (u32::from_le_bytes(b) as usize, 12)
        }
        // No magic, an unknown version, or too short: npyz says which without allocating.
        _ => return Ok(()),
    };
    if len > bytes.len() - start {
        return Err(Refusal::Format(format!(
            "header of {len} bytes in a file of {}",
            bytes.len()
        )));
    }
    Ok(())
}

/// An N×c float array from a `.npy` file's bytes for a `c` in `allowed`, as row-major float32,
/// and its `c`.
fn read_rows(bytes: &[u8], allowed: &[usize]) -> Result<(Vec<f32>, usize), Refusal> {
    check_header_length(bytes)?;
    let npy = NpyFile::new(bytes).map_err(|e| Refusal::Format(e.to_string()))?;
    let header = npy.header().clone();
    let descr = header.dtype().descr();
    let fortran = header.order() == Order::Fortran;
    let refuse = || {
        Refusal::Shape(format!(
            "descr {descr}, shape {:?}, fortran_order {fortran}",
            header.shape()
        ))
    };
    let width = match header.dtype() {
        DType::Plain(t) if t.type_char() == TypeChar::Float && matches!(t.size_field(), 4 | 8) => {
            t.size_field() as usize
        }
        _ => return Err(refuse()),
    };
    let &[n, c] = header.shape() else {
        return Err(refuse());
    };
    let Some(&cols) = allowed.iter().find(|&&a| a as u64 == c) else {
        return Err(refuse());
    };
    // Checked here, not by npyz (its element count is an unchecked product): a shape can claim
    // more than usize holds (a (2^62, 4) shape); the bytes present bound what is read.
    let data = npy.into_inner();
    let need = usize::try_from(n)
        .ok()
        .and_then(|n| n.checked_mul(cols * width));
    if need.is_none_or(|need| data.len() < need) {
        return Err(Refusal::Format(format!(
            "{} data bytes for {n}×{cols} {descr} ({})",
            data.len(),
            need.map_or("more than fit in memory".into(), |b| format!("{b} needed"))
        )));
    }
    let npy = NpyFile::with_header(header, data);
    let flat = if width == 4 {
        npy.into_vec::<f32>()
            .map_err(|e| Refusal::Format(e.to_string()))?
    } else {
        let v = npy
            .into_vec::<f64>()
            .map_err(|e| Refusal::Format(e.to_string()))?;
        // A finite value beyond float32 would become ±inf and be reported as non-finite.
        if let Some(k) = v
            .iter()
            .position(|x| x.is_finite() && !(*x as f32).is_finite())
        {
            let (row, col) = if fortran {
                (k % n as usize, k / n as usize)
            } else {
                (k / cols, k % cols)
            };
            return Err(Refusal::Range(row, col, v[k]));
        }
        v.into_iter().map(|x| x as f32).collect()
    };
    if !fortran {
        return Ok((flat, cols));
    }
    // Fortran order stores column by column: element (i, j) at j·n + i.
    let n = flat.len() / cols;
    let rows = (0..n * cols)
        .map(|k| flat[(k % cols) * n + k / cols])
        .collect();
    Ok((rows, cols))
}

/// Writes `rows` × `cols` float32 values as a C-order `.npy` file, completely or not at all
/// (temporary file, then rename).
pub fn write_f32(path: &Path, values: &[f32], cols: usize) -> Result<(), NpyError> {
    let rows = values.len() / cols;
    // Through a temporary file that is removed on failure (`--output DIR` left
    // `DIR.npy.partial` behind).
    crate::files::write_atomically(path, |w| {
        let mut npy = npyz::WriteOptions::new()
            .default_dtype()
            .shape(&[rows as u64, cols as u64])
            .writer(w)
            .begin_nd()?;
        npy.extend(values[..rows * cols].iter().copied())?;
        npy.finish()
    })
    .map_err(|source| NpyError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Writes `values` as a one-dimensional int64 `.npy` file, completely or not at all (the CSR
/// offsets and indices of the neighbour lists: the index type of `scipy.sparse` at any size).
pub fn write_i64(path: &Path, values: impl ExactSizeIterator<Item = i64>) -> Result<(), NpyError> {
    let len = values.len() as u64;
    crate::files::write_atomically(path, |w| {
        let mut npy = npyz::WriteOptions::new()
            .default_dtype()
            .shape(&[len])
            .writer(w)
            .begin_nd()?;
        npy.extend(values)?;
        npy.finish()
    })
    .map_err(|source| NpyError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Writes vectors as an N×3 float32 array.
pub fn write_vectors(path: &Path, v: &[glam::Vec3]) -> Result<(), NpyError> {
    let flat: Vec<f32> = v.iter().flat_map(|v| v.to_array()).collect();
    write_f32(path, &flat, 3)
}

/// Writes accelerations as an N×3 float32 array.
pub fn write_accels(path: &Path, acc: &[Accel]) -> Result<(), NpyError> {
    write_f32(path, bytemuck::cast_slice(acc), 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 1 `.npy` file written by hand (not by npyz, so the reader is tested against the
    /// format, not against its own writer).
    fn npy_file(dict: &str, data: &[u8]) -> Vec<u8> {
        let header = format!("{dict}\n");
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("warpkit-npy-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Two bodies: row i is (10i + 1, 10i + 2, 10i + 3, 10i + 4), so a transposed or
    /// byte-swapped read cannot pass.
    const ROWS: [[f32; 4]; 2] = [[1.0, 2.0, 3.0, 4.0], [11.0, 12.0, 13.0, 14.0]];

    fn bodies_of(rows: &[[f32; 4]]) -> Vec<Body> {
        rows.iter()
            .map(|r| Body {
                x: r[0],
                y: r[1],
                z: r[2],
                m: r[3],
            })
            .collect()
    }

    fn read_bytes(name: &str, bytes: &[u8]) -> Result<Vec<Body>, NpyError> {
        let dir = scratch(name);
        let path = dir.join("b.npy");
        std::fs::write(&path, bytes).unwrap();
        let r = read_bodies(&path);
        std::fs::remove_dir_all(&dir).unwrap();
        r
    }

    #[test]
    fn round_trip_and_errors() {
        let dir = scratch("rt");
        let bodies: Vec<f32> = (0..20).map(|v| v as f32 * 0.5).collect();
        let path = dir.join("b.npy");
        write_f32(&path, &bodies, 4).unwrap();
        let back = read_bodies(&path).unwrap();
        let pos = crate::bh::scene::positions(&back);
        assert_eq!(pos[1], glam::Vec3::new(2.0, 2.5, 3.0));
        let vpath = dir.join("v.npy");
        write_vectors(&vpath, &pos).unwrap();
        let flat: Vec<f32> = pos.iter().flat_map(|p| p.to_array()).collect();
        write_f32(&dir.join("f.npy"), &flat, 3).unwrap();
        assert_eq!(
            std::fs::read(&vpath).unwrap(),
            std::fs::read(dir.join("f.npy")).unwrap()
        );
        assert_eq!(back.len(), 5);
        assert_eq!(
            back[1],
            Body {
                x: 2.0,
                y: 2.5,
                z: 3.0,
                m: 3.5
            }
        );
        write_f32(&path, &bodies[..15], 3).unwrap();
        assert!(matches!(read_bodies(&path), Err(NpyError::Shape { .. })));
        std::fs::write(&path, b"hello").unwrap();
        assert!(matches!(read_bodies(&path), Err(NpyError::Format { .. })));
        assert!(matches!(
            read_bodies(&dir.join("missing.npy")),
            Err(NpyError::Io { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The writer's output is what NumPy expects: magic, version 1, a C-order '<f4' header
    /// padded so the data starts aligned, then the values little-endian.
    #[test]
    fn written_layout() {
        let dir = scratch("layout");
        let path = dir.join("a.npy");
        write_f32(&path, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 3).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
        assert!(header.contains("'descr': '<f4'"), "{header}");
        assert!(header.contains("'fortran_order': False"), "{header}");
        assert!(header.contains("'shape': (2, 3"), "{header}");
        assert_eq!((10 + len) % 16, 0);
        assert_eq!(bytes.len(), 10 + len + 24);
        assert_eq!(&bytes[10 + len + 20..], &6.0f32.to_le_bytes());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// N×5 rows carry h: `read_particles` takes N×4 or N×5, `read_bodies` N×4 only.
    #[test]
    fn five_columns_carry_h() {
        let dir = scratch("h");
        let path = dir.join("p.npy");
        let rows: Vec<f32> = (1..=10).map(|v| v as f32).collect();
        write_f32(&path, &rows, 5).unwrap();
        let (b, h) = read_particles(&path).unwrap();
        assert_eq!(b, bodies_of(&[[1.0, 2.0, 3.0, 4.0], [6.0, 7.0, 8.0, 9.0]]));
        assert_eq!(h, Some(vec![5.0, 10.0]));
        let e = read_bodies(&path).unwrap_err();
        assert!(e.to_string().contains("expected an N×4 array"), "{e}");
        write_f32(&path, &rows[..8], 4).unwrap();
        assert_eq!(
            read_particles(&path).unwrap(),
            (read_bodies(&path).unwrap(), None)
        );
        write_f32(&path, &rows[..9], 3).unwrap();
        let e = read_particles(&path).unwrap_err();
        assert!(
            e.to_string().contains("expected an N×4 or N×5 array"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The int64 writer: a 1-D '<i8' array, values little-endian.
    #[test]
    fn int64_layout() {
        let dir = scratch("i64");
        let path = dir.join("a.npy");
        write_i64(&path, [0i64, 3, -1].into_iter()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
        assert!(header.contains("'descr': '<i8'"), "{header}");
        assert!(header.contains("'shape': (3,"), "{header}");
        assert_eq!(bytes.len(), 10 + len + 24);
        assert_eq!(&bytes[10 + len + 16..], &(-1i64).to_le_bytes());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn fortran_order_is_transposed() {
        // Column by column: all x, then all y, ...
        let data: Vec<u8> = (0..4)
            .flat_map(|j| ROWS.iter().map(move |r| r[j]))
            .flat_map(f32::to_le_bytes)
            .collect();
        let file = npy_file(
            "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 4), }",
            &data,
        );
        assert_eq!(read_bytes("fortran", &file).unwrap(), bodies_of(&ROWS));
    }

    /// A float64 value beyond float32 is named with its row and column (C and Fortran order),
    /// not left to become inf and be reported as non-finite.
    #[test]
    fn float64_beyond_float32_is_a_range_error() {
        let mut rows = [[1.0f64, 2.0, 3.0, 4.0], [11.0, 12.0, 13.0, 14.0]];
        rows[1][2] = -1e300;
        for fortran in [false, true] {
            let data: Vec<u8> = if fortran {
                (0..4)
                    .flat_map(|j| rows.iter().map(move |r| r[j]))
                    .flat_map(f64::to_le_bytes)
                    .collect()
            } else {
                rows.iter()
                    .flatten()
                    .flat_map(|v| v.to_le_bytes())
                    .collect()
            };
            let dict = format!(
                "{{'descr': '<f8', 'fortran_order': {}, 'shape': (2, 4), }}",
                if fortran { "True" } else { "False" }
            );
            let e = read_bytes("range", &npy_file(&dict, &data)).unwrap_err();
            assert!(
                matches!(e, NpyError::Range { row: 1, col: 2, value, .. } if value == -1e300),
                "{e}"
            );
        }
    }

    #[test]
    fn big_endian_float32_and_float64() {
        let be32: Vec<u8> = ROWS
            .iter()
            .flatten()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let file = npy_file(
            "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 4), }",
            &be32,
        );
        assert_eq!(read_bytes("be32", &file).unwrap(), bodies_of(&ROWS));
        // float64, big-endian and Fortran order at once.
        let be64: Vec<u8> = (0..4)
            .flat_map(|j| ROWS.iter().map(move |r| r[j] as f64))
            .flat_map(f64::to_be_bytes)
            .collect();
        let file = npy_file(
            "{'descr': '>f8', 'fortran_order': True, 'shape': (2, 4), }",
            &be64,
        );
        assert_eq!(read_bytes("be64", &file).unwrap(), bodies_of(&ROWS));
    }

    #[test]
    fn non_float_or_wrong_rank_is_a_shape_error() {
        let ints: Vec<u8> = (0..8i32).flat_map(i32::to_le_bytes).collect();
        for dict in [
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 4), }",
            "{'descr': '<f2', 'fortran_order': False, 'shape': (4, 4), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (8,), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 4), }",
        ] {
            let e = read_bytes("kind", &npy_file(dict, &ints)).unwrap_err();
            assert!(matches!(e, NpyError::Shape { .. }), "{dict}: {e}");
        }
    }

    /// A header whose shape overflows the size arithmetic is a format error, not a panic (nor,
    /// with npyz's wrapping product, an empty array).
    #[test]
    fn huge_shape_is_an_error() {
        let file = npy_file(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }",
            &[0; 64],
        );
        let e = read_bytes("huge", &file).unwrap_err();
        assert!(matches!(e, NpyError::Format { .. }), "{e}");
        assert!(e.to_string().contains("64 data bytes"), "{e}");
        // Fits usize but not the file: refused before reading.
        let file = npy_file(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1073741824, 4), }",
            &[0; 64],
        );
        let e = read_bytes("big", &file).unwrap_err();
        assert!(e.to_string().contains("34359738368 needed"), "{e}");
    }

    /// A version 2 header length (u32) larger than the file is refused before npyz allocates it.
    #[test]
    fn header_length_beyond_the_file() {
        let mut file = b"\x93NUMPY\x02\x00".to_vec();
        file.extend_from_slice(&u32::MAX.to_le_bytes());
        file.extend_from_slice(b"{'descr': '<f4'");
        let e = read_bytes("hlen", &file).unwrap_err();
        assert!(e.to_string().contains("header of 4294967295 bytes"), "{e}");
    }
}
