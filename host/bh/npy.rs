//! NumPy `.npy` input and output for side-by-side runs with other codes: bodies as an N×4 float32
//! array (x, y, z, m) in, accelerations as N×3 float32 out. Only C-order little-endian float arrays
//! are accepted (float64 input is converted); anything else is a clear error.

use crate::device::bh::{Accel, Body};
use std::io::Write;
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
    #[error("{path}: expected an N×{cols} array of little-endian float32/float64, found {found}")]
    Shape {
        path: String,
        cols: usize,
        found: String,
    },
}

/// Reads an N×4 array of (x, y, z, m).
pub fn read_bodies(path: &Path) -> Result<Vec<Body>, NpyError> {
    let p = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| NpyError::Io {
        path: p.clone(),
        source,
    })?;
    let fmt = |reason: &str| NpyError::Format {
        path: p.clone(),
        reason: reason.into(),
    };
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(fmt("missing the \\x93NUMPY magic"));
    }
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(fmt(&format!("unsupported version {v}"))),
    };
    let header = bytes
        .get(start..start + header_len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| fmt("truncated or non-ASCII header"))?;
    let field = |key: &str| -> Option<&str> {
        let at = header.find(&format!("'{key}'"))? + key.len() + 2;
        let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
        Some(rest)
    };
    let descr = field("descr")
        .and_then(|r| r.split('\'').nth(1))
        .ok_or_else(|| fmt("no descr"))?;
    let fortran = field("fortran_order").is_some_and(|r| r.starts_with("True"));
    let shape_txt = field("shape")
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.split(')').next())
        .ok_or_else(|| fmt("no shape"))?;
    let shape: Vec<usize> = shape_txt
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let width = match descr {
        "<f4" => 4,
        "<f8" => 8,
        _ => 0,
    };
    if fortran || width == 0 || shape.len() != 2 || shape[1] != 4 {
        return Err(NpyError::Shape {
            path: p,
            cols: 4,
            found: format!("descr {descr}, shape ({shape_txt}), fortran_order {fortran}"),
        });
    }
    let data = &bytes[start + header_len..];
    let n = shape[0];
    // Checked: a header's shape can claim more than usize holds (issue 17, (2^62, 4)); the
    // bytes present bound what is allocated.
    let need = n.checked_mul(4 * width);
    if need.is_none_or(|need| data.len() < need) {
        return Err(fmt(&format!(
            "{} data bytes for {n}×4 {descr} ({})",
            data.len(),
            need.map_or("more than fit in memory".into(), |b| format!("{b} needed"))
        )));
    }
    let value = |k: usize| -> f32 {
        if width == 4 {
            f32::from_le_bytes(data[4 * k..4 * k + 4].try_into().unwrap())
        } else {
            f64::from_le_bytes(data[8 * k..8 * k + 8].try_into().unwrap()) as f32
        }
    };
    Ok((0..n)
        .map(|i| Body {
            x: value(4 * i),
            y: value(4 * i + 1),
            z: value(4 * i + 2),
            m: value(4 * i + 3),
        })
        .collect())
}

/// Writes `rows` × `cols` float32 values as a `.npy` file, completely or not at all (temporary
/// file, then rename).
pub fn write_f32(path: &Path, values: &[f32], cols: usize) -> Result<(), NpyError> {
    let p = path.display().to_string();
    let rows = values.len() / cols;
    let mut header =
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    // Magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    // Through a temporary file that is removed on failure (issue 17: `--output DIR` left
    // `DIR.npy.partial` behind).
    crate::files::write_atomically(path, |w| {
        w.write_all(b"\x93NUMPY\x01\x00")?;
        w.write_all(&(header.len() as u16).to_le_bytes())?;
        w.write_all(header.as_bytes())?;
        values
            .iter()
            .try_for_each(|v| w.write_all(&v.to_le_bytes()))
    })
    .map_err(|source| NpyError::Io { path: p, source })
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

    #[test]
    fn round_trip_and_errors() {
        let dir = std::env::temp_dir().join(format!("warpkit-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
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

    /// A header whose shape overflows the size arithmetic is a format error, not a panic.
    #[test]
    fn huge_shape_is_an_error() {
        let dir = std::env::temp_dir().join(format!("warpkit-npy-huge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("huge.npy");
        let header =
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(&[0; 64]);
        std::fs::write(&path, &bytes).unwrap();
        let e = read_bodies(&path).unwrap_err();
        assert!(matches!(e, NpyError::Format { .. }), "{e}");
        assert!(e.to_string().contains("64 data bytes"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
