use super::*;

/// Tick labels write exponents as superscripts: 10⁻⁴, 2¹⁵, 1.5×10⁻⁴, never
/// `1e-4`, `2^15` or `1.5e-4`.
#[test]
fn tick_labels_use_superscript_exponents() {
    assert_eq!(Scale::Log10.label(-4.0), "10⁻⁴");
    assert_eq!(Scale::Log10.label(0.0), "10⁰");
    assert_eq!(Scale::Log10.label(12.0), "10¹²");
    assert_eq!(Scale::Log2.label(15.0), "2¹⁵");
    assert_eq!(Scale::Log2.label(-3.0), "2⁻³");
    // Between powers: empty on long ranges, the value on short ones.
    assert_eq!(Scale::Log10.label(0.5), "");
    assert_eq!(Scale::Log10.label(-3.5), "");
    assert_eq!(Scale::Log2.label(11.2), "");
    // A log axis holds at least two whole powers: a short one is widened to them.
    assert_eq!(Scale::Log2.extent(11.1, 11.9), (11.0, 12.0));
    assert_eq!(Scale::Log10.extent(1.2, 2.5), (1.0, 3.0));
    assert_eq!(Scale::Log10.extent(-4.2, -1.9), (-4.2, -1.9));
    assert_eq!(Scale::Linear.extent(0.3, 0.4), (0.3, 0.4));
    // Linear: plain decimals in [10⁻², 10⁵), scientific outside.
    assert_eq!(Scale::Linear.label(0.25), "0.25");
    assert_eq!(Scale::Linear.label(1200.0), "1200");
    assert_eq!(Scale::Linear.label(0.0), "0");
    assert_eq!(Scale::Linear.label(1.5e-4), "1.5×10⁻⁴");
    assert_eq!(Scale::Linear.label(-2.5e6), "−2.5×10⁶");
    assert_eq!(Scale::Linear.label(1e-3), "10⁻³");
    assert_eq!(n_label(1 << 18), "2¹⁸");
    assert_eq!(n_label(3000), "3000");
    // The mantissa's rounding carries into the exponent.
    assert_eq!(scientific(9.96e-5, 1), "10⁻⁴");
    for v in [1e-9, 3.3e-7, 2.0e8, 7.77e12] {
        let l = Scale::Linear.label(v);
        assert!(!l.contains('e') && !l.contains('^'), "{v}: {l}");
    }
}

#[test]
fn bars_spanning_two_decades_get_a_log_axis() {
    assert_eq!(bar_scale([1.0, 5.0, 99.0].into_iter()), Scale::Linear);
    assert_eq!(bar_scale([0.3, 5.0, 30.0].into_iter()), Scale::Log10);
    // Zero, negative and missing (NaN) bars do not count.
    assert_eq!(
        bar_scale([0.0, -1.0, f64::NAN, 2.0, 3.0].into_iter()),
        Scale::Linear
    );
    assert_eq!(bar_scale(std::iter::empty()), Scale::Linear);
}

/// A chart of every marker and dash, and bars over four decades, render to PNG and SVG.
#[test]
fn charts_with_markers_and_log_bars_render() {
    let dir = std::env::temp_dir().join(format!("warpkit-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let series = (0..6)
        .map(|k| {
            let pts = (1..5).map(|x| (x as f64, (k * x) as f64 + 1.0)).collect();
            Series::data(&format!("s{k}"), pts)
        })
        .collect();
    let chart = LineChart {
        title: "markers, N = 2¹⁰, CPU".into(),
        x: Axis::new("x", Scale::Linear),
        y: Axis::new("y", Scale::Log10),
        series,
    };
    line_chart(&dir, "lines", &chart).unwrap();
    let bars = BarChart {
        title: "bars, N = 2¹⁰, CPU".into(),
        y_label: "ms".into(),
        categories: vec!["a".into(), "b".into()],
        series: vec![
            ("x".into(), vec![0.01, 120.0]),
            ("y".into(), vec![3.0, f64::NAN]),
        ],
    };
    let [png, svg] = bar_chart(&dir, "bars", &bars).unwrap();
    assert!(std::fs::metadata(png).unwrap().len() > 1000);
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(
        svg.contains("10⁻²") && svg.contains("10²"),
        "log axis labels"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
