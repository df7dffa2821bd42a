//! The N-body loop on the GPU against the float64 CPU reference: forces and potential of the first
//! state, a short run's energy and Lagrangian radii, no particle lost or duplicated by the
//! tree-order gathers (which also give the closing kick), and a blow-up stopped with the particle
//! named.

mod common;

use warpkit::nbody::Particles;
use warpkit::nbody::cpu::{Diagnostics, Simulation, direct_sum};
use warpkit::nbody::gpu::{ForceOptions, GpuSim, NbodyGpuError};
use warpkit::nbody::ic::{Encounter, Plummer};

fn plummer(n: usize, seed: u64) -> Particles {
    Plummer::henon(n, seed).generate()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Relative errors of GPU accelerations and potentials against float64 direct summation, matched
/// by particle id (the GPU reorders particles).
fn errors(
    p: &Particles,
    gpu_state: &Particles,
    gpu_acc: &[[f64; 3]],
    gpu_pot: &[f64],
    eps: f64,
) -> (f64, f64) {
    let n = p.len();
    let (mut acc, mut pot) = (vec![[0.0; 3]; n], vec![0.0; n]);
    direct_sum(&p.pos, &p.mass, eps, &mut acc, &mut pot);
    let index: std::collections::HashMap<u64, usize> =
        p.id.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let mut ea = Vec::new();
    let mut ep = Vec::new();
    for (j, id) in gpu_state.id.iter().enumerate() {
        let i = index[id];
        let a = acc[i];
        let d = [
            gpu_acc[j][0] - a[0],
            gpu_acc[j][1] - a[1],
            gpu_acc[j][2] - a[2],
        ];
        let norm = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        ea.push(norm(d) / norm(a));
        ep.push(((gpu_pot[j] - pot[i]) / pot[i]).abs());
    }
    (median(ea), median(ep))
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn first_forces_and_potential_match_the_float64_direct_sum() {
    let gpu = common::gpu();
    let p = plummer(20000, 7);
    let eps = 0.05;
    let mut f = ForceOptions::default();
    f.params.eps = eps as f32;
    f.params.theta = 0.4;
    let mut sim = GpuSim::new(&gpu, &p, f).unwrap();
    let (state, pot) = sim.state().unwrap();
    let acc: Vec<[f64; 3]> = sim
        .accelerations()
        .unwrap()
        .iter()
        .map(|a| [a.x as f64, a.y as f64, a.z as f64])
        .collect();
    let (ea, ep) = errors(&p, &state, &acc, &pot, eps);
    println!("median relative error: acceleration {ea:.3e}, potential {ep:.3e}");
    // Quadrupole forces at θ = 0.4 and monopole potentials: both well under 1e-3 at the median.
    assert!(ea < 1e-3, "acceleration median error {ea}");
    assert!(ep < 1e-3, "potential median error {ep}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_short_run_keeps_energy_and_matches_the_cpu_reference() {
    let gpu = common::gpu();
    let p = plummer(4096, 11);
    let (eps, dt, steps) = (0.05, 0.01, 200);
    let mut f = ForceOptions::default();
    f.params.eps = eps as f32;
    f.params.theta = 0.3;
    let mut sim = GpuSim::new(&gpu, &p, f).unwrap();
    let (s0, pot0) = sim.state().unwrap();
    let d0 = Diagnostics::compute(&s0, &pot0, 0.0);
    for s in 1..=steps {
        sim.step(dt, s == steps).unwrap();
    }
    let (s1, pot1) = sim.state().unwrap();
    let d1 = Diagnostics::compute(&s1, &pot1, sim.time);
    let mut cpu = Simulation::new(p.clone(), eps, dt).unwrap();
    cpu.run(steps).unwrap();
    let c1 = cpu.diagnostics();
    let drift = ((d1.total - d0.total) / d0.total).abs();
    println!(
        "GPU |ΔE/E| = {drift:.3e}; half-mass radius GPU {:.5} CPU {:.5}; E GPU {:.6} CPU {:.6}",
        d1.lagrangian_radii[2], c1.lagrangian_radii[2], d1.total, c1.total
    );
    assert!(drift < 2e-3, "energy drift {drift}");
    // Two chaotic systems part ways, but their structure does not in two time units.
    for (g, c) in d1.lagrangian_radii.iter().zip(&c1.lagrangian_radii) {
        assert!((g - c).abs() / c < 0.02, "Lagrangian radii {g} vs {c}");
    }
    // Momentum stays near zero (the tree is not symmetric: a small drift, not rounding).
    let pnorm = d1.momentum.iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!(pnorm < 1e-3, "momentum {pnorm}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gathers_lose_and_duplicate_no_particle() {
    let gpu = common::gpu();
    let p = Encounter::default().generate();
    let mut sim = GpuSim::new(&gpu, &p, ForceOptions::default()).unwrap();
    for _ in 0..30 {
        sim.step(0.02, false).unwrap();
    }
    let (s, _) = sim.state().unwrap();
    let mut ids = s.id.clone();
    ids.sort_unstable();
    let mut want = p.id.clone();
    want.sort_unstable();
    assert_eq!(ids, want);
    // Types follow their ids.
    let ty: std::collections::HashMap<u64, u8> =
        p.id.iter().copied().zip(p.ptype.iter().copied()).collect();
    assert!(s.id.iter().zip(&s.ptype).all(|(id, t)| ty[id] == *t));
    // And masses theirs.
    let m: std::collections::HashMap<u64, f64> =
        p.id.iter().copied().zip(p.mass.iter().copied()).collect();
    assert!(
        s.id.iter()
            .zip(&s.mass)
            .all(|(id, x)| (m[id] as f32) as f64 == *x)
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_blow_up_names_the_step_and_particle() {
    let gpu = common::gpu();
    let mut p = plummer(1000, 3);
    p.vel[123] = [3e38, 0.0, 0.0];
    let id = p.id[123];
    let mut sim = GpuSim::new(&gpu, &p, ForceOptions::default()).unwrap();
    let mut err = None;
    for _ in 0..5 {
        // The first drift carries it past f32::MAX.
        if let Err(e) = sim.step(10.0, false) {
            err = Some(e);
            break;
        }
    }
    match err {
        Some(NbodyGpuError::BlowUp { step, id: got, .. }) => {
            assert_eq!(got, id);
            assert_eq!(step, 1);
        }
        other => panic!("expected a blow-up, got {other:?}"),
    }
}

/// `nbody_permute` gathers every array by the order and, given the blow-up flag, kicks the
/// gathered velocities by the host formula (`kick`, bit for bit; a NaN is any NaN: the device's
/// has another payload) and flags a non-finite particle by its new index; without the flag the
/// velocities travel unchanged.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gather_kicks_and_flags_by_the_new_index() {
    use warpkit::device::bh::{Accel, Body};
    use warpkit::device::nbody::{NBODY_BLOCK, kernels as k, kick};
    use warpkit::device::rng::uniform_f32;
    use warpkit::runtime::grid_for;
    let gpu = common::gpu();
    let n = 5000usize;
    let r = |i: usize, s: u64| uniform_f32(97, (i as u64) * 8 + s) * 2.0 - 1.0;
    let bodies: Vec<Body> = (0..n)
        .map(|i| Body {
            x: r(i, 0),
            y: r(i, 1),
            z: r(i, 2),
            m: 1.0 / n as f32,
        })
        .collect();
    let vel: Vec<[f32; 3]> = (0..n).map(|i| [r(i, 3), r(i, 4), r(i, 5)]).collect();
    let mut acc: Vec<Accel> = (0..n)
        .map(|i| Accel {
            x: r(i, 6),
            y: r(i, 7),
            z: r(i, 0) * 3.0,
        })
        .collect();
    let bad_particle = 1234;
    acc[bad_particle].y = f32::NAN;
    let ids: Vec<u64> = (0..n as u64).map(|i| 1000 + i).collect();
    // A fresh permutation: a stride coprime to n.
    let order: Vec<u32> = (0..n).map(|j| ((j * 2999 + 17) % n) as u32).collect();
    let dt = 0.013f32;
    for kicked in [true, false] {
        let d_order = gpu.upload(&order).unwrap();
        let (db, dv, da, di) = (
            gpu.upload(&bodies).unwrap(),
            gpu.upload(&vel).unwrap(),
            gpu.upload(&acc).unwrap(),
            gpu.upload(&ids).unwrap(),
        );
        let mut ob = gpu.alloc_poisoned::<Body>(n).unwrap();
        let mut ov = gpu.alloc_poisoned::<[f32; 3]>(n).unwrap();
        let mut oa = gpu.alloc_poisoned::<Accel>(n).unwrap();
        let mut oi = gpu.alloc_poisoned::<u64>(n).unwrap();
        let mut bad = gpu.upload(&[u32::MAX]).unwrap();
        let none: Option<&warpkit::runtime::CudaSlice<u32>> = None;
        let none_mut: Option<&mut warpkit::runtime::CudaSlice<u32>> = None;
        let flag = kicked.then(|| bad.slice_mut(0..1));
        let args = (
            &d_order, n as u32, &db, &mut ob, &dv, &mut ov, &da, &mut oa, &di, &mut oi, none,
            none_mut, dt, flag,
        );
        // SAFETY: `order` is a permutation of 0..n; every array holds n entries, `bad` one.
        unsafe { gpu.launch(k::nbody_permute, grid_for(n as u32, NBODY_BLOCK), args) }.unwrap();
        let (gb, gv, ga, gi) = (
            gpu.download(&ob).unwrap(),
            gpu.download(&ov).unwrap(),
            gpu.download(&oa).unwrap(),
            gpu.download(&oi).unwrap(),
        );
        for (j, &i) in order.iter().enumerate() {
            let i = i as usize;
            assert_eq!(gb[j], bodies[i]);
            assert_eq!(ga[j].x.to_bits(), acc[i].x.to_bits());
            assert_eq!(gi[j], ids[i]);
            let mut want = vel[i];
            if kicked {
                kick(&mut want, [acc[i].x, acc[i].y, acc[i].z], dt);
            }
            let same = gv[j]
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
            assert!(same, "velocity {j}: {:?} against {:?}", gv[j], want);
        }
        let at = order
            .iter()
            .position(|&i| i as usize == bad_particle)
            .unwrap() as u32;
        let flagged = gpu.download(&bad).unwrap()[0];
        assert_eq!(flagged, if kicked { at } else { u32::MAX });
    }
}

// ---------------------------------------------------------------------------------------------
// block time steps (warpkit::nbody::gpu::block) against the host formulas and the CPU reference
// ---------------------------------------------------------------------------------------------

mod block {
    use super::*;
    use warpkit::bh::gpu::{self as bhgpu, GroupSubset, Storage, Traversal};
    use warpkit::bh::initial_cells;
    use warpkit::device::bh::{Accel, Body, TreeHeader};
    use warpkit::device::nbody::{
        self as dev, LEVEL_BINS, NBODY_BLOCK, Timestep, counter, kernels as k,
    };
    use warpkit::device::rng::uniform_f32;
    use warpkit::nbody::block::BlockSimulation;
    use warpkit::nbody::gpu::block::GpuBlockSim;
    use warpkit::runtime::{CudaSlice, Gpu, grid_for};

    fn fresh_counters(gpu: &Gpu) -> CudaSlice<u32> {
        let mut c = [0u32; counter::COUNTERS];
        c[counter::BAD_DRIFT] = u32::MAX;
        c[counter::BAD_KICK] = u32::MAX;
        gpu.upload(&c).unwrap()
    }

    fn zero_levels(gpu: &Gpu, c: &mut CudaSlice<u32>) {
        gpu.stream()
            .memset_zeros(&mut c.slice_mut(counter::DEEPEST..counter::COUNTERS))
            .unwrap();
    }

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() <= 1e-6 * a.abs().max(b.abs()) || a.to_bits() == b.to_bits()
    }

    /// The kernels' levels, velocities, positions and counters are the host formulas' (the same
    /// functions in float32): the start kick, a kick at a tick where only some levels are active,
    /// and the drift to the next tick from the deepest level the kick counted. Sizes straddle
    /// warp and block edges (the histogram's warp-aggregated counting).
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn block_kick_and_drift_kernels_match_the_host_formulas() {
        let gpu = common::gpu();
        let step = Timestep {
            eta: 0.025,
            eps: 0.05,
            dt_max: 0.125,
            max_level: 10,
        };
        let ml = step.max_level;
        for &n in common::EDGE_SIZES {
            // |a| over eight decades: η·sqrt(ε/|a|) from 0.56 (level 0) to 5.6e-5 (past level 10).
            let acc: Vec<Accel> = (0..n as u64)
                .map(|i| {
                    let m = 10f32.powf(-4.0 + 8.0 * uniform_f32(1, i));
                    let d = [0, 1, 2].map(|c| uniform_f32(2 + c, i) - 0.5);
                    Accel {
                        x: m * d[0],
                        y: m * d[1],
                        z: m * d[2],
                    }
                })
                .collect();
            let vel: Vec<[f32; 3]> = (0..n as u64)
                .map(|i| [0, 1, 2].map(|c| uniform_f32(9 + c, i) - 0.5))
                .collect();
            let bodies: Vec<Body> = (0..n as u64)
                .map(|i| {
                    let [x, y, z] = [0, 1, 2].map(|c| uniform_f32(20 + c, i));
                    Body { x, y, z, m: 1.0 }
                })
                .collect();
            let mut d_vel = gpu.upload(&vel).unwrap();
            let d_acc = gpu.upload(&acc).unwrap();
            let mut d_level: CudaSlice<u32> = gpu.alloc_poisoned(n).unwrap();
            let mut d_bodies = gpu.upload(&bodies).unwrap();
            let mut counters = fresh_counters(&gpu);
            let cfg = grid_for(n as u32, NBODY_BLOCK);
            let a3 = |a: &Accel| [a.x, a.y, a.z];

            // Host twin of one kick at `tick`.
            let host_kick = |v: &mut [[f32; 3]], l: &mut [u32], tick: u64, start: bool| {
                for i in 0..n {
                    if start || dev::is_active(tick, l[i], ml) {
                        let a = a3(&acc[i]);
                        let wanted = dev::timestep_level(&step, a);
                        let old = (!start).then_some(l[i]);
                        l[i] = dev::block_kick(&mut v[i], a, old, wanted, tick, step.dt_max, ml);
                    }
                }
            };
            let check = |what: &str,
                         d_vel: &CudaSlice<[f32; 3]>,
                         d_level: &CudaSlice<u32>,
                         counters: &CudaSlice<u32>,
                         v: &[[f32; 3]],
                         l: &[u32]| {
                let (gv, gl) = (gpu.download(d_vel).unwrap(), gpu.download(d_level).unwrap());
                assert_eq!(gl, l, "{what}, n = {n}: levels");
                for i in 0..n {
                    for c in 0..3 {
                        assert!(close(gv[i][c], v[i][c]), "{what}, n = {n}: v[{i}]");
                    }
                }
                let c = gpu.download(counters).unwrap();
                let mut hist = [0u32; LEVEL_BINS];
                l.iter().for_each(|&x| hist[x as usize] += 1);
                assert_eq!(
                    &c[counter::LEVELS..],
                    &hist[..],
                    "{what}, n = {n}: histogram"
                );
                let deepest = l.iter().copied().max().unwrap();
                assert_eq!(c[counter::DEEPEST], deepest, "{what}, n = {n}: deepest");
                assert_eq!(c[counter::BAD_KICK], u32::MAX);
            };

            let (mut v, mut l) = (vel.clone(), vec![0u32; n]);
            host_kick(&mut v, &mut l, 0, true);
            zero_levels(&gpu, &mut counters);
            let args = (
                &mut d_vel,
                &d_acc,
                &mut d_level,
                n as u32,
                0u64,
                step,
                1u32,
                &mut counters,
            );
            unsafe { gpu.launch(k::nbody_block_kick, cfg, args) }.unwrap();
            check("start", &d_vel, &d_level, &counters, &v, &l);
            assert!(l.contains(&0) || n < 100, "levels spread from 0");
            assert!(l.contains(&ml) || n < 100, "levels spread to max_level");

            // Tick 3·2^7: levels 3 and deeper are active there, 0 ..= 2 are not.
            let tick = 3 << 7;
            host_kick(&mut v, &mut l, tick, false);
            zero_levels(&gpu, &mut counters);
            let args = (
                &mut d_vel,
                &d_acc,
                &mut d_level,
                n as u32,
                tick,
                step,
                0u32,
                &mut counters,
            );
            unsafe { gpu.launch(k::nbody_block_kick, cfg, args) }.unwrap();
            check("tick 384", &d_vel, &d_level, &counters, &v, &l);

            // The drift to the deepest level's next tick.
            let deepest = l.iter().copied().max().unwrap();
            let next = dev::next_tick(tick, deepest, ml);
            let dt: f32 = dev::tick_span(next - tick, step.dt_max, ml);
            let args = (&mut d_bodies, &d_vel, n as u32, tick, step, &mut counters);
            unsafe { gpu.launch(k::nbody_block_drift, cfg, args) }.unwrap();
            let got = gpu.download(&d_bodies).unwrap();
            for i in 0..n {
                let mut x = bodies[i].pos();
                dev::drift(&mut x, v[i], dt);
                for (g, h) in got[i].pos().into_iter().zip(x) {
                    assert!(close(g, h), "n = {n}: x[{i}]");
                }
                assert_eq!(got[i].m, 1.0);
            }
            assert_eq!(
                gpu.download(&counters).unwrap()[counter::BAD_DRIFT],
                u32::MAX
            );
        }
    }

    /// `nbody_active_groups` gathers every active body exactly once, each group of them from one
    /// of the tree's groups in its order; `nbody_active_header` counts them; the group kernel over
    /// the subset writes the active bodies' accelerations (as the full walk gives them, within
    /// the tree's error) and leaves the others' poison untouched.
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn active_groups_hold_exactly_the_active_bodies() {
        let gpu = common::gpu();
        let p = plummer(30000, 21);
        let n = p.len();
        let bodies: Vec<Body> = (0..n)
            .map(|i| Body {
                x: p.pos[i][0] as f32,
                y: p.pos[i][1] as f32,
                z: p.pos[i][2] as f32,
                m: p.mass[i] as f32,
            })
            .collect();
        let ml = 6;
        // Levels skewed to the shallow end, as in a real run: most bodies inactive.
        let level: Vec<u32> = (0..n as u64)
            .map(|i| ((uniform_f32(77, i).powi(3) * (ml + 1) as f32) as u32).min(ml))
            .collect();
        let mut f = ForceOptions::default();
        f.params.eps = 0.05;
        f.params.theta = 0.3;
        let o = warpkit::bh::gpu::Options {
            sorted: true,
            traversal: Traversal::Group2,
            quadrupole: true,
            ..Default::default()
        };
        for tick in [1u64 << ml, 2, 4, 8, 24, 32] {
            let mut octree = bhgpu::build_device_tree_with(
                &gpu,
                &bodies,
                Storage::Dense,
                initial_cells(n),
                true,
            )
            .unwrap();
            bhgpu::sort_tree(&gpu, &mut octree, Traversal::Group2.group_size()).unwrap();
            let d_level = gpu.upload(&level).unwrap();
            let mut subset = GroupSubset::new(&gpu, n).unwrap();
            let mut counters = fresh_counters(&gpu);
            let cfg = gpu
                .resident_grid(k::nbody_active_groups, NBODY_BLOCK)
                .unwrap();
            let args = (
                &octree.tree.sort,
                &octree.tree.groups,
                &octree.tree.header,
                &d_level,
                tick,
                ml,
                &mut subset.sort,
                &mut subset.groups,
                &mut counters,
            );
            unsafe { gpu.launch(k::nbody_active_groups, cfg, args) }.unwrap();
            let args = (&octree.tree.header, &counters, &mut subset.header);
            unsafe { gpu.launch(k::nbody_active_header, grid_for(1, 32), args) }.unwrap();

            let header: TreeHeader = gpu.download(&octree.tree.header).unwrap()[0];
            let sort = gpu.download(&octree.tree.sort).unwrap();
            let mut groups = gpu.download(&octree.tree.groups).unwrap();
            groups.truncate(header.groups as usize);
            let c = gpu.download(&counters).unwrap();
            let a_header: TreeHeader = gpu.download(&subset.header).unwrap()[0];
            let (count, ngroups) = (c[counter::ACTIVE_BODIES], c[counter::ACTIVE_GROUPS]);
            let a_sort = gpu.download(&subset.sort).unwrap();
            let a_groups = gpu.download(&subset.groups).unwrap();

            let active: Vec<bool> = level.iter().map(|&l| dev::is_active(tick, l, ml)).collect();
            let want = active.iter().filter(|&&a| a).count();
            assert_eq!(count as usize, want, "tick {tick}: active bodies");
            // Where each body sits in the tree's groups.
            let mut at = vec![(u32::MAX, 0u32); n];
            for (g, &[first, size]) in groups.iter().enumerate() {
                for m in 0..size {
                    at[sort[(first + m) as usize] as usize] = (g as u32, first + m);
                }
            }
            let groups_with_active = groups
                .iter()
                .filter(|&&[f, s]| (f..f + s).any(|j| active[sort[j as usize] as usize]))
                .count();
            assert_eq!(ngroups as usize, groups_with_active, "tick {tick}: groups");
            let mut seen = vec![false; n];
            let mut covered = 0;
            for &[base, size] in &a_groups[..ngroups as usize] {
                assert!(
                    size > 0 && base + size <= count,
                    "tick {tick}: group [{base}, {size}]"
                );
                let members = &a_sort[base as usize..(base + size) as usize];
                let tree_group = at[members[0] as usize].0;
                let mut last = None;
                for &b in members {
                    let b = b as usize;
                    assert!(
                        active[b] && !seen[b],
                        "tick {tick}: body {b} inactive or twice"
                    );
                    seen[b] = true;
                    assert_eq!(
                        at[b].0, tree_group,
                        "tick {tick}: a group spans tree groups"
                    );
                    assert!(last < Some(at[b].1), "tick {tick}: out of tree order");
                    last = Some(at[b].1);
                }
                covered += size;
            }
            assert_eq!(covered, count);
            let mut expect = header;
            expect.groups = ngroups;
            expect.next_group = 0;
            expect.interactions = 0;
            expect.opened = 0;
            assert_eq!(a_header, expect, "tick {tick}: active header");

            // Forces over the subset against the full walk's.
            let mut part = gpu.alloc_poisoned::<Accel>(n).unwrap();
            let mut full = gpu.alloc_poisoned::<Accel>(n).unwrap();
            bhgpu::gravity_on(&gpu, &octree, &f.params, &o, &mut part, Some(&subset)).unwrap();
            let part = gpu.download(&part).unwrap();
            bhgpu::gravity_on(&gpu, &octree, &f.params, &o, &mut full, None).unwrap();
            let all = gpu.download(&full).unwrap();
            // The subset's group boxes are smaller than the full groups', so the two walks list
            // other cells: equal within the tree's error, not bit for bit. A wrong body index
            // would be off by order one.
            let norm = |a: &Accel| (a.x * a.x + a.y * a.y + a.z * a.z).sqrt();
            let mut rel = Vec::new();
            for i in 0..n {
                if active[i] {
                    let d = Accel {
                        x: part[i].x - all[i].x,
                        y: part[i].y - all[i].y,
                        z: part[i].z - all[i].z,
                    };
                    rel.push((norm(&d) / norm(&all[i])) as f64);
                } else {
                    assert!(
                        part[i].x.is_nan(),
                        "tick {tick}: inactive body {i} was written"
                    );
                }
            }
            let worst = rel.iter().copied().fold(0.0, f64::max);
            let med = median(rel);
            println!(
                "tick {tick}: {count} active in {ngroups} groups; subset against full walk: \
                 median {med:.2e}, max {worst:.2e}"
            );
            assert!(
                med < 1e-4 && worst < 0.05,
                "tick {tick}: median {med}, max {worst}"
            );
        }
    }

    /// The GPU block steps against the float64 CPU reference on a small Plummer sphere: with
    /// nearly exact tree forces (θ = 0.1, quadrupoles) the same levels and, after four blocks of
    /// substeps, the same positions to float32 accuracy; the same timeline.
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn block_steps_match_the_cpu_reference() {
        let gpu = common::gpu();
        let p = plummer(2000, 17);
        let (eps, eta, dt_max, ml) = (0.05, 0.025, 1.0 / 16.0, 12);
        let mut f = ForceOptions::default();
        f.params.eps = eps as f32;
        f.params.theta = 0.1;
        let mut g = GpuBlockSim::new(&gpu, &p, f, eta, dt_max, ml).unwrap();
        let mut c = BlockSimulation::new(p.clone(), eps, eta, dt_max, ml).unwrap();
        let t_end = 4.0 * dt_max;
        g.run_until(t_end).unwrap();
        c.run_until(t_end).unwrap();
        assert_eq!(g.time, c.time);
        let (s, _) = g.state().unwrap();
        let levels = g.levels().unwrap();
        let index: std::collections::HashMap<u64, usize> = c
            .particles
            .id
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i))
            .collect();
        let cd = c.diagnostics();
        let cpu_vel = {
            // The reference's synchronised velocities, as its diagnostics take them.
            let mut v = c.particles.vel.clone();
            for (i, v) in v.iter_mut().enumerate() {
                warpkit::device::nbody::half_kick(
                    v,
                    c.acc[i],
                    -dev::block_step(dt_max, c.level[i]),
                );
            }
            v
        };
        let (mut differ, mut worst_x, mut worst_v) = (0, 0.0f64, 0.0f64);
        for (j, id) in s.id.iter().enumerate() {
            let i = index[id];
            let dx = (0..3)
                .map(|k| (s.pos[j][k] - c.particles.pos[i][k]).abs())
                .fold(0.0, f64::max);
            let dv = (0..3)
                .map(|k| (s.vel[j][k] - cpu_vel[i][k]).abs())
                .fold(0.0, f64::max);
            if levels[j] != c.level[i] {
                differ += 1;
                assert!(
                    dx < 1e-2 && dv < 1e-1,
                    "particle {id}: levels differ and it left"
                );
            } else {
                worst_x = worst_x.max(dx);
                worst_v = worst_v.max(dv);
            }
        }
        let deepest = c.level.iter().max().unwrap();
        println!(
            "GPU {} substeps, {} force evaluations; CPU {} substeps, {} evaluations; levels up to \
             {deepest}, {differ} differ; worst |Δx| {worst_x:.2e}, |Δv| {worst_v:.2e}; E CPU {:.6}",
            g.stats.substeps, g.stats.force_evaluations, c.substeps, c.force_evaluations, cd.total
        );
        assert!(*deepest >= 2, "the sphere should use several levels");
        assert!(differ <= 4, "{differ} of 2000 particles on other levels");
        // Float32 state against float64 over ~50 substeps: 1e-4 is ten times the rounding seen,
        // and far below a missed half kick (a·dt²/2 ≈ 1e-3).
        assert!(worst_x < 1e-4, "positions differ by {worst_x}");
        assert!(worst_v < 1e-4, "velocities differ by {worst_v}");
        if differ == 0 {
            assert_eq!(g.stats.substeps, c.substeps);
            assert_eq!(g.stats.force_evaluations, c.force_evaluations);
            assert_eq!(
                &g.stats.evaluations_by_level[..],
                &c.evaluations_by_level[..]
            );
        }
    }

    /// A Plummer sphere under block steps keeps its energy, and the active-only forces cost fewer
    /// evaluations than the shared step at the deepest level used.
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn block_steps_conserve_energy_on_a_plummer_sphere() {
        let gpu = common::gpu();
        let p = plummer(16384, 23);
        let n = p.len() as f64;
        let (eta, dt_max, blocks) = (0.025, 1.0 / 16.0, 32);
        let mut f = ForceOptions::default();
        f.params.eps = 0.05;
        f.params.theta = 0.4;
        let mut g = GpuBlockSim::new(&gpu, &p, f, eta, dt_max, 20).unwrap();
        let (s0, pot0) = g.state().unwrap();
        let d0 = Diagnostics::compute(&s0, &pot0, 0.0);
        for b in 1..=blocks {
            g.step_block(b == blocks).unwrap();
        }
        let (s1, pot1) = g.state().unwrap();
        let d1 = Diagnostics::compute(&s1, &pot1, g.time);
        let drift = ((d1.total - d0.total) / d0.total).abs();
        let deepest = (0..LEVEL_BINS)
            .rev()
            .find(|&l| g.stats.particles_by_level[l] > 0 || g.stats.evaluations_by_level[l] > 0)
            .unwrap();
        let shared = n * blocks as f64 * (1u64 << deepest) as f64;
        println!(
            "|ΔE/E| = {drift:.3e} at t = {}; {} substeps, {} force evaluations ({:.2} per particle \
             per dt_max); a shared step at level {deepest}: {shared:.3e}; particles per level {:?}",
            g.time,
            g.stats.substeps,
            g.stats.force_evaluations,
            g.stats.force_evaluations as f64 / (n * blocks as f64),
            &g.stats.particles_by_level[..=deepest]
        );
        assert!((g.time - 2.0).abs() < 1e-12);
        assert!(drift < 2e-3, "energy drift {drift}");
        assert!(deepest >= 2, "the sphere should use several levels");
        // A Plummer sphere saves little: about 70% of it wants the deepest level (|a| > 0.5 for
        // 0.1 < r < 1.2). The collision's outskirts are where block steps pay.
        assert!((g.stats.force_evaluations as f64) < shared);
        // The structure against shared steps at the deepest level from the same start (not
        // against t = 0: with ε = 0.05 the sphere, in equilibrium without softening, re-virialises
        // and its inner radii grow by 3-4% in the first time unit, also at N = 2^20).
        let mut s = GpuSim::new(&gpu, &p, f).unwrap();
        let dt = dt_max / (1u64 << deepest) as f64;
        for k in 0..(blocks as u64) << deepest {
            s.step(dt, k + 1 == (blocks as u64) << deepest).unwrap();
        }
        let (s2, pot2) = s.state().unwrap();
        let d2 = Diagnostics::compute(&s2, &pot2, s.time);
        for (a, b) in d1.lagrangian_radii.iter().zip(&d2.lagrangian_radii) {
            assert!(
                (a - b).abs() / b < 0.02,
                "Lagrangian radii {a} (block) vs {b} (shared)"
            );
        }
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn a_block_step_blow_up_names_the_substep_and_particle() {
        let gpu = common::gpu();
        let mut p = plummer(1000, 3);
        p.vel[77] = [3e38, 0.0, 0.0];
        let id = p.id[77];
        // A huge η keeps everyone on level 0: the first drift (dt = 16) passes f32::MAX.
        let mut f = ForceOptions::default();
        f.params.eps = 0.05;
        let mut g = GpuBlockSim::new(&gpu, &p, f, 1e9, 16.0, 8).unwrap();
        match g.step_block(false) {
            Err(NbodyGpuError::BlowUp { step, id: got, .. }) => {
                assert_eq!(got, id);
                assert_eq!(step, 1);
            }
            other => panic!("expected a blow-up, got {other:?}"),
        }
    }
}
