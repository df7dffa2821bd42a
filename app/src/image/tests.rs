use super::*;
use std::time::Instant;
use warpkit::nbody::ic;

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("warpkit-image-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// A small deterministic generator (no dependency for tests).
fn lcg(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn view(axis: Axis, pixels: u32) -> View {
    View::new(axis, [0.0; 3], 1.0, pixels).unwrap()
}

#[test]
fn deposition_conserves_the_mass_inside_the_view() {
    let mut r = lcg(3);
    let v = View::new(Axis::Z, [0.5, -0.25, 7.0], 2.0, 64).unwrap();
    let (mut pos, mut mass) = (Vec::new(), Vec::new());
    let mut inside = 0.0;
    let ps = v.pixel_size();
    for k in 0..20_000 {
        let m = 0.5 + r();
        // Half well inside (at least half a pixel from the edge), half far outside.
        let p = if k % 2 == 0 {
            inside += m;
            let w = 2.0 - ps;
            [
                0.5 + w * (2.0 * r() - 1.0),
                -0.25 + w * (2.0 * r() - 1.0),
                100.0 * r(),
            ]
        } else {
            [0.5 + 3.0 + 5.0 * r(), -0.25 - 3.0 - 5.0 * r(), 0.0]
        };
        pos.push(p);
        mass.push(m);
    }
    let map = surface_density(&pos, &mass, Select::All, &v).unwrap();
    assert!(
        (map.mass() - inside).abs() <= 1e-10 * inside,
        "{} vs {inside}",
        map.mass()
    );
    // float32 positions and masses go through the same path.
    let pos32: Vec<[f32; 3]> = pos.iter().map(|p| p.map(|c| c as f32)).collect();
    let mass32: Vec<f32> = mass.iter().map(|&m| m as f32).collect();
    let map32 = surface_density(&pos32, &mass32, Select::All, &v).unwrap();
    assert!((map32.mass() - inside).abs() <= 1e-5 * inside);
}

#[test]
fn single_particle_lands_in_its_pixel_for_each_axis() {
    // 8 pixels over [-1, 1]: pixel centres at -0.875 + 0.25 k.
    let n = 8;
    for axis in [Axis::X, Axis::Y, Axis::Z] {
        let (a, b) = axis.plane();
        // Horizontal coordinate at the centre of column 6, vertical at the centre of row 1
        // (row 0 at the top, so +0.625), line-of-sight coordinate anywhere.
        let mut p = [123.0; 3];
        p[a] = -0.875 + 0.25 * 6.0;
        p[b] = 0.875 - 0.25 * 1.0;
        let v = view(axis, n);
        assert_eq!(v.pixel_of(p), Some((6, 1)), "{axis:?}");
        let map = surface_density(&[p], &[2.0], Select::All, &v).unwrap();
        let hot: Vec<(u32, u32)> = (0..n)
            .flat_map(|r| (0..n).map(move |c| (c, r)))
            .filter(|&(c, r)| map.at(c, r) > 0.0)
            .collect();
        assert_eq!(hot, vec![(6, 1)], "{axis:?}");
        assert!((map.at(6, 1) - 2.0 / v.pixel_area()).abs() < 1e-12);
        // A quarter pixel right of the centre: 3/4 stays, 1/4 goes to column 7.
        p[a] += 0.0625;
        let map = surface_density(&[p], &[1.0], Select::All, &v).unwrap();
        let area = v.pixel_area();
        assert!((map.at(6, 1) * area - 0.75).abs() < 1e-12, "{axis:?}");
        assert!((map.at(7, 1) * area - 0.25).abs() < 1e-12, "{axis:?}");
    }
}

#[test]
fn selection_by_type_keeps_only_those_types() {
    let pos = [[0.0; 3], [0.5, 0.5, 0.0], [-0.5, -0.5, 0.0]];
    let mass = [1.0, 2.0, 4.0];
    let ptype = [HALO, DISK, BULGE];
    let v = view(Axis::Z, 16);
    let m = |types| {
        surface_density(
            &pos,
            &mass,
            Select::Types {
                ptype: &ptype,
                types,
            },
            &v,
        )
        .unwrap()
        .mass()
    };
    assert!((m(Types::STARS) - 6.0).abs() < 1e-12);
    assert!((m(Types::HALO) - 1.0).abs() < 1e-12);
    assert!((m(Types::ALL) - 7.0).abs() < 1e-12);
    assert!((m(Types::only(DISK).union(Types::HALO)) - 3.0).abs() < 1e-12);
}

#[test]
fn bad_input_is_refused_clearly() {
    let v = view(Axis::Z, 8);
    let e = View::new(Axis::Z, [0.0; 3], 1.0, 0).unwrap_err();
    assert!(e.to_string().contains("0 pixels"), "{e}");
    assert!(View::new(Axis::Z, [0.0; 3], 0.0, 8).is_err());
    assert!(View::new(Axis::Z, [f64::NAN, 0.0, 0.0], 1.0, 8).is_err());

    let pos = [[0.0; 3], [f64::NAN, 0.0, 0.0], [0.0; 3]];
    let e = surface_density(&pos, &[1.0; 3], Select::All, &v).unwrap_err();
    assert!(matches!(e, ImageError::Position { index: 1, .. }), "{e}");
    assert!(e.to_string().contains("particle 1"), "{e}");
    // An unselected NaN does not matter.
    let ptype = [DISK, HALO, DISK];
    let sel = Select::Types {
        ptype: &ptype,
        types: Types::STARS,
    };
    assert!(surface_density(&pos, &[1.0; 3], sel, &v).is_ok());

    let e = surface_density(&[[0.0; 3]; 2], &[1.0, -1.0], Select::All, &v).unwrap_err();
    assert!(matches!(e, ImageError::Mass { index: 1, .. }), "{e}");
    let e = surface_density(&[[0.0; 3]; 2], &[1.0], Select::All, &v).unwrap_err();
    assert!(e.to_string().contains("2 positions but 1 masses"), "{e}");

    let e = surface_density(
        &[[0.0; 3]],
        &[1.0],
        Select::Types {
            ptype: &[HALO],
            types: Types::STARS,
        },
        &v,
    )
    .unwrap_err();
    assert!(matches!(e, ImageError::Empty { .. }), "{e}");
    assert!(e.to_string().contains("{2, 3}"), "{e}");
    let none: [[f64; 3]; 0] = [];
    let none_m: [f64; 0] = [];
    assert!(matches!(
        surface_density(&none, &none_m, Select::All, &v),
        Err(ImageError::Empty { .. })
    ));
    assert!(View::frame(&none, &none_m, Select::All, Axis::Z, 8, 0.99).is_err());
    assert!(Range::new(0.0, 1.0).is_err());
    assert!(Range::new(2.0, 1.0).is_err());
    assert!(tile(&[], 2, 1).is_err());
}

#[test]
fn unwritable_paths_fail_and_leave_nothing() {
    let d = tmp_dir("unwritable");
    let map = surface_density(&[[0.0; 3]], &[1.0], Select::All, &view(Axis::Z, 8)).unwrap();
    let missing = d.join("no-such-dir").join("m.png");
    let e = write_png(&missing, &map, &Style::default()).unwrap_err();
    assert!(e.to_string().contains("no-such-dir"), "{e}");
    assert!(Gif::create(&missing.with_extension("gif"), 8, 8, 10, &[Colormap::Magma]).is_err());
    // A GIF dropped unfinished leaves neither the file nor its temporary.
    let path = d.join("a.gif");
    {
        let mut g = Gif::create(&path, 8, 8, 10, &[Colormap::Magma]).unwrap();
        g.add(&render(&map, &Style::default()).unwrap()).unwrap();
        // A frame of the wrong size is refused.
        assert!(g.add(&Image::new(4, 4, [0; 3])).is_err());
    }
    assert_eq!(fs::read_dir(&d).unwrap().count(), 0);
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn colour_maps_rise_in_luminance() {
    // Relative luminance of sRGB; both maps are monotonic in the published float data, and the
    // 8-bit rounding may only make neighbours equal or a hair darker.
    let lin = |c: u8| {
        let c = c as f64 / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    for map in [Colormap::Magma, Colormap::Viridis] {
        let y: Vec<f64> = map
            .table()
            .iter()
            .map(|&[r, g, b]| 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b))
            .collect();
        for k in 1..256 {
            assert!(
                y[k] >= y[k - 1] - 5e-4,
                "{map:?} at {k}: {} < {}",
                y[k],
                y[k - 1]
            );
        }
        // Over every 8 entries strictly brighter.
        for k in 8..256 {
            assert!(y[k] > y[k - 8], "{map:?} at {k}");
        }
        assert!(y[255] - y[0] > 0.7, "{map:?}");
    }
    assert_eq!(Colormap::Magma.rgb(0.0), [0, 0, 4]);
    assert_eq!(Colormap::Magma.rgb(1.0), [252, 253, 191]);
    assert_eq!(Colormap::Viridis.rgb(0.5), [33, 145, 140]);
    assert_eq!(Colormap::Viridis.rgb(f64::NAN), [68, 1, 84]);
}

fn decode_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let dec = png::Decoder::new(File::open(path).unwrap());
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

#[test]
fn png_and_gif_decode_to_the_expected_size_and_frames() {
    let d = tmp_dir("decode");
    let mut r = lcg(5);
    let pos: Vec<[f64; 3]> = (0..5000)
        .map(|_| [r() - 0.5, 0.3 * (r() - 0.5), r() - 0.5])
        .collect();
    let mass = vec![1.0; pos.len()];
    let v = view(Axis::Z, 96);
    let map = surface_density(&pos, &mass, Select::All, &v).unwrap();
    let style = Style {
        time: Some(1.5),
        title: Some("test".into()),
        colorbar: true,
        ..Style::default()
    };
    let png_path = d.join("m.png");
    write_png(&png_path, &map, &style).unwrap();
    let (w, h, rgb) = decode_png(&png_path);
    assert_eq!((w, h), (96, 96));
    assert_eq!(rgb, render(&map, &style).unwrap().rgb);

    // Three frames with a shared range; a panel of two in one row.
    let maps: Vec<Map> = (0..3)
        .map(|k| {
            let shifted: Vec<[f64; 3]> = pos
                .iter()
                .map(|p| [p[0] + 0.1 * k as f64, p[1], p[2]])
                .collect();
            surface_density(&shifted, &mass, Select::All, &v).unwrap()
        })
        .collect();
    let range = Range::dynamic(&maps, 3.0).unwrap();
    let frames: Vec<Image> = maps
        .iter()
        .enumerate()
        .map(|(k, m)| {
            let s = Style {
                range: Some(range),
                time: Some(k as f64),
                ..Style::default()
            };
            render(m, &s).unwrap()
        })
        .collect();
    let gif_path = d.join("a.gif");
    write_gif(&gif_path, &frames, 20, &[Colormap::Magma]).unwrap();
    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::RGBA);
    let mut dec = opts.read_info(File::open(&gif_path).unwrap()).unwrap();
    assert_eq!((dec.width(), dec.height()), (96, 96));
    let mut count = 0;
    while let Some(f) = dec.read_next_frame().unwrap() {
        assert_eq!((f.width, f.height, f.delay), (96, 96, 20));
        // The palette keeps the colour map: every pixel within a few levels of the frame's.
        let src = &frames[count].rgb;
        let worst = f
            .buffer
            .chunks_exact(4)
            .zip(src.chunks_exact(3))
            .map(|(a, b)| {
                (0..3)
                    .map(|k| (a[k] as i32 - b[k] as i32).abs())
                    .max()
                    .unwrap()
            })
            .max()
            .unwrap();
        assert!(worst <= 40, "frame {count}: a pixel off by {worst}");
        count += 1;
    }
    assert_eq!(count, 3);

    let s0 = Style::default();
    let s1 = Style {
        colormap: Colormap::Viridis,
        ..Style::default()
    };
    let fig = panel(&[(&maps[0], &s0), (&maps[1], &s1), (&maps[2], &s0)], 2).unwrap();
    let gap = 2; // 96 / 100 + 2
    assert_eq!((fig.width, fig.height), (2 * 96 + gap, 2 * 96 + gap));
    let fig_path = d.join("panel.png");
    fig.write_png(&fig_path).unwrap();
    assert_eq!(decode_png(&fig_path).0, 2 * 96 + gap);
    // No temporary files left behind.
    let names: Vec<String> = fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.contains("tmp")), "{names:?}");
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn rendering_maps_density_to_the_colour_scale() {
    // One bright pixel at the top of the range, the rest empty (lowest colour).
    let v = view(Axis::Z, 8);
    let map = surface_density(&[[-0.875, 0.875, 0.0]], &[1.0], Select::All, &v).unwrap();
    let plain = Style {
        scale_bar: false,
        ..Style::default()
    };
    let img = render(&map, &plain).unwrap();
    assert_eq!(img.pixel(0, 0), Colormap::Magma.rgb(1.0));
    assert_eq!(img.pixel(7, 7), Colormap::Magma.rgb(0.0));
    // Half the range on a log scale: a density of sqrt(lo·hi) is the middle colour.
    let hi = map.max();
    let s = Style {
        range: Some(Range::new(hi / 100.0, hi * 100.0).unwrap()),
        ..plain
    };
    assert_eq!(
        render(&map, &s).unwrap().pixel(0, 0),
        Colormap::Magma.rgb(0.5)
    );
}

#[test]
fn framing_holds_the_requested_mass() {
    let p = ic::Encounter::default().generate();
    let v = View::frame_particles(&p, Types::STARS, Axis::Z, 64, 0.99).unwrap();
    let map = Map::of(&p, Types::STARS, &v).unwrap();
    let stars: f64 = p.of_type(DISK).map(|i| p.mass[i]).sum();
    let f = map.mass() / stars;
    assert!(f > 0.985 && f <= 1.0 + 1e-12, "{f}");
    // The centre is the stars' centre of mass (the encounter is set up about the origin).
    assert!(v.centre.iter().all(|c| c.abs() < 1.0), "{:?}", v.centre);
}

#[test]
fn smoothing_keeps_mass_and_spreads_a_point() {
    let v = view(Axis::Z, 32);
    let map = surface_density(&[[0.01, -0.02, 0.0]], &[3.0], Select::All, &v).unwrap();
    let s = map.smoothed(2.0);
    assert!((s.mass() - 3.0).abs() < 1e-12, "{}", s.mass());
    assert!(s.max() < 0.2 * map.max());
    // Symmetric about the point: the four pixels around it hold nearly equal density.
    let c = [s.at(15, 15), s.at(16, 15), s.at(15, 16), s.at(16, 16)];
    assert!(c.iter().all(|&x| (x - c[0]).abs() < 0.2 * c[0]), "{c:?}");
    assert_eq!(map.smoothed(0.0), map);
}

#[test]
fn scale_bar_lengths_are_round() {
    assert_eq!(decade(-4), "10⁻⁴");
    assert_eq!(decade(12), "10¹²");
    assert_eq!(nice_below(7.3), 5.0);
    assert_eq!(nice_below(2.0), 2.0);
    assert_eq!(nice_below(0.19), 0.1);
    assert_eq!(nice_below(35.0), 20.0);
    assert_eq!(short(20.0), "20");
    assert_eq!(short(0.25), "0.25");
}

/// Timing of the brief's size: `cargo test --release --lib nbody::image -- --ignored --nocapture`.
#[test]
#[ignore = "timing, run by hand"]
fn time_five_million_at_1024() {
    let n = 5_000_000;
    let mut r = lcg(9);
    // A centrally concentrated cloud, so most particles land on the map in random order.
    let pos: Vec<[f64; 3]> = (0..n)
        .map(|_| {
            let (a, b, c) = (r(), r(), r());
            let rad = 0.05 + a * a;
            let t = 2.0 * std::f64::consts::PI * b;
            [rad * t.cos(), rad * t.sin(), c - 0.5]
        })
        .collect();
    let mass = vec![1.0 / n as f64; n];
    let v = view(Axis::Z, 1024);
    let _ = surface_density(&pos, &mass, Select::All, &v).unwrap();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        let map = surface_density(&pos, &mass, Select::All, &v).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
        assert!((map.mass() - 1.0).abs() < 0.05);
    }
    let map = surface_density(&pos, &mass, Select::All, &v).unwrap();
    let t = Instant::now();
    let img = render(&map, &Style::default()).unwrap();
    let render_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let png = img.png().unwrap();
    let png_s = t.elapsed().as_secs_f64();
    let d = tmp_dir("timing");
    let t = Instant::now();
    write_gif(
        &d.join("t.gif"),
        &[img.clone(), img],
        10,
        &[Colormap::Magma],
    )
    .unwrap();
    let gif_s = t.elapsed().as_secs_f64() / 2.0;
    fs::remove_dir_all(&d).unwrap();
    println!(
        "{} threads: deposit 5e6 at 1024² {:.3} s (best of 5); render {:.3} s; PNG encode {:.3} s ({} KB); GIF frame {:.3} s",
        rayon::current_num_threads(),
        best,
        render_s,
        png_s,
        png.len() / 1024,
        gif_s
    );
}

/// Where the demos write: `$WARPKIT_IMAGE_DIR`, else `target/nbody-image`.
fn demo_dir() -> PathBuf {
    let d = std::env::var_os("WARPKIT_IMAGE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/nbody-image"));
    fs::create_dir_all(&d).unwrap();
    d
}

/// The default encounter's initial conditions, to look at: stars, dark matter and everything.
#[test]
#[ignore = "writes demo images"]
fn demo_encounter_initial_conditions() {
    let p = ic::Encounter::default().generate();
    let d = demo_dir();
    // The default galaxy's units (ic::DiskGalaxy::default's docs).
    let units = Units::new(3.5, "kpc", 14.0, "Myr").with_mass(5e10, "M☉");
    for axis in [Axis::Z, Axis::Y] {
        let v = View::frame_particles(&p, Types::STARS, axis, 512, 0.99).unwrap();
        // 8192 disk particles per galaxy: smooth over a few pixels.
        let stars = Map::of(&p, Types::STARS, &v).unwrap().smoothed(2.0);
        let dark = Map::of(&p, Types::HALO, &v).unwrap().smoothed(4.0);
        let all = Map::of(&p, Types::ALL, &v).unwrap().smoothed(2.0);
        let s = |colormap, title: &str| Style {
            colormap,
            time: Some(0.0),
            title: Some(format!("{title}, along {}", axis.name())),
            units: units.clone(),
            colorbar: true,
            ..Style::default()
        };
        let (ss, sd, sa) = (
            s(Colormap::Magma, "stars"),
            s(Colormap::Viridis, "dark matter"),
            s(Colormap::Magma, "all"),
        );
        let a = axis.name();
        write_png(&d.join(format!("ic_stars_{a}.png")), &stars, &ss).unwrap();
        write_png(&d.join(format!("ic_all_{a}.png")), &all, &sa).unwrap();
        panel(&[(&stars, &ss), (&dark, &sd)], 2)
            .unwrap()
            .write_png(&d.join(format!("ic_components_{a}.png")))
            .unwrap();
    }
    println!("wrote {}", d.display());
}

/// A small collision run with the float64 CPU integrator (about six minutes on 2 cores): a
/// panel of six times and a GIF, stars in one fixed view and colour scale.
#[test]
#[ignore = "writes demo images; minutes"]
fn demo_collision() {
    use warpkit::nbody::cpu::Simulation;
    let galaxy = ic::DiskGalaxy {
        n_halo: 2048,
        n_disk: 2048,
        ..ic::DiskGalaxy::default()
    };
    let p = ic::Encounter {
        primary: galaxy,
        ..ic::Encounter::default()
    }
    .generate();
    let units = Units::new(3.5, "kpc", 14.0, "Myr").with_mass(5e10, "M☉");
    let view = View::frame_particles(&p, Types::STARS, Axis::Z, 384, 0.99).unwrap();
    let (dt, every, end) = (0.1, 20, 640);
    let mut sim = Simulation::new(p, 0.1, dt).unwrap();
    let mut maps = Vec::new();
    let t0 = Instant::now();
    loop {
        if sim.steps.is_multiple_of(every) {
            let m = Map::of(&sim.particles, Types::STARS, &view).unwrap();
            maps.push((sim.time, m.smoothed(1.5)));
            eprintln!(
                "t = {:.1} after {:.0} s",
                sim.time,
                t0.elapsed().as_secs_f64()
            );
        }
        if sim.steps == end {
            break;
        }
        sim.step().unwrap();
    }
    let range = Range::dynamic(maps.iter().map(|(_, m)| m), 4.0).unwrap();
    let style = |t: f64, bar: bool| Style {
        range: Some(range),
        time: Some(t),
        units: units.clone(),
        colorbar: bar,
        ..Style::default()
    };
    let d = demo_dir();
    let picks: Vec<usize> = (0..6).map(|k| k * (maps.len() - 1) / 5).collect();
    let styles: Vec<Style> = picks
        .iter()
        .enumerate()
        .map(|(k, &i)| style(maps[i].0, k == 5))
        .collect();
    let tiles: Vec<(&Map, &Style)> = picks
        .iter()
        .zip(&styles)
        .map(|(&i, s)| (&maps[i].1, s))
        .collect();
    panel(&tiles, 3)
        .unwrap()
        .write_png(&d.join("collision_panel.png"))
        .unwrap();
    let frames: Vec<Image> = maps
        .iter()
        .map(|(t, m)| render(m, &style(*t, true)).unwrap())
        .collect();
    write_gif(&d.join("collision.gif"), &frames, 12, &[Colormap::Magma]).unwrap();
    println!("wrote {} ({} frames)", d.display(), frames.len());
}
