//! Fuzz-style checks of the file readers: random truncations, byte flips and runs of
//! 0xff / '9' in valid `.npy`, Gadget snapshot and Gmsh files give an error or a valid result,
//! never a panic, and never an allocation larger than the bytes present can justify (a count in a
//! header must not reserve memory the file cannot fill). A fixed number of cases on a fresh seed
//! per run; a failure prints the seed, `WARPKIT_FUZZ_SEED=<seed>` replays it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use warpkit::device::rng;

/// Records the largest single allocation of the current thread (other tests' threads do not
/// interfere), on top of the system allocator.
struct Tracking;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to `System` unchanged; only records the requested size.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LARGEST.try_with(|m| m.set(m.get().max(layout.size())));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = LARGEST.try_with(|m| m.set(m.get().max(new_size)));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Tracking = Tracking;

const CASES: u64 = 400;

fn seed() -> u64 {
    std::env::var("WARPKIT_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap();
            rng::mix64(t.as_nanos() as u64 ^ std::process::id() as u64)
        })
}

/// Case `case`'s mutation of `valid`: a truncation, 1–4 byte flips, or a run of 0xff or ASCII
/// '9' (huge binary or decimal counts) written over it.
fn mutate(valid: &[u8], seed: u64, case: u64) -> Vec<u8> {
    let draw = |k: u64| rng::draw_u64(seed, 16 * case + k);
    let at = |k: u64| (draw(k) % valid.len() as u64) as usize;
    let mut b = valid.to_vec();
    match draw(0) % 4 {
        0 => b.truncate(at(1)),
        1 => {
            for k in 0..1 + draw(1) % 4 {
                let i = at(2 + k);
                b[i] ^= (draw(8 + k) % 255 + 1) as u8;
            }
        }
        r => {
            let fill = if r == 2 { 0xff } else { b'9' };
            let i = at(1);
            let len = (1 + draw(2) % 20) as usize;
            for v in b.iter_mut().skip(i).take(len) {
                *v = fill;
            }
        }
    }
    b
}

/// Runs `read` on `CASES` mutations of `valid`; each must return (Ok or Err) without a panic and
/// allocate at most `16 × bytes + 1 MiB` at once.
fn fuzz<T, E>(what: &str, valid: &[u8], read: impl Fn(&[u8]) -> Result<T, E>) {
    assert!(read(valid).is_ok(), "{what}: the valid file does not read");
    let seed = seed();
    let (mut ok, mut err) = (0, 0);
    for case in 0..CASES {
        let bytes = mutate(valid, seed, case);
        LARGEST.with(|m| m.set(0));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read(&bytes).is_ok()));
        let largest = LARGEST.with(|m| m.get());
        let fail = |why: String| {
            panic!("{what}: case {case} of WARPKIT_FUZZ_SEED={seed}: {why}");
        };
        match r {
            Ok(true) => ok += 1,
            Ok(false) => err += 1,
            Err(_) => fail("panicked".into()),
        }
        let cap = 16 * bytes.len() + (1 << 20);
        if largest > cap {
            fail(format!(
                "allocated {largest} bytes at once from {} bytes",
                bytes.len()
            ));
        }
    }
    eprintln!("{what}: {ok} read, {err} refused (seed {seed})");
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("warpkit-fuzz-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn npy_reader() {
    let dir = scratch("npy");
    let path = dir.join("b.npy");
    let bodies: Vec<f32> = (0..64 * 4).map(|v| 1.0 + v as f32 * 0.25).collect();
    warpkit::bh::npy::write_f32(&path, &bodies, 4).unwrap();
    let valid = std::fs::read(&path).unwrap();
    fuzz("npy", &valid, |b| {
        std::fs::write(&path, b).unwrap();
        warpkit::bh::npy::read_bodies(&path)
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gadget_reader() {
    use warpkit::nbody::snapshot::{
        Format, Header, Precision, Snapshot, encode_gadget, parse_gadget,
    };
    let mut p = warpkit::nbody::ic::Plummer::henon(64, 3).generate();
    for i in 40..64 {
        p.ptype[i] = warpkit::nbody::DISK;
        p.mass[i] *= 1.0 + i as f64 / 100.0;
    }
    let s = Snapshot {
        header: Header::default(),
        particles: p,
        potential: None,
        gas: None,
    };
    for (format, precision) in [
        (Format::Gadget1, Precision::Single),
        (Format::Gadget2, Precision::Double),
    ] {
        let mut valid = Vec::new();
        encode_gadget(&s, format, precision, &mut valid).unwrap();
        fuzz(&format!("gadget {format:?}"), &valid, parse_gadget);
    }
}

/// A small Gmsh 4.1 ASCII file: a 2 × 2 × 1 hexahedral cantilever and one boundary quad.
fn msh() -> String {
    use std::fmt::Write;
    let m = warpkit::fem::mesh::cantilever([2.0, 2.0, 1.0], [2, 2, 1]).unwrap();
    let n = m.nodes.len();
    let mut s = format!("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 {n} 1 {n}\n3 1 0 {n}\n");
    for i in 1..=n {
        writeln!(s, "{i}").unwrap();
    }
    for p in &m.nodes {
        writeln!(s, "{} {} {}", p[0], p[1], p[2]).unwrap();
    }
    let ne = m.elements.len();
    writeln!(
        s,
        "$EndNodes\n$Elements\n2 {} 1 {}\n2 1 3 1\n1 1 2 5 4",
        ne + 1,
        ne + 1
    )
    .unwrap();
    writeln!(s, "3 1 5 {ne}").unwrap();
    for (e, c) in m.elements.iter().enumerate() {
        let t: Vec<String> = c.iter().map(|&v| (v + 1).to_string()).collect();
        writeln!(s, "{} {}", e + 2, t.join(" ")).unwrap();
    }
    s.push_str("$EndElements\n");
    s
}

/// [`msh`]'s mesh as Gmsh binary, little-endian (format spec: the 2.2 counts are text, its
/// elements come in blocks of `int type, count, tag count`; 4.1 sections are binary after their
/// marker line), with a physical tag 7 on the hexahedra in 2.2.
fn msh_binary(v41: bool) -> Vec<u8> {
    let m = warpkit::fem::mesh::cantilever([2.0, 2.0, 1.0], [2, 2, 1]).unwrap();
    let (n, ne) = (m.nodes.len(), m.elements.len());
    let mut b = format!("$MeshFormat\n{} 1 8\n", if v41 { "4.1" } else { "2.2" }).into_bytes();
    b.extend(1i32.to_le_bytes());
    b.extend(b"\n$EndMeshFormat\n$Nodes\n");
    let size = |b: &mut Vec<u8>, v: usize| b.extend((v as u64).to_le_bytes());
    let int = |b: &mut Vec<u8>, v: usize| b.extend((v as i32).to_le_bytes());
    if v41 {
        for v in [1, n, 1, n] {
            size(&mut b, v);
        }
        for v in [3, 1, 0] {
            int(&mut b, v);
        }
        size(&mut b, n);
        (1..=n).for_each(|t| size(&mut b, t));
    } else {
        b.extend(format!("{n}\n").bytes());
    }
    for (i, p) in m.nodes.iter().enumerate() {
        if !v41 {
            int(&mut b, i + 1);
        }
        p.iter().for_each(|x| b.extend(x.to_le_bytes()));
    }
    b.extend(b"\n$EndNodes\n$Elements\n");
    if v41 {
        for v in [1, ne, 1, ne] {
            size(&mut b, v);
        }
        for v in [3, 1, 5] {
            int(&mut b, v);
        }
        size(&mut b, ne);
    } else {
        b.extend(format!("{ne}\n").bytes());
        for v in [5, ne, 2] {
            int(&mut b, v);
        }
    }
    for (e, c) in m.elements.iter().enumerate() {
        if v41 {
            size(&mut b, e + 1);
            c.iter().for_each(|&v| size(&mut b, v as usize + 1));
        } else {
            for v in [e + 1, 7, 1] {
                int(&mut b, v);
            }
            c.iter().for_each(|&v| int(&mut b, v as usize + 1));
        }
    }
    b.extend(b"\n$EndElements\n");
    b
}

#[test]
fn gmsh_reader() {
    let dir = scratch("msh");
    let path = dir.join("m.msh");
    let valid = msh();
    fuzz("msh", valid.as_bytes(), |b| {
        std::fs::write(&path, b).unwrap();
        warpkit::fem::mesh::read_msh(&path)
    });
    std::fs::remove_dir_all(&dir).unwrap();
    for v41 in [false, true] {
        let valid = msh_binary(v41);
        let what = if v41 {
            "msh 4.1 binary"
        } else {
            "msh 2.2 binary"
        };
        fuzz(what, &valid, |b| warpkit::fem::mesh::parse_gmsh(b, "m.msh"));
    }
}
