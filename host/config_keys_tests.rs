use super::*;
use crate::fem::case::{CaseFile, FixedSpec, GroupMaterial, MaterialSpec, TractionSpec};
use crate::nbody::run::{IcConfig, OutputConfig, RunConfig, StepConfig};
use crate::planet::cli as planet;
use crate::planet::impact::cli as impact;
use crate::sph::hydro::cli as sph;
use std::collections::BTreeMap;

/// docs/keys.md as committed, built in: the test executables also run away from the tree.
const COMMITTED: &str = include_str!("../docs/keys.md");

/// docs/keys.md is the page that the structs generate now.
#[test]
fn the_committed_page_is_up_to_date() {
    let committed = COMMITTED;
    let fresh = page();
    if committed != fresh {
        let line = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(fresh.lines().count()));
        panic!(
            "docs/keys.md differs from the case structs' keys (first at line {}): regenerate it \
             with `cargo run --release -- info --keys > docs/keys.md`",
            line + 1
        );
    }
}

/// One command's page, parsed: each table's header, its keys and its whole text.
fn tables_on_page(name: &str) -> BTreeMap<String, (Vec<String>, String)> {
    let text = command_page(name).unwrap();
    let mut out = BTreeMap::new();
    for section in text.split("\n### ").skip(1) {
        let (header, body) = section.split_once('\n').unwrap();
        let keys = body
            .lines()
            .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
            .map(str::to_string)
            .collect();
        out.insert(header.to_string(), (keys, body.to_string()));
    }
    out
}

/// Every key that serde reads (its own field list, aliases included) is on the page, in the
/// table of its struct, and the page shows no key that serde does not read: a key left off the
/// page, or one renamed in one place only, fails here.
#[test]
fn every_key_serde_reads_is_on_the_page() {
    type Fields = fn() -> &'static [&'static str];
    let expected: &[(&str, &str, Fields)] = &[
        ("nbody", "", serde_fields::<RunConfig>),
        ("nbody", "ic", serde_fields::<IcConfig>),
        ("nbody", "run", serde_fields::<StepConfig>),
        ("nbody", "output", serde_fields::<OutputConfig>),
        ("fem", "", serde_fields::<CaseFile>),
        ("fem", "default_material", serde_fields::<MaterialSpec>),
        ("fem", "material", serde_fields::<GroupMaterial>),
        ("fem", "fixed", serde_fields::<FixedSpec>),
        ("fem", "traction", serde_fields::<TractionSpec>),
        ("sph", "", serde_fields::<sph::SphConfig>),
        ("sph", "ic", serde_fields::<sph::IcConfig>),
        ("sph", "run", serde_fields::<sph::RunSection>),
        ("sph", "output", serde_fields::<sph::OutputSection>),
        ("planet", "", serde_fields::<planet::PlanetConfig>),
        ("planet", "planet", serde_fields::<planet::PlanetSection>),
        ("planet", "planet.layers", serde_fields::<planet::LayerSpec>),
        (
            "planet",
            "particles",
            serde_fields::<planet::ParticlesSection>,
        ),
        ("planet", "settle", serde_fields::<planet::SettleSection>),
        ("planet", "output", serde_fields::<planet::OutputSection>),
        ("impact", "", serde_fields::<impact::ImpactConfig>),
        ("impact", "target", serde_fields::<impact::BodySection>),
        ("impact", "target.layers", serde_fields::<planet::LayerSpec>),
        ("impact", "impactor", serde_fields::<impact::BodySection>),
        (
            "impact",
            "impactor.layers",
            serde_fields::<planet::LayerSpec>,
        ),
        (
            "impact",
            "particles",
            serde_fields::<impact::ParticlesSection>,
        ),
        ("impact", "settle", serde_fields::<impact::SettleSection>),
        ("impact", "impact", serde_fields::<impact::ImpactSection>),
        ("impact", "run", serde_fields::<impact::RunSection>),
        ("impact", "output", serde_fields::<impact::OutputSection>),
    ];
    let headers = |path: &str| {
        if path.is_empty() {
            vec!["top level".to_string()]
        } else {
            vec![format!("`[{path}]`"), format!("`[[{path}]]`")]
        }
    };
    for c in &COMMANDS {
        let page = tables_on_page(c.name);
        let mut seen = 0;
        for (_, path, fields) in expected.iter().filter(|e| e.0 == c.name) {
            let fields = fields();
            assert!(!fields.is_empty(), "{} {path}: no serde fields", c.name);
            let found = headers(path).into_iter().find_map(|h| page.get(&h));
            let (keys, body) = match found {
                Some((k, b)) => {
                    seen += 1;
                    (k.clone(), b.clone())
                }
                // A top level that holds only tables has no table of its own.
                None if path.is_empty() => (Vec::new(), String::new()),
                None => panic!("{}: no table [{path}] on the page", c.name),
            };
            for f in fields {
                let nested = if path.is_empty() {
                    f.to_string()
                } else {
                    format!("{path}.{f}")
                };
                let is_table = headers(&nested).iter().any(|h| page.contains_key(h));
                assert!(
                    keys.iter().any(|k| k == f) || is_table || body.contains(&format!("`{f}`")),
                    "{} [{path}]: serde reads `{f}`, which the page does not show",
                    c.name
                );
            }
            for k in &keys {
                assert!(
                    fields.contains(&k.as_str()),
                    "{} [{path}]: the page shows `{k}`, which serde does not read",
                    c.name
                );
            }
        }
        assert_eq!(
            seen,
            page.len(),
            "{}: the page has tables this test does not know: {:?}",
            c.name,
            page.keys().collect::<Vec<_>>()
        );
    }
}

/// A case file of every default the page shows, read back by the command's own struct.
fn documented_defaults(c: &CaseCommand) -> toml::Table {
    let mut doc = toml::Table::new();
    for t in tables(c).iter().filter(|t| !t.array) {
        let mut here = toml::Table::new();
        for k in &t.keys {
            if let DefaultValue::Value(v) = &k.default {
                // As shown, too: TOML that reads back as the value.
                let shown = format!("v = {}", inline(v, &k.order));
                let read: toml::Table = toml::from_str(&shown).unwrap();
                assert_eq!(&read["v"], v, "{} {}", c.name, k.name);
                here.insert(k.name.clone(), v.clone());
            }
        }
        if let Some(absent) = &t.absent {
            here = absent.clone();
        }
        if here.is_empty() {
            continue;
        }
        let mut at = &mut doc;
        for p in &t.path {
            at = at
                .entry(p.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                .as_table_mut()
                .unwrap();
        }
        at.extend(here);
    }
    doc
}

fn defaults_read_back<T: DeserializeOwned + Default + PartialEq + std::fmt::Debug>(name: &str) {
    let c = COMMANDS.iter().find(|c| c.name == name).unwrap();
    let doc = documented_defaults(c);
    let text = toml::to_string(&doc).unwrap();
    let read: T = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
    assert_eq!(read, T::default(), "{name}: the page's defaults\n{text}");
}

/// The defaults on the page are the program's: written out as a case file, they read back as
/// the command's default case (and are valid TOML of the right types).
#[test]
fn the_documented_defaults_are_the_defaults() {
    defaults_read_back::<RunConfig>("nbody");
    defaults_read_back::<CaseFile>("fem");
    defaults_read_back::<sph::SphConfig>("sph");
    defaults_read_back::<planet::PlanetConfig>("planet");
    defaults_read_back::<impact::ImpactConfig>("impact");
    // Not vacuous: most keys have a value.
    let n = documented_defaults(&COMMANDS[0]);
    assert_eq!(n["run"]["dt"].as_float(), Some(0.02));
    assert_eq!(n["ic"]["kind"].as_str(), Some("collision"));
}

/// Every key and every table says what it is, and keys appear in the order of their struct.
#[test]
fn every_key_is_described_in_declaration_order() {
    for c in &COMMANDS {
        let root = (c.schema)().to_value();
        assert!(!doc_of(&root).is_empty(), "{}", c.name);
        let structs = root["$defs"].as_object().unwrap().iter();
        for (name, s) in std::iter::once((&"the top level".to_string(), &root)).chain(structs) {
            assert!(
                !is_table(s) || s.get("x-order").is_some(),
                "{} {name}: its struct needs \
                 #[schemars(transform = crate::config_keys::field_order::<Self>)]",
                c.name
            );
        }
        for t in tables(c) {
            // The top level's doc comment opens the command's section.
            assert!(
                !t.doc.is_empty() || t.path.is_empty(),
                "{} {}: no doc comment",
                c.name,
                t.header()
            );
            for k in &t.keys {
                assert!(
                    k.doc.len() > 8,
                    "{} {} `{}`: no doc comment on the field",
                    c.name,
                    t.header(),
                    k.name
                );
            }
        }
    }
    let run = &tables(&COMMANDS[0])[1];
    let names: Vec<&str> = run.keys.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(run.path, ["run"]);
    assert_eq!(names[..3], ["t_end", "dt", "eps"]);
}

#[test]
fn types_defaults_and_values_read_as_toml() {
    let key = |command: usize, table: &str, name: &str| {
        tables(&COMMANDS[command])
            .into_iter()
            .find(|t| t.path.join(".") == table)
            .and_then(|t| t.keys.into_iter().find(|k| k.name == name))
            .unwrap_or_else(|| panic!("{table}.{name}"))
    };
    let forces = key(0, "run", "forces");
    assert_eq!(forces.ty, "string");
    let values: Vec<&str> = forces.values.iter().map(|v| v.0.as_str()).collect();
    assert_eq!(values, ["auto", "direct", "tree"]);
    assert!(forces.values[1].1.contains("direct summation"));
    assert_eq!(key(0, "ic", "inclination_deg").ty, "array of 2 floats");
    assert_eq!(key(0, "ic", "n").ty, "integer ≥ 0");
    assert_eq!(key(0, "ic", "file").default, DefaultValue::Unset);
    assert_eq!(key(0, "output", "dir").ty, "string");
    let components = key(1, "fixed", "components");
    assert_eq!(components.ty, "string or array of strings");
    assert_eq!(components.values.len(), 4);
    assert_eq!(key(1, "material", "young").default, DefaultValue::Required);
    assert_eq!(key(1, "", "formulation").values.len(), 2);
    let layers = key(3, "planet", "layers");
    assert_eq!(layers.ty, "array of tables");
    assert_eq!(
        layers.default,
        DefaultValue::Value(
            toml::from_str::<toml::Table>(
                "v = [{ material = \"iron\", fraction = 0.3 }, \
                 { material = \"granite\", fraction = 0.7 }]"
            )
            .unwrap()["v"]
                .clone()
        )
    );
    let target = tables(&COMMANDS[4])
        .into_iter()
        .find(|t| t.path == ["target"])
        .unwrap();
    assert_eq!(target.absent.unwrap()["mass_earth"].as_float(), Some(0.887));
}

#[test]
fn serde_fields_lists_each_field_with_its_aliases() {
    assert_eq!(
        serde_fields::<MaterialSpec>(),
        ["E", "young", "nu", "poisson"]
    );
    assert_eq!(serde_fields::<f64>(), [] as [&str; 0]);
    assert_eq!(serde_fields::<crate::nbody::run::IcKind>(), [] as [&str; 0]);
}

#[test]
fn the_page_renders_rustdoc_links_as_code_and_escapes_pipes() {
    assert_eq!(
        unlink("the tree above [`CPU_DIRECT_MAX`] particles"),
        "the tree above `CPU_DIRECT_MAX` particles"
    );
    assert_eq!(unlink("`[0, L)` and [`a`"), "`[0, L)` and [`a`");
    let nbody = command_page("nbody").unwrap();
    assert!(nbody.contains("`η·sqrt(ε/\\|a\\|)`"), "{nbody}");
    assert!(!nbody.contains("[`"));
    assert!(command_page("gravity").is_none());
    assert!(page().starts_with("# Case-file keys\n"));
}
