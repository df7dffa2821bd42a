//! CPU assembly: per colour, rayon over the colour's elements; each computes Ke with the device
//! crate's reference route (`element_stiffness`, Bᵀ D B) and adds it at its precomputed positions.

use super::colour::Colouring;
use super::csr::Pattern;
use super::{ElementMaterials, FemError, Formulation, Material, Mesh};
use crate::device::fem::{ENTRIES, Lame, Real};
use rayon::prelude::*;

/// A raw pointer to the CSR values that rayon's workers share.
///
/// # Safety
/// Writers must touch disjoint entries: within one colour no two elements share a node, hence no
/// CSR row, hence no position (`colour::verify`).
#[derive(Clone, Copy)]
struct Values<T>(*mut T);
// SAFETY: see the struct's contract; T itself is plain data.
unsafe impl<T: Send> Send for Values<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Values<T> {}

impl<T> Values<T> {
    /// Through a method, so closures capture the whole `Values` (Sync), not its raw pointer field.
    fn ptr(self) -> *mut T {
        self.0
    }
}

/// Assembles the global stiffness in `T` (`f64` is the reference; `f32` mirrors the GPU's
/// arithmetic) into CSR values of `pattern`. The colouring must be valid for `mesh`
/// (`colour::verify`); det J ≤ 0 anywhere is reported naming the element.
pub fn cpu<T: Real + Send + Sync>(
    mesh: &Mesh,
    material: &Material,
    colouring: &Colouring,
    pattern: &Pattern,
) -> Result<Vec<T>, FemError> {
    let lame = material.lame::<T>();
    cpu_by(mesh, |_| lame, Formulation::Standard, colouring, pattern)
}

/// [`cpu`] with a material per element (each Ke uses its element's E and ν) and either
/// formulation.
pub fn cpu_materials<T: Real + Send + Sync>(
    mesh: &Mesh,
    materials: &ElementMaterials,
    formulation: Formulation,
    colouring: &Colouring,
    pattern: &Pattern,
) -> Result<Vec<T>, FemError> {
    let lames: Vec<Lame<T>> = materials.table.iter().map(Material::lame).collect();
    cpu_by(
        mesh,
        |e| lames[materials.index[e] as usize],
        formulation,
        colouring,
        pattern,
    )
}

/// [`cpu`] with element `e`'s Lamé parameters `lame(e)`.
fn cpu_by<T: Real + Send + Sync>(
    mesh: &Mesh,
    lame: impl Fn(usize) -> Lame<T> + Sync,
    formulation: Formulation,
    colouring: &Colouring,
    pattern: &Pattern,
) -> Result<Vec<T>, FemError> {
    let mut values = vec![T::ZERO; pattern.nnz()];
    let out = Values(values.as_mut_ptr());
    let nnz = values.len();
    for group in &colouring.groups {
        group.par_iter().try_for_each(|&e| {
            let e = e as usize;
            let x = mesh.element_coords(e).map(|p| p.map(T::from_f64));
            let ke = formulation.element_stiffness(&x, lame(e)).map_err(|j| {
                FemError::InvertedElement {
                    element: mesh.element_id(e),
                    gauss: j.gauss,
                    det: j.det,
                }
            })?;
            let pos = pattern.element_positions(e);
            debug_assert_eq!(pos.len(), ENTRIES);
            for (&p, &v) in pos.iter().zip(ke.iter().flatten()) {
                assert!((p as usize) < nnz);
                // SAFETY: p < nnz (checked above); elements of one colour write disjoint
                // positions (the struct's contract), and colours run one after another.
                unsafe { *out.ptr().add(p as usize) += v };
            }
            Ok::<(), FemError>(())
        })?;
    }
    Ok(values)
}

/// The same matrix assembled one element at a time, without colouring: a check on the colouring
/// and on the parallel scatter.
pub fn serial(mesh: &Mesh, material: &Material, pattern: &Pattern) -> Result<Vec<f64>, FemError> {
    serial_materials(
        mesh,
        &ElementMaterials::uniform(*material, mesh.elements.len()),
        Formulation::Standard,
        pattern,
    )
}

/// [`serial`] with a material per element and either formulation.
pub fn serial_materials(
    mesh: &Mesh,
    materials: &ElementMaterials,
    formulation: Formulation,
    pattern: &Pattern,
) -> Result<Vec<f64>, FemError> {
    let lames: Vec<Lame<f64>> = materials.table.iter().map(Material::lame).collect();
    let mut values = vec![0.0; pattern.nnz()];
    for e in 0..mesh.elements.len() {
        let lame = lames[materials.index[e] as usize];
        let ke = formulation
            .element_stiffness(&mesh.element_coords(e), lame)
            .map_err(|j| FemError::InvertedElement {
                element: mesh.element_id(e),
                gauss: j.gauss,
                det: j.det,
            })?;
        for (&p, &v) in pattern.element_positions(e).iter().zip(ke.iter().flatten()) {
            values[p as usize] += v;
        }
    }
    Ok(values)
}

/// ‖a − b‖_F / ‖b‖_F over CSR values (`b` the f64 reference).
pub fn relative_frobenius<T: Real>(a: &[T], b: &[f64]) -> f64 {
    let (num, den) = a.iter().zip(b).fold((0.0, 0.0), |(n, d), (&x, &y)| {
        let diff = x.to_f64() - y;
        (n + diff * diff, d + y * y)
    });
    (num / den).sqrt()
}

/// A precision whose values can be added atomically on the CPU (a compare-and-swap loop on the
/// bits), for [`atomic`].
pub trait AtomicReal: Real + Send + Sync {
    type Atom: Send + Sync;
    fn atom_zero() -> Self::Atom;
    fn atom_add(a: &Self::Atom, v: Self);
    fn atom_into(a: Self::Atom) -> Self;
}

impl AtomicReal for f32 {
    type Atom = std::sync::atomic::AtomicU32;
    fn atom_zero() -> Self::Atom {
        Self::Atom::new(0)
    }
    fn atom_add(a: &Self::Atom, v: Self) {
        use std::sync::atomic::Ordering::Relaxed;
        // The closure always returns Some, so fetch_update cannot fail.
        let _ = a.fetch_update(Relaxed, Relaxed, |b| {
            Some((f32::from_bits(b) + v).to_bits())
        });
    }
    fn atom_into(a: Self::Atom) -> Self {
        f32::from_bits(a.into_inner())
    }
}

impl AtomicReal for f64 {
    type Atom = std::sync::atomic::AtomicU64;
    fn atom_zero() -> Self::Atom {
        Self::Atom::new(0)
    }
    fn atom_add(a: &Self::Atom, v: Self) {
        use std::sync::atomic::Ordering::Relaxed;
        // The closure always returns Some, so fetch_update cannot fail.
        let _ = a.fetch_update(Relaxed, Relaxed, |b| {
            Some((f64::from_bits(b) + v).to_bits())
        });
    }
    fn atom_into(a: Self::Atom) -> Self {
        f64::from_bits(a.into_inner())
    }
}

/// The CPU counterpart of the GPU's `*-atomic` strategies: every element at once (rayon), no
/// colouring, each entry added with an atomic compare-and-swap. Same matrix as [`cpu`] up to the
/// order of floating-point additions.
pub fn atomic<T: AtomicReal>(
    mesh: &Mesh,
    material: &Material,
    pattern: &Pattern,
) -> Result<Vec<T>, FemError> {
    let lame = material.lame::<T>();
    atomic_by(mesh, |_| lame, Formulation::Standard, pattern)
}

/// [`atomic`] with a material per element and either formulation.
pub fn atomic_materials<T: AtomicReal>(
    mesh: &Mesh,
    materials: &ElementMaterials,
    formulation: Formulation,
    pattern: &Pattern,
) -> Result<Vec<T>, FemError> {
    let lames: Vec<Lame<T>> = materials.table.iter().map(Material::lame).collect();
    atomic_by(
        mesh,
        |e| lames[materials.index[e] as usize],
        formulation,
        pattern,
    )
}

fn atomic_by<T: AtomicReal>(
    mesh: &Mesh,
    lame: impl Fn(usize) -> Lame<T> + Sync,
    formulation: Formulation,
    pattern: &Pattern,
) -> Result<Vec<T>, FemError> {
    let values: Vec<T::Atom> = (0..pattern.nnz()).map(|_| T::atom_zero()).collect();
    (0..mesh.elements.len()).into_par_iter().try_for_each(|e| {
        let x = mesh.element_coords(e).map(|p| p.map(T::from_f64));
        let ke =
            formulation
                .element_stiffness(&x, lame(e))
                .map_err(|j| FemError::InvertedElement {
                    element: mesh.element_id(e),
                    gauss: j.gauss,
                    det: j.det,
                })?;
        for (&p, &v) in pattern.element_positions(e).iter().zip(ke.iter().flatten()) {
            T::atom_add(&values[p as usize], v);
        }
        Ok::<(), FemError>(())
    })?;
    Ok(values.into_iter().map(T::atom_into).collect())
}
