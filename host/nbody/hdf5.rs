//! HDF5 snapshots in the Gadget-4/SWIFT layout (feature `hdf5`), as pynbody, yt and swiftsimio
//! read them: a `/Header` group whose attributes are Gadget's header fields, then one group
//! `/PartTypeN` for each particle type present, holding `Coordinates` (N×3), `Velocities` (N×3),
//! `ParticleIDs` (N, uint64), `Masses` (N) and, when known, `Potential` (N). Gas (`PartType0`)
//! adds SWIFT's `InternalEnergies`, `Densities`, `SmoothingLengths` (the kernel's support
//! radius) and `Pressures`, and the state an exact restart needs: `Accelerations` (N×3),
//! `InternalEnergyRates`, `SignalVelocities`, `ViscosityParameters`; a multi-material run's
//! `MaterialIDs` (N, uint32), as SWIFT's planetary runs name them.
//!
//! Header attributes written: `NumPart_ThisFile` (6 × uint64, as Gadget-4), `NumPart_Total` and
//! `NumPart_Total_HighWord` (6 × uint32 each: the low and high words of the total, the Gadget-2/3
//! and SWIFT convention that readers add up as `Total + 2^32 HighWord`), `MassTable` (6 × float64;
//! non-zero for a type whose particles all have one mass — `Masses` is written for every type all
//! the same), the float64 scalars `BoxSize`, `Omega0`, `OmegaLambda`, `HubbleParam`, and the int32
//! scalars `NumFilesPerSnapshot` (1), `Flag_Sfr`, `Flag_Cooling`, `Flag_Feedback`,
//! `Flag_StellarAge`, `Flag_Metals`, `Flag_DoublePrecision`. Floats are float32 or float64
//! ([`Precision`]).
//!
//! What swiftsimio needs besides (checked against swiftsimio 12.4 and yt 4.4 by
//! `scripts/check-hdf5-readers.py`), written so that pynbody and yt still read the file as Gadget
//! HDF5:
//!
//! - `Time` and `Redshift` are one-element float64 arrays, as SWIFT writes them (swiftsimio takes
//!   element 0 and fails on a scalar; yt reduces one-element arrays to scalars, and warpkit's
//!   reader takes either). `ExpansionFactor` (float64 scalar, the OWLS/EAGLE header field, `1 /
//!   (1 + z)`) is there for pynbody, which takes the scale factor from it before `Redshift` and
//!   would otherwise get a one-element array. `Scale-factor` (`[1 / (1 + z)]`) and `Dimension`
//!   (`[3]`, int32) are SWIFT's. `BoxSize` stays Gadget's scalar (0 for warpkit's isolated, not
//!   periodic, runs): SWIFT's 3-vector breaks yt's and pynbody's Gadget readers.
//! - `/Units` and `/InternalCodeUnits`: SWIFT's five attributes `Unit mass in cgs (U_M)`, `Unit
//!   length in cgs (U_L)`, `Unit time in cgs (U_t)`, `Unit current in cgs (U_I)`, `Unit
//!   temperature in cgs (U_T)` (one-element float64 arrays), and nothing else (swiftsimio refuses
//!   any other name there). warpkit runs in N-body units, G = 1: these give one physical scaling
//!   of them ([`UNIT_LENGTH_CM`] = 1 kpc, [`UNIT_MASS_G`] = 10^10 M☉, and the time unit
//!   [`unit_time_s`] that G = 1 then implies, ≈ 4.71 Myr; velocity unit ≈ 207.4 km/s). Any other
//!   length and mass with the time √(L³/GM) describe the same run equally well; the data are the
//!   code-unit values either way. `/Code` says so in words (`Unit system`), with `Code` =
//!   "warpkit", `Version` and `Gravitational constant in internal units` = `[1.0]`.
//! - `/Cosmology`: `Cosmological run` = `[0]` (warpkit never integrates in comoving coordinates,
//!   whatever the header's Ω and h say).
//! - On every particle dataset SWIFT's unit attributes: `U_M exponent`, `U_L exponent`, `U_t
//!   exponent`, `U_I exponent`, `U_T exponent`, `h-scale exponent` (0), `a-scale exponent`
//!   (SWIFT's: coordinates 1, potential −1, else 0), `Conversion factor to CGS (not including
//!   cosmological corrections)` and `Conversion factor to physical CGS (including cosmological
//!   corrections)` (equal: values are stored physical), `Expression for physical CGS units`,
//!   `Description`, `Value stored as physical` = `[1]`, `Property can be converted to comoving` =
//!   `[1]`.
//!
//! No `/Policy` group: pynbody takes a file with one for a SWIFT snapshot (its SWIFT reader then
//! wants SWIFT's run-time parameters); yt's SWIFT frontend wants `Code` = "SWIFT" in `/Header`,
//! which warpkit does not claim, so yt reads the file with its Gadget HDF5 frontend (units from
//! `unit_base`, a bounding box for `BoxSize` = 0: see the script).
//!
//! The reader takes any integer or float width (HDF5 converts on read), scalars or one-element
//! arrays, uses `Masses` when present and `MassTable` otherwise, and checks every shape and value:
//! a file without `/Header`, a dataset of the wrong shape or a missing one is an error naming it,
//! never a panic. It ignores the SWIFT unit metadata (values are read as they are stored). All
//! HDF5 encoding is the `hdf5-metno` crate's (the HDF5 C library): nothing here writes the format.

use super::snapshot::{
    GasFields, Header, Precision, Snapshot, SnapshotError, check_particles, check_writable_with,
};
use super::{Particles, TYPES};
use hdf5::types::VarLenUnicode;
use hdf5::{Group, H5Type, Location};
use std::fs;
use std::path::{Path, PathBuf};

fn err(path: &Path, reason: impl Into<String>) -> SnapshotError {
    SnapshotError::Hdf5 {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// The length that `/Units` states for warpkit's unit length: 1 kpc in cm (IAU 2012: 1 au =
/// 1.495978707·10^13 cm, 1 pc = 648000/π au).
pub const UNIT_LENGTH_CM: f64 = 3.085_677_581_491_367e21;
/// The mass that `/Units` states for warpkit's unit mass: 10^10 M☉ in g (IAU 2015 nominal
/// GM☉ = 1.3271244·10^26 cm³ s⁻², over [`G_CGS`]).
pub const UNIT_MASS_G: f64 = 1.988_409_870_698_051e43;
/// Newton's constant in cm³ g⁻¹ s⁻² (CODATA 2018), for the time unit that G = 1 implies.
pub const G_CGS: f64 = 6.674_30e-8;

/// The time unit that `/Units` states: √(L³ / (G M)) for [`UNIT_LENGTH_CM`] and [`UNIT_MASS_G`],
/// so that G = 1 in the file's units as in the run's (≈ 1.4879·10^14 s ≈ 4.715 Myr; the velocity
/// unit L / T ≈ 207.39 km/s).
pub fn unit_time_s() -> f64 {
    (UNIT_LENGTH_CM.powi(3) / (G_CGS * UNIT_MASS_G)).sqrt()
}

/// `/Code`'s `Unit system`: the scaling in words.
pub const UNIT_SYSTEM: &str = "N-body units with G = 1: positions, velocities, masses, times and \
potentials are stored as warpkit computed them. /Units (SWIFT's names) states one physical \
scaling of them: length 1 kpc, mass 1e10 Msun, time sqrt(kpc^3 / (G 1e10 Msun)) = 4.715 Myr \
(velocity 207.39 km/s), so that G = 1 holds in it. Any length L and mass M with time \
sqrt(L^3 / (G M)) describe the run equally well.";

/// The unit system a file states (`/Units`, `/InternalCodeUnits`, `/Code`, and each dataset's
/// conversion factors): values are stored as the run computed them, in these units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Units {
    pub mass_g: f64,
    pub length_cm: f64,
    pub time_s: f64,
    /// Newton's constant in these units.
    pub g: f64,
    /// `/Code`'s `Unit system`, in words.
    pub system: &'static str,
}

impl Units {
    /// warpkit's N-body units (G = 1) with the physical scaling of [`UNIT_LENGTH_CM`],
    /// [`UNIT_MASS_G`] and [`unit_time_s`].
    pub fn nbody() -> Units {
        Units {
            mass_g: UNIT_MASS_G,
            length_cm: UNIT_LENGTH_CM,
            time_s: unit_time_s(),
            g: 1.0,
            system: UNIT_SYSTEM,
        }
    }

    /// SI (kg, m, s), as the planetary runs compute (`G` in m³ kg⁻¹ s⁻²).
    pub fn si(g: f64) -> Units {
        Units {
            mass_g: 1e3,
            length_cm: 1e2,
            time_s: 1.0,
            g,
            system: "SI: kilograms, metres, seconds; energies per mass in J/kg, densities in \
                     kg/m³, pressures in Pa. /Units states them in cgs.",
        }
    }
}

/// SWIFT's unit attributes of one dataset: the exponents of (M, L, t) and the a-scale exponent.
struct FieldUnits {
    m: i32,
    l: i32,
    t: i32,
    a: i32,
    description: &'static str,
}

impl FieldUnits {
    fn of(name: &str) -> FieldUnits {
        let (m, l, t, a, description) = match name {
            "Coordinates" => (0, 1, 0, 1, "Positions of the particles (not periodic)."),
            "Velocities" => (0, 1, -1, 0, "Velocities of the particles."),
            "Masses" => (1, 0, 0, 0, "Masses of the particles."),
            "ParticleIDs" => (0, 0, 0, 0, "Unique identifiers of the particles."),
            "Potential" => (
                0,
                2,
                -2,
                -1,
                "Gravitational potentials of the particles (softened).",
            ),
            "InternalEnergies" => (0, 2, -2, -2, "Specific internal energies of the gas."),
            "Densities" => (1, -3, 0, -3, "SPH densities of the gas."),
            "SmoothingLengths" => (
                0,
                1,
                0,
                1,
                "Smoothing lengths of the gas: the kernel's support radius.",
            ),
            "Pressures" => (1, -1, -2, -5, "Pressures of the gas."),
            "Accelerations" => (0, 1, -2, 0, "Accelerations of the gas particles."),
            "InternalEnergyRates" => (0, 2, -3, 0, "Time derivatives of the internal energies."),
            "SignalVelocities" => (
                0,
                1,
                -1,
                0,
                "Largest signal velocities over the neighbours.",
            ),
            "ViscosityParameters" => (0, 0, 0, 0, "Artificial viscosity coefficients α."),
            "VelocityDivergences" => (
                0,
                0,
                -1,
                0,
                "Velocity divergences ∇·v of the last density pass.",
            ),
            "BalsaraSwitches" => (0, 0, 0, 0, "Balsara factors of the last density pass."),
            "MaterialIDs" => (
                0,
                0,
                0,
                0,
                "Material ids of the gas: the run's equations of state by index.",
            ),
            _ => unreachable!("no units for {name}"),
        };
        FieldUnits {
            m,
            l,
            t,
            a,
            description,
        }
    }

    fn cgs(&self, u: &Units) -> f64 {
        u.mass_g.powi(self.m) * u.length_cm.powi(self.l) * u.time_s.powi(self.t)
    }

    /// SWIFT's `Expression for physical CGS units`, e.g. `1.988410e43 [ g ]`.
    fn expression(&self, u: &Units) -> String {
        let mut s = format!("{:.6e} [", self.cgs(u));
        for (name, e) in [("g", self.m), ("cm", self.l), ("s", self.t)] {
            match e {
                0 => {}
                1 => s.push_str(&format!(" {name}")),
                e => s.push_str(&format!(" {name}^{e}")),
            }
        }
        if self.m == 0 && self.l == 0 && self.t == 0 {
            s.push_str(" -");
        }
        s + " ]"
    }
}

/// A one-element array attribute, as SWIFT writes its scalars.
fn one<T: H5Type>(at: &Location, name: &str, x: T) -> hdf5::Result<()> {
    at.new_attr::<T>().shape(1).create(name)?.write_raw(&[x])
}

/// A variable-length UTF-8 string attribute.
fn text(at: &Location, name: &str, s: &str) -> hdf5::Result<()> {
    let v: VarLenUnicode = s
        .parse()
        .map_err(|e| hdf5::Error::from(format!("{name}: {e}")))?;
    at.new_attr::<VarLenUnicode>()
        .create(name)?
        .write_scalar(&v)
}

/// SWIFT's unit attributes on one particle dataset.
fn field_units(at: &Location, name: &str, units: &Units) -> hdf5::Result<()> {
    let u = FieldUnits::of(name);
    for (attr, e) in [
        ("U_M exponent", u.m),
        ("U_L exponent", u.l),
        ("U_t exponent", u.t),
        ("U_I exponent", 0),
        ("U_T exponent", 0),
        ("h-scale exponent", 0),
        ("a-scale exponent", u.a),
    ] {
        one(at, attr, e as f64)?;
    }
    let cgs = u.cgs(units);
    one(
        at,
        "Conversion factor to CGS (not including cosmological corrections)",
        cgs,
    )?;
    one(
        at,
        "Conversion factor to physical CGS (including cosmological corrections)",
        cgs,
    )?;
    text(
        at,
        "Expression for physical CGS units",
        &u.expression(units),
    )?;
    text(at, "Description", u.description)?;
    one(at, "Value stored as physical", 1i32)?;
    one(at, "Property can be converted to comoving", 1i32)
}

/// Writes `s` to `path` (through a temporary file beside it, renamed when complete, as
/// [`super::snapshot::write_gadget`]). The header's counts, `MassTable` and
/// `NumFilesPerSnapshot` are derived from the particles; its time, redshift, box, cosmology and
/// flags are written as they are.
pub fn write_hdf5(path: &Path, s: &Snapshot, precision: Precision) -> Result<(), SnapshotError> {
    write_hdf5_in(path, s, precision, &Units::nbody())
}

/// [`write_hdf5`] stating the unit system `units`.
pub fn write_hdf5_in(
    path: &Path,
    s: &Snapshot,
    precision: Precision,
    units: &Units,
) -> Result<(), SnapshotError> {
    let p = &s.particles;
    let gadget = |source| SnapshotError::Gadget {
        path: path.to_path_buf(),
        source,
    };
    check_writable_with(p, s.gas.as_ref(), precision).map_err(gadget)?;
    if let Some(pot) = &s.potential {
        if pot.len() != p.len() {
            return Err(err(
                path,
                format!("{} potentials for {} particles", pot.len(), p.len()),
            ));
        }
        if let Some(i) = pot.iter().position(|x| !x.is_finite()) {
            return Err(err(
                path,
                format!("particle {i} has a non-finite potential"),
            ));
        }
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        encode(&tmp, s, precision, units).map_err(|e| err(path, format!("writing: {e}")))?;
        let io = |source| SnapshotError::Io {
            path: path.to_path_buf(),
            source,
        };
        fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(io)?;
        fs::rename(&tmp, path).map_err(io)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn encode(path: &Path, s: &Snapshot, precision: Precision, u: &Units) -> hdf5::Result<()> {
    let p = &s.particles;
    let h = super::snapshot::header_for(s);
    let file = hdf5::File::create(path)?;
    let g = file.create_group("Header")?;
    let array = |name: &str, v: &[_]| -> hdf5::Result<()> {
        g.new_attr::<u32>().shape(TYPES).create(name)?.write_raw(v)
    };
    g.new_attr::<u64>()
        .shape(TYPES)
        .create("NumPart_ThisFile")?
        .write_raw(&h.npart.map(u64::from))?;
    array("NumPart_Total", &h.npart_total)?;
    array("NumPart_Total_HighWord", &h.npart_total_high_word)?;
    g.new_attr::<f64>()
        .shape(TYPES)
        .create("MassTable")?
        .write_raw(&h.massarr)?;
    // SWIFT's one-element arrays (swiftsimio indexes them); ExpansionFactor for pynbody.
    let a = 1.0 / (1.0 + h.redshift);
    for (name, x) in [
        ("Time", h.time),
        ("Redshift", h.redshift),
        ("Scale-factor", a),
    ] {
        one(&g, name, x)?;
    }
    one(&g, "Dimension", 3i32)?;
    for (name, x) in [
        ("ExpansionFactor", a),
        ("BoxSize", h.box_size),
        ("Omega0", h.omega0),
        ("OmegaLambda", h.omega_lambda),
        ("HubbleParam", h.hubble_param),
    ] {
        g.new_attr::<f64>().create(name)?.write_scalar(&x)?;
    }
    for (name, x) in [
        ("NumFilesPerSnapshot", 1),
        ("Flag_Sfr", h.flag_sfr),
        ("Flag_Cooling", h.flag_cooling),
        ("Flag_Feedback", h.flag_feedback),
        ("Flag_StellarAge", h.flag_stellarage),
        ("Flag_Metals", h.flag_metals),
        (
            "Flag_DoublePrecision",
            (precision == Precision::Double) as i32,
        ),
    ] {
        g.new_attr::<i32>().create(name)?.write_scalar(&x)?;
    }
    // SWIFT's unit and run metadata (swiftsimio): see the module's documentation.
    let units = [
        ("Unit mass in cgs (U_M)", u.mass_g),
        ("Unit length in cgs (U_L)", u.length_cm),
        ("Unit time in cgs (U_t)", u.time_s),
        ("Unit current in cgs (U_I)", 1.0),
        ("Unit temperature in cgs (U_T)", 1.0),
    ];
    for group in ["Units", "InternalCodeUnits"] {
        let u = file.create_group(group)?;
        for (name, x) in units {
            one(&u, name, x)?;
        }
    }
    let cosmology = file.create_group("Cosmology")?;
    one(&cosmology, "Cosmological run", 0i32)?;
    let code = file.create_group("Code")?;
    text(&code, "Code", "warpkit")?;
    text(&code, "Version", env!("CARGO_PKG_VERSION"))?;
    text(&code, "Unit system", u.system)?;
    one(&code, "Gravitational constant in internal units", u.g)?;
    let mut start = 0;
    for (t, &n) in p.count_by_type().iter().enumerate() {
        if n == 0 {
            continue;
        }
        let r = start..start + n;
        start += n;
        let g = file.create_group(&format!("PartType{t}"))?;
        let vec3 = |v: &[[f64; 3]]| v.iter().flatten().copied().collect::<Vec<f64>>();
        floats(
            &g,
            "Coordinates",
            (n, 3),
            &vec3(&p.pos[r.clone()]),
            (precision, u),
        )?;
        floats(
            &g,
            "Velocities",
            (n, 3),
            &vec3(&p.vel[r.clone()]),
            (precision, u),
        )?;
        let ids = g.new_dataset::<u64>().shape(n).create("ParticleIDs")?;
        ids.write_raw(&p.id[r.clone()])?;
        field_units(&ids, "ParticleIDs", u)?;
        floats(&g, "Masses", (n, 1), &p.mass[r.clone()], (precision, u))?;
        if let Some(pot) = &s.potential {
            floats(&g, "Potential", (n, 1), &pot[r], (precision, u))?;
        }
        if let (0, Some(gas)) = (t, &s.gas) {
            for (name, v) in gas_scalars(gas) {
                if !v.is_empty() {
                    floats(&g, name, (n, 1), v, (precision, u))?;
                }
            }
            if !gas.acc.is_empty() {
                floats(&g, "Accelerations", (n, 3), &vec3(&gas.acc), (precision, u))?;
            }
            if !gas.mat.is_empty() {
                let d = g.new_dataset::<u32>().shape(n).create("MaterialIDs")?;
                d.write_raw(&gas.mat)?;
                field_units(&d, "MaterialIDs", u)?;
            }
        }
    }
    file.flush()?;
    file.close()
}

/// The gas's scalar fields by dataset name.
fn gas_scalars(g: &GasFields) -> [(&'static str, &Vec<f64>); 9] {
    [
        ("InternalEnergies", &g.u),
        ("Densities", &g.rho),
        ("SmoothingLengths", &g.hsml),
        ("Pressures", &g.pressure),
        ("InternalEnergyRates", &g.du_dt),
        ("SignalVelocities", &g.vsig),
        ("ViscosityParameters", &g.alpha),
        ("VelocityDivergences", &g.div_v),
        ("BalsaraSwitches", &g.balsara),
    ]
}

/// A float dataset of `n` rows (`cols` 1: one dimension, else N×cols), float32 or float64, with
/// SWIFT's unit attributes.
fn floats(
    g: &Group,
    name: &str,
    (n, cols): (usize, usize),
    v: &[f64],
    (precision, u): (Precision, &Units),
) -> hdf5::Result<()> {
    fn put<T: H5Type>(
        g: &Group,
        name: &str,
        (n, cols): (usize, usize),
        v: &[T],
        u: &Units,
    ) -> hdf5::Result<()> {
        let d = if cols == 1 {
            g.new_dataset::<T>().shape(n).create(name)?
        } else {
            g.new_dataset::<T>().shape((n, cols)).create(name)?
        };
        d.write_raw(v)?;
        field_units(&d, name, u)
    }
    match precision {
        Precision::Double => put(g, name, (n, cols), v, u),
        Precision::Single => {
            let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            put(g, name, (n, cols), &v, u)
        }
    }
}

/// Reads a single-file HDF5 snapshot (Gadget-3/4 or SWIFT layout) of any particle types. Gas
/// (type 0) brings its SPH fields when it has `InternalEnergies` (the others are optional).
pub fn read_hdf5(path: &Path) -> Result<Snapshot, SnapshotError> {
    if !path.exists() {
        return Err(SnapshotError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    }
    let file =
        hdf5::File::open(path).map_err(|e| err(path, format!("not a readable HDF5 file: {e}")))?;
    let e = |m: String| err(path, m);
    let hg = file
        .group("Header")
        .map_err(|_| e("no /Header group: not a Gadget/SWIFT HDF5 snapshot".into()))?;
    let attr_array = |name: &str, required: bool| -> Result<Option<Vec<f64>>, SnapshotError> {
        if !hg
            .attr_names()
            .unwrap_or_default()
            .iter()
            .any(|a| a == name)
        {
            return if required {
                Err(e(format!("/Header has no attribute {name}")))
            } else {
                Ok(None)
            };
        }
        let a = hg
            .attr(name)
            .map_err(|x| e(format!("/Header/{name}: {x}")))?;
        if a.size() != TYPES {
            return Err(e(format!(
                "/Header/{name} has {} values, not {TYPES}",
                a.size()
            )));
        }
        let v = a
            .read_raw::<f64>()
            .map_err(|x| e(format!("/Header/{name}: {x}")))?;
        Ok(Some(v))
    };
    let counts = |name: &str, required: bool| -> Result<[u64; TYPES], SnapshotError> {
        let Some(v) = attr_array(name, required)? else {
            return Ok([0; TYPES]);
        };
        let mut out = [0; TYPES];
        for (t, &x) in v.iter().enumerate() {
            if !(x >= 0.0 && x <= u32::MAX as f64 && x.fract() == 0.0) {
                return Err(e(format!("/Header/{name}[{t}] = {x}")));
            }
            out[t] = x as u64;
        }
        Ok(out)
    };
    let scalar = |name: &str| -> Result<f64, SnapshotError> {
        if !hg
            .attr_names()
            .unwrap_or_default()
            .iter()
            .any(|a| a == name)
        {
            return Ok(0.0);
        }
        let a = hg
            .attr(name)
            .map_err(|x| e(format!("/Header/{name}: {x}")))?;
        // Some writers store scalars as one-element arrays.
        match a.read_raw::<f64>() {
            Ok(v) if v.len() == 1 => Ok(v[0]),
            Ok(v) => Err(e(format!("/Header/{name} has {} values, not 1", v.len()))),
            Err(x) => Err(e(format!("/Header/{name}: {x}"))),
        }
    };
    let npart = counts("NumPart_ThisFile", true)?;
    let total = counts("NumPart_Total", false)?;
    let high = counts("NumPart_Total_HighWord", false)?;
    let massarr = attr_array("MassTable", true)?.expect("required");
    if let Some(t) = (0..TYPES).find(|&t| !(massarr[t].is_finite() && massarr[t] >= 0.0)) {
        return Err(e(format!(
            "/Header/MassTable[{t}] = {} (must be finite and ≥ 0)",
            massarr[t]
        )));
    }
    let num_files = scalar("NumFilesPerSnapshot")?;
    if num_files > 1.0 {
        return Err(e(format!(
            "one file of a snapshot in {num_files} files (multi-file snapshots are not read)"
        )));
    }
    let flag = |name: &str| scalar(name).map(|x| x as i32);
    let header = Header {
        npart: npart.map(|x| x as u32),
        massarr: massarr.try_into().expect("6 values"),
        time: scalar("Time")?,
        redshift: scalar("Redshift")?,
        flag_sfr: flag("Flag_Sfr")?,
        flag_feedback: flag("Flag_Feedback")?,
        npart_total: total.map(|x| x as u32),
        flag_cooling: flag("Flag_Cooling")?,
        num_files: num_files as i32,
        box_size: scalar("BoxSize")?,
        omega0: scalar("Omega0")?,
        omega_lambda: scalar("OmegaLambda")?,
        hubble_param: scalar("HubbleParam")?,
        flag_stellarage: flag("Flag_StellarAge")?,
        flag_metals: flag("Flag_Metals")?,
        npart_total_high_word: high.map(|x| x as u32),
        flag_entropy_instead_u: 0,
    };
    // Nothing is allocated from the header's counts: each dataset's shape is checked first.
    let mut particles = Particles::default();
    let mut potential = Some(Vec::new());
    let mut gas = None;
    for (t, &nt) in npart.iter().enumerate() {
        let nt = nt as usize;
        if nt == 0 {
            continue;
        }
        let gname = format!("PartType{t}");
        let g = file.group(&gname).map_err(|_| {
            e(format!(
                "no /{gname} group, but /Header/NumPart_ThisFile[{t}] = {nt}"
            ))
        })?;
        let data =
            |name: &str, cols: usize, required: bool| -> Result<Option<Vec<f64>>, SnapshotError> {
                if !g.link_exists(name) {
                    return if required {
                        Err(e(format!("no dataset /{gname}/{name}")))
                    } else {
                        Ok(None)
                    };
                }
                let d = g
                    .dataset(name)
                    .map_err(|x| e(format!("/{gname}/{name}: {x}")))?;
                let shape = d.shape();
                let ok = if cols == 1 {
                    shape == [nt] || shape == [nt, 1]
                } else {
                    shape == [nt, cols]
                };
                if !ok {
                    let want = if cols == 1 {
                        format!("[{nt}]")
                    } else {
                        format!("[{nt}, {cols}]")
                    };
                    return Err(e(format!(
                        "/{gname}/{name} has shape {shape:?}, expected {want}"
                    )));
                }
                d.read_raw::<f64>()
                    .map(Some)
                    .map_err(|x| e(format!("/{gname}/{name}: {x}")))
            };
        let rows = |v: Vec<f64>| -> Vec<[f64; 3]> {
            v.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect()
        };
        particles
            .pos
            .extend(rows(data("Coordinates", 3, true)?.expect("required")));
        particles
            .vel
            .extend(rows(data("Velocities", 3, true)?.expect("required")));
        let ids = {
            let name = "ParticleIDs";
            let d = g
                .dataset(name)
                .map_err(|_| e(format!("no dataset /{gname}/{name}")))?;
            if d.shape() != [nt] {
                return Err(e(format!(
                    "/{gname}/{name} has shape {:?}, expected [{nt}]",
                    d.shape()
                )));
            }
            d.read_raw::<u64>()
                .map_err(|x| e(format!("/{gname}/{name} (integer IDs expected): {x}")))?
        };
        particles.id.extend(ids);
        match data("Masses", 1, false)? {
            Some(m) => particles.mass.extend(m),
            None if header.massarr[t] > 0.0 => particles
                .mass
                .extend(std::iter::repeat_n(header.massarr[t], nt)),
            None => {
                return Err(e(format!(
                    "no dataset /{gname}/Masses and /Header/MassTable[{t}] = 0"
                )));
            }
        }
        particles.ptype.extend(std::iter::repeat_n(t as u8, nt));
        match (data("Potential", 1, false)?, potential.as_mut()) {
            (Some(phi), Some(all)) => all.extend(phi),
            _ => potential = None,
        }
        if t == 0
            && let Some(u) = data("InternalEnergies", 1, false)?
        {
            let opt = |name: &str| data(name, 1, false).map(Option::unwrap_or_default);
            let fields = GasFields {
                u,
                rho: opt("Densities")?,
                hsml: opt("SmoothingLengths")?,
                pressure: opt("Pressures")?,
                acc: data("Accelerations", 3, false)?
                    .map(rows)
                    .unwrap_or_default(),
                du_dt: opt("InternalEnergyRates")?,
                vsig: opt("SignalVelocities")?,
                alpha: opt("ViscosityParameters")?,
                div_v: opt("VelocityDivergences")?,
                balsara: opt("BalsaraSwitches")?,
                mat: match g.dataset("MaterialIDs") {
                    Ok(d) if d.shape() == [nt] => d
                        .read_raw::<u32>()
                        .map_err(|x| e(format!("/{gname}/MaterialIDs: {x}")))?,
                    Ok(d) => {
                        return Err(e(format!(
                            "/{gname}/MaterialIDs has shape {:?}, expected [{nt}]",
                            d.shape()
                        )));
                    }
                    Err(_) => Vec::new(),
                },
            };
            fields.check(nt).map_err(|source| SnapshotError::Gadget {
                path: path.to_path_buf(),
                source,
            })?;
            gas = Some(fields);
        }
    }
    check_particles(&particles).map_err(|source| SnapshotError::Gadget {
        path: path.to_path_buf(),
        source,
    })?;
    if let Some(i) = potential.iter().flatten().position(|x| !x.is_finite()) {
        return Err(e(format!("particle {i} has a non-finite potential")));
    }
    Ok(Snapshot {
        header,
        particles,
        potential,
        gas,
    })
}
