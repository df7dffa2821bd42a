//! `warpkit fem` (built-in cantilever and Gmsh meshes).

use super::*;

/// Arguments of `warpkit fem`.
#[derive(clap::Args)]
pub(crate) struct FemCommand {
    /// Beam length, width and height (x, y, z).
    #[arg(long, num_args = 3, default_values_t = [10.0, 1.0, 1.0], allow_negative_numbers = true)]
    pub(crate) size: Vec<f64>,
    /// Elements along x, y, z.
    #[arg(long, num_args = 3, default_values_t = [80, 4, 8])]
    pub(crate) cells: Vec<usize>,
    /// Young's modulus [default: 210e9]; with --case, the default material's.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) young: Option<f64>,
    /// Poisson's ratio [default: 0.3]; with --case, the default material's.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) poisson: Option<f64>,
    /// Total end load (in −z).
    #[arg(long, default_value_t = 1e6, allow_negative_numbers = true)]
    pub(crate) load: f64,
    /// GPU assembly strategy: thread, warp4, warp8, thread-atomic, warp4-atomic, warp4-jshared,
    /// warp8-jshared, warp4-jatomic, warp8-jatomic, ppni4, ppni8, ppni4-blocks, ppni8-blocks,
    /// ppni4-blocks-atomic, ppni8-blocks-atomic, two-kernel, rows, rows-rounds. Default
    /// rows-rounds (ppni8-blocks with --bbar); the CPU backend assembles on the host and has
    /// no strategies.
    #[arg(long)]
    pub(crate) strategy: Option<String>,
    /// Write the unconstrained stiffness in Matrix Market format.
    #[arg(long)]
    pub(crate) mtx: Option<PathBuf>,
    /// Write the displacement (per node) and the strain, stress and von Mises stress at each
    /// element's centre as VTK (.vtu, binary appended, as ParaView writes it).
    #[arg(long)]
    pub(crate) vtu: Option<PathBuf>,
    /// A Gmsh mesh (.msh 2.2 or 4.1, ASCII or binary; its hexahedra) instead of the
    /// cantilever: its physical groups name the clamped nodes (--fix) and loaded faces
    /// (--traction).
    #[arg(long, conflicts_with_all = ["size", "cells", "load"])]
    pub(crate) mesh: Option<PathBuf>,
    /// A TOML load case (materials per physical volume, fixed sets and components, tractions,
    /// body force; every key: docs/keys.md or `warpkit info --keys fem`). The options below
    /// compose with it: --mesh, --young/--poisson (the default material) and --body-force
    /// replace the file's, --fix and --traction add sets to the file's.
    #[arg(long, conflicts_with_all = ["size", "cells", "load"])]
    pub(crate) case: Option<PathBuf>,
    /// With --mesh or --case: a physical group whose nodes are clamped in x, y and z
    /// (repeatable; with neither --fix nor [[fixed]], the group "fixed").
    #[arg(long)]
    pub(crate) fix: Vec<String>,
    /// With --mesh or --case: a physical group of quadrangles or triangles and the traction
    /// on it (force per area), e.g. `--traction load 0 0 -1e6` (repeatable).
    #[arg(long, num_args = 4, value_names = ["GROUP", "TX", "TY", "TZ"], allow_negative_numbers = true)]
    pub(crate) traction: Vec<String>,
    /// With --mesh or --case: a body force per unit volume (e.g. ρ g), on every element.
    #[arg(long, num_args = 3, value_names = ["BX", "BY", "BZ"], allow_negative_numbers = true)]
    pub(crate) body_force: Option<Vec<f64>>,
    /// B-bar elements (Hughes 1980: the dilatation averaged per element), for
    /// near-incompressible materials (ν > 0.45 locks the standard hex8). On the GPU the ppni
    /// strategies have B-bar kernels (default ppni8-blocks); case file: formulation = "bbar".
    #[arg(long)]
    pub(crate) bbar: bool,
}

/// Runs the command: the cantilever, or a mesh or case file.
pub(crate) fn run(choice: BackendChoice, a: FemCommand) -> Result<()> {
    let FemCommand {
        size,
        cells,
        young,
        poisson,
        load,
        strategy,
        mtx,
        vtu,
        mesh,
        case,
        fix,
        traction,
        body_force,
        bbar,
    } = a;
    if mesh.is_some() || case.is_some() {
        fem_mesh(
            choice,
            MeshArgs {
                path: mesh,
                case,
                fix,
                traction,
                body_force: body_force.map(|b| [b[0], b[1], b[2]]),
                young,
                poisson,
                strategy,
                mtx,
                vtu,
                bbar,
            },
        )
    } else if !fix.is_empty() || !traction.is_empty() || body_force.is_some() {
        anyhow::bail!("--fix, --traction and --body-force need --mesh or --case")
    } else {
        let default = warpkit::fem::case::DEFAULT_MATERIAL;
        fem(
            choice,
            FemArgs {
                size: [size[0], size[1], size[2]],
                cells: [cells[0], cells[1], cells[2]],
                material: warpkit::fem::Material {
                    young: young.unwrap_or(default.young),
                    poisson: poisson.unwrap_or(default.poisson),
                },
                load,
                strategy,
                mtx,
                vtu,
                formulation: formulation(bbar),
            },
        )
    }
}

struct FemArgs {
    pub(crate) size: [f64; 3],
    pub(crate) cells: [usize; 3],
    pub(crate) material: warpkit::fem::Material,
    pub(crate) load: f64,
    pub(crate) strategy: Option<String>,
    pub(crate) mtx: Option<PathBuf>,
    pub(crate) vtu: Option<PathBuf>,
    pub(crate) formulation: warpkit::fem::Formulation,
}

pub(crate) fn formulation(bbar: bool) -> warpkit::fem::Formulation {
    if bbar {
        warpkit::fem::Formulation::Bbar
    } else {
        warpkit::fem::Formulation::Standard
    }
}

/// The GPU strategy named by --strategy, by default rows-rounds (the fastest measured: 8.6 ms in
/// float64 at 128³ on the H200 against 12.0 for ppni8-blocks and 21.8 for warp4; ppni8-blocks for
/// B-bar, which the node-row kernels do not have); a B-bar run on a strategy without a B-bar
/// kernel is refused here.
fn fem_strategy(
    name: Option<&str>,
    formulation: warpkit::fem::Formulation,
) -> Result<warpkit::fem::gpu::Strategy> {
    use warpkit::fem::{FemError, Formulation, gpu::Strategy};
    let name = name.unwrap_or(match formulation {
        Formulation::Standard => "rows-rounds",
        Formulation::Bbar => "ppni8-blocks",
    });
    let strategy = Strategy::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
        anyhow::anyhow!("unknown --strategy {name:?} ({})", names.join(", "))
    })?;
    if formulation == Formulation::Bbar && !strategy.has_bbar() {
        return Err(FemError::NoBbarKernel(strategy.name()).into());
    }
    Ok(strategy)
}

fn fem(choice: BackendChoice, a: FemArgs) -> Result<()> {
    use warpkit::fem::{colour, csr, export, mesh, solve, validate};
    let strategy = fem_strategy(a.strategy.as_deref(), a.formulation)?;
    let name = strategy.name();
    warpkit::fem::validate_load(a.load)?;
    for path in [&a.mtx, &a.vtu].into_iter().flatten() {
        warpkit::files::check_output(path)?;
    }
    let backend = select(choice)?;
    if a.strategy.is_some() && !backend.is_gpu() {
        // Said, not silently ignored.
        eprintln!(
            "warning: --strategy {name} selects a GPU kernel; the CPU backend assembles on the host (coloured, rayon)"
        );
    }
    // Sizes and memory before the mesh is built (1000³ aborted in the allocator).
    let (elements, nodes) = mesh::cantilever_counts(a.cells)?;
    warpkit::fem::check_memory(elements, nodes, backend.is_gpu())?;
    let m = mesh::cantilever(a.size, a.cells)?;
    validate(&m, &a.material)?;
    if let Some(w) = a.formulation.locking_warning(&[a.material]) {
        eprintln!("{w}");
    }
    let c = colour::greedy(&m);
    colour::verify(&m, &c)?;
    let p = csr::Pattern::new(&m)?;
    println!(
        "cantilever {:?} m, {:?} elements: {} nodes, {} DOF, {} nonzeros, {} colours",
        a.size,
        a.cells,
        m.nodes.len(),
        m.dofs(),
        p.nnz(),
        c.colours()
    );
    // f64 on the GPU too: the solve needs the reference precision.
    let assembler =
        warpkit::fem::Assembler::<f64>::new(&backend, &m, &c, &p).with_formulation(a.formulation);
    let method = warpkit::fem::Method::or_host(&backend, strategy);
    let (ms, k) = assembler.time(method, &a.material, 1)?;
    drop(assembler);
    match backend.gpu() {
        Some(gpu) => println!(
            "assembly: GPU {} ({strategy:?}, f64, {}), {:.3} ms",
            gpu.info().name,
            a.formulation.name(),
            ms[0]
        ),
        None => println!(
            "assembly: CPU ({} threads, f64, {}), {:.3} ms",
            rayon::current_num_threads(),
            a.formulation.name(),
            ms[0]
        ),
    }
    if let Some(path) = &a.mtx {
        export::matrix_market(path, &p, &k)?;
        println!("wrote {}", path.display());
    }
    let t = std::time::Instant::now();
    let solver = warpkit::fem::pcg_solver(&backend);
    let r = solve::cantilever_tip_with(&m, &p, k, &a.material, a.size, a.load, 1e-9, solver)?;
    let on = backend.name().to_uppercase();
    println!(
        "solve: Jacobi-PCG on the {on}, {} iterations (relative residual {:.2e}), {:.3} s",
        r.cg.iterations,
        r.cg.relative_residual,
        t.elapsed().as_secs_f64()
    );
    println!(
        "tip deflection {:.6e} m, Timoshenko {:.6e} m, difference {:+.3}%",
        r.tip_deflection,
        r.theory,
        100.0 * (r.tip_deflection - r.theory) / r.theory
    );
    if let Some(path) = &a.vtu {
        let materials = warpkit::fem::ElementMaterials::uniform(a.material, m.elements.len());
        let stresses = warpkit::fem::stress::element_centre_materials(
            &m,
            &materials,
            a.formulation,
            &r.displacement,
        )?;
        export::vtu(path, &m, &r.displacement, Some(&stresses))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

struct MeshArgs {
    pub(crate) path: Option<PathBuf>,
    pub(crate) case: Option<PathBuf>,
    pub(crate) fix: Vec<String>,
    pub(crate) traction: Vec<String>,
    pub(crate) body_force: Option<[f64; 3]>,
    pub(crate) young: Option<f64>,
    pub(crate) poisson: Option<f64>,
    pub(crate) strategy: Option<String>,
    pub(crate) mtx: Option<PathBuf>,
    pub(crate) vtu: Option<PathBuf>,
    pub(crate) bbar: bool,
}

/// The case file (or an empty case) with the command line's options composed into it: --mesh,
/// --young/--poisson (the default material) and --body-force replace, --fix and --traction add;
/// with no fixed set at all, the group "fixed". Every number is checked, naming its key.
fn compose_case(a: &MeshArgs) -> Result<warpkit::fem::case::CaseFile> {
    use warpkit::fem::case::{self, CaseFile, Component, Components, FixedSpec, TractionSpec};
    let mut c = match &a.case {
        Some(path) => CaseFile::read(path)?,
        None => CaseFile::default(),
    };
    if let Some(path) = &a.path {
        c.mesh = Some(path.clone());
    }
    if a.young.is_some() || a.poisson.is_some() {
        let base = c.default_material.unwrap_or(case::MaterialSpec {
            young: case::DEFAULT_MATERIAL.young,
            poisson: case::DEFAULT_MATERIAL.poisson,
        });
        let m = warpkit::fem::Material {
            young: a.young.unwrap_or(base.young),
            poisson: a.poisson.unwrap_or(base.poisson),
        };
        m.validate()
            .map_err(|e| anyhow::anyhow!("--young/--poisson: {e}"))?;
        c.default_material = Some(case::MaterialSpec {
            young: m.young,
            poisson: m.poisson,
        });
    }
    for group in &a.fix {
        c.fixed.push(FixedSpec {
            group: group.clone(),
            components: Components::One(Component::All),
            origin: Some(format!("--fix {group}")),
        });
    }
    if c.fixed.is_empty() {
        c.fixed.push(FixedSpec {
            group: "fixed".into(),
            components: Components::One(Component::All),
            origin: Some("--fix (default \"fixed\")".into()),
        });
    }
    for chunk in a.traction.chunks(4) {
        let [group, t @ ..] = chunk else {
            unreachable!("clap takes 4 values per --traction")
        };
        let t: Vec<f64> = t
            .iter()
            .map(|v| v.parse::<f64>().ok().filter(|v| v.is_finite()))
            .collect::<Option<_>>()
            .ok_or_else(|| anyhow::anyhow!("--traction {group}: {t:?} are not 3 finite numbers"))?;
        c.tractions.push(TractionSpec {
            group: group.clone(),
            vector: [t[0], t[1], t[2]],
            origin: Some(format!("--traction {group}")),
        });
    }
    if let Some(b) = a.body_force {
        case::check_vector("--body-force", b)?;
        c.body_force = Some(b);
    }
    if a.bbar {
        c.formulation = Some(warpkit::fem::Formulation::Bbar);
    }
    c.check_numbers()?;
    Ok(c)
}

/// `fem --mesh` / `fem --case`: the user's mesh and load case (materials per physical volume,
/// fixed sets, tractions, body force), all checked before the assembly.
fn fem_mesh(choice: BackendChoice, a: MeshArgs) -> Result<()> {
    use warpkit::fem::case::{CaseError, Problem};
    use warpkit::fem::{colour, csr, export, mesh, solve, stress, validate};
    let case = compose_case(&a)?;
    let formulation = case.formulation.unwrap_or_default();
    let strategy = fem_strategy(a.strategy.as_deref(), formulation)?;
    let mesh_flag = if a.path.is_some() {
        "--mesh"
    } else {
        "the case file's mesh"
    };
    let inputs = [
        (mesh_flag, case.mesh.as_deref()),
        ("--case", a.case.as_deref()),
    ];
    for (flag, path) in [("--mtx", &a.mtx), ("--vtu", &a.vtu)] {
        if let Some(path) = path {
            warpkit::files::check_output(path)?;
            warpkit::files::check_not_input(flag, path, &inputs)?;
        }
    }
    let path = case.mesh.clone().ok_or(CaseError::NoMesh)?;
    let g = mesh::read_gmsh(&path)?;
    let problem = Problem::resolve(&case, &g).map_err(|e| match e {
        // Group errors name the mesh they were looked up in.
        e @ (CaseError::UnknownGroup { .. } | CaseError::WrongKind { .. }) => {
            anyhow::anyhow!("{}: {e}", path.display())
        }
        e => e.into(),
    })?;
    let backend = select(choice)?;
    let m = &g.mesh;
    warpkit::fem::check_memory(m.elements.len(), m.nodes.len(), backend.is_gpu())?;
    // Element errors name the physical volume too, to find the element in Gmsh.
    let named = |e| g.name_group(e);
    validate(m, &problem.materials.table[0]).map_err(named)?;
    let c = colour::greedy(m);
    colour::verify(m, &c).map_err(named)?;
    let p = csr::Pattern::new(m)?;
    let fixed = problem.fixed_dofs(m);
    let clamped = fixed.chunks(3).filter(|d| d.contains(&true)).count();
    let faces: usize = problem
        .tractions
        .iter()
        .map(|t| t.faces.len() + t.triangles.len())
        .sum();
    println!(
        "{}: {} hexahedra, {} nodes, {} DOF, {} nonzeros; {clamped} clamped nodes, {faces} loaded faces",
        path.display(),
        m.elements.len(),
        m.nodes.len(),
        m.dofs(),
        p.nnz(),
    );
    let materials = &problem.materials;
    if let Some(w) = formulation.locking_warning(&materials.table) {
        eprintln!("{w}");
    }
    if materials.single().is_none() {
        println!(
            "materials: {} per physical volume, the default on the rest",
            materials.table.len() - 1
        );
    }
    let assembler =
        warpkit::fem::Assembler::<f64>::new(&backend, m, &c, &p).with_formulation(formulation);
    let method = warpkit::fem::Method::or_host(&backend, strategy);
    let k = assembler
        .assemble_materials(method, materials)
        .map_err(named)?;
    drop(assembler);
    if let Some(path) = &a.mtx {
        export::matrix_market(path, &p, &k)?;
        println!("wrote {}", path.display());
    }
    let solver = warpkit::fem::pcg_solver(&backend);
    let r = solve::solve_dofs(&p, k, &fixed, problem.load(m), 1e-9, solver)?;
    let u = &r.displacement;
    let umax = u
        .chunks(3)
        .map(|d| (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt())
        .fold(0.0, f64::max);
    println!(
        "solve: Jacobi-PCG, {} iterations (relative residual {:.2e}); largest displacement {umax:.6e}",
        r.cg.iterations, r.cg.relative_residual
    );
    let v = |x: [f64; 3]| format!("({:.6e}, {:.6e}, {:.6e})", x[0], x[1], x[2]);
    let sets: Vec<&str> = problem.fixed.iter().map(|f| f.group.as_str()).collect();
    println!(
        "applied force {}, reaction at {} {}",
        v(r.applied),
        sets.join("+"),
        v(r.reaction)
    );
    if let Some(path) = &a.vtu {
        let s = stress::element_centre_materials(m, materials, formulation, u).map_err(named)?;
        export::vtu(path, m, u, Some(&s))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
