//! The reference of every case-file key (docs/keys.md, `warpkit info --keys`), generated from the
//! serde structs that read the files: their doc comments, types, defaults and enum variants, as
//! schemars derives them into a JSON schema. Each key is defined once, in its struct; the page is
//! rendered from it, and a test compares the committed page with a fresh rendering.
//!
//! A struct of a case file derives `schemars::JsonSchema` beside `Deserialize` and carries
//! `#[schemars(transform = crate::config_keys::field_order::<Self>)]`, which keeps its keys in
//! declaration order: the schema's maps sort them by name, and serde_json's `preserve_order`,
//! which would not, would also reorder the keys of every JSON file the workspace writes. Its
//! enums derive `JsonSchema` too; their variants' doc comments describe the values.

use schemars::{JsonSchema, Schema};
use serde::de::{self, DeserializeOwned, Visitor};
use serde_json::Value;

/// A command that reads a TOML case file.
pub struct CaseCommand {
    /// The subcommand, `warpkit NAME`.
    pub name: &'static str,
    /// The option that names the file.
    pub option: &'static str,
    /// Its page under docs/.
    pub page: &'static str,
    schema: fn() -> Schema,
}

fn schema<T: JsonSchema>() -> Schema {
    schemars::schema_for!(T)
}

/// The commands with case files, in the order of the page.
pub const COMMANDS: [CaseCommand; 5] = [
    CaseCommand {
        name: "nbody",
        option: "--config",
        page: "nbody.md",
        schema: schema::<crate::nbody::run::RunConfig>,
    },
    CaseCommand {
        name: "fem",
        option: "--case",
        page: "fem.md",
        schema: schema::<crate::fem::case::CaseFile>,
    },
    CaseCommand {
        name: "sph",
        option: "--config",
        page: "sph.md",
        schema: schema::<crate::sph::hydro::cli::SphConfig>,
    },
    CaseCommand {
        name: "planet",
        option: "--config",
        page: "planet.md",
        schema: schema::<crate::planet::cli::PlanetConfig>,
    },
    CaseCommand {
        name: "impact",
        option: "--config",
        page: "impact.md",
        schema: schema::<crate::planet::impact::cli::ImpactConfig>,
    },
];

/// The names of [`COMMANDS`].
pub fn command_names() -> Vec<&'static str> {
    COMMANDS.iter().map(|c| c.name).collect()
}

/// docs/keys.md: every command's keys.
pub fn page() -> String {
    let mut out = String::from(
        "# Case-file keys\n\n\
         <!-- Generated from the case files' serde structs (host/config_keys.rs); do not edit. \
         Regenerate: cargo run --release -- info --keys > docs/keys.md -->\n\n\
         Every key of the TOML files that `warpkit nbody`, `fem`, `sph`, `planet` and `impact` \
         read, generated from the structs that read them (their doc comments, types and \
         defaults), so that this page cannot drift from the program; `warpkit info --keys \
         [COMMAND]` prints it. Every key is optional unless its default says *required*; \
         *unset* means no value, and the description says what its absence does. Unknown keys \
         are errors.\n",
    );
    for c in &COMMANDS {
        out.push('\n');
        out += &render(c);
    }
    out
}

/// The keys of one command (`nbody`, `fem`, …), or `None` for a name without a case file.
pub fn command_page(name: &str) -> Option<String> {
    COMMANDS.iter().find(|c| c.name == name).map(render)
}

/// How a key's value is given when its key is absent.
#[derive(Clone, Debug, PartialEq)]
enum DefaultValue {
    /// A value (TOML).
    Value(toml::Value),
    /// The key must be given.
    Required,
    /// No value: the description says what absence means.
    Unset,
}

/// One key of a table.
#[derive(Clone, Debug)]
struct Key {
    name: String,
    ty: String,
    default: DefaultValue,
    /// Enum variants: name and doc comment (empty where none).
    values: Vec<(String, String)>,
    doc: String,
    /// The declared order of the keys of a table value (`layers`' `material`, `fraction`).
    order: Vec<String>,
}

/// One TOML table: `[ic]`, `[[material]]`, `[[planet.layers]]`, or the file's top level.
#[derive(Clone, Debug)]
struct Table {
    /// Dotted path from the top level (empty for the top level itself).
    path: Vec<String>,
    /// An array of tables (`[[material]]`).
    array: bool,
    doc: String,
    keys: Vec<Key>,
    /// The table's keys when the table itself is absent, where they differ from the keys'
    /// own defaults (a section whose default is not its fields' defaults).
    absent: Option<toml::Table>,
}

/// Where a table sits in its file.
struct Place<'a> {
    path: Vec<String>,
    array: bool,
    doc: String,
    /// Its value when absent (the enclosing struct's default).
    absent: Option<&'a Value>,
}

/// A TOML value on one line, the keys of its tables in `order` (TOML's own maps sort them).
fn inline(v: &toml::Value, order: &[String]) -> String {
    match v {
        toml::Value::Array(a) => {
            let items: Vec<String> = a.iter().map(|x| inline(x, order)).collect();
            format!("[{}]", items.join(", "))
        }
        toml::Value::Table(t) => {
            let pairs: Vec<String> = in_order(t, order)
                .map(|(k, x)| format!("{k} = {}", inline(x, order)))
                .collect();
            format!("{{ {} }}", pairs.join(", "))
        }
        v => v.to_string(),
    }
}

/// A table's entries in `order` (unknown keys last).
fn in_order<'a>(
    t: &'a toml::Table,
    order: &[String],
) -> impl Iterator<Item = (&'a String, &'a toml::Value)> {
    let mut e: Vec<_> = t.iter().collect();
    e.sort_by_key(|(k, _)| order.iter().position(|o| o == *k).unwrap_or(usize::MAX));
    e.into_iter()
}

impl Table {
    fn header(&self) -> String {
        match (self.path.is_empty(), self.array) {
            (true, _) => "top level".into(),
            (false, false) => format!("`[{}]`", self.path.join(".")),
            (false, true) => format!("`[[{}]]`", self.path.join(".")),
        }
    }
}

/// A command's tables, top level first, each followed by those nested in it.
fn tables(c: &CaseCommand) -> Vec<Table> {
    let root = (c.schema)().to_value();
    let mut out = Vec::new();
    let top = Place {
        path: Vec::new(),
        array: false,
        doc: String::new(),
        absent: None,
    };
    walk(&root, &root, top, &mut out);
    // The top level holds only tables in most files.
    out.retain(|t| !(t.path.is_empty() && t.keys.is_empty()));
    out
}

/// The object schema that `s` names: `$ref` followed, an `Option`'s null dropped.
fn resolve<'a>(root: &'a Value, s: &'a Value) -> &'a Value {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or_default();
        return resolve(root, &root["$defs"][name]);
    }
    for k in ["anyOf", "oneOf"] {
        if let Some(alts) = s.get(k).and_then(Value::as_array) {
            let not_null: Vec<&Value> = alts.iter().filter(|a| !is_null(a)).collect();
            if let [one] = not_null[..] {
                return resolve(root, one);
            }
        }
    }
    s
}

fn is_null(s: &Value) -> bool {
    s.get("type").and_then(Value::as_str) == Some("null")
}

fn is_table(s: &Value) -> bool {
    s.get("properties").is_some()
}

/// The element schema of an array of tables, if `s` is one.
fn table_items<'a>(root: &'a Value, s: &'a Value) -> Option<&'a Value> {
    let items = resolve(root, s.get("items")?);
    is_table(items).then_some(items)
}

/// A schema's doc comment on one line, rustdoc's link brackets removed.
fn doc_of(s: &Value) -> String {
    let text = s.get("description").and_then(Value::as_str).unwrap_or("");
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    unlink(&line)
}

/// "[`x`]" → "`x`": intra-doc links read as code on the page.
fn unlink(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("[`") {
        let inner = &rest[at + 2..];
        match inner.find("`]") {
            Some(end) if !inner[..end].contains('`') => {
                out += &rest[..at];
                out += &format!("`{}`", &inner[..end]);
                rest = &inner[end + 2..];
            }
            _ => {
                out += &rest[..at + 2];
                rest = inner;
            }
        }
    }
    out + rest
}

/// A JSON default as TOML (`None` for null: no value).
fn toml_of(v: &Value) -> Option<toml::Value> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) if n.is_f64() => toml::Value::Float(n.as_f64()?),
        Value::Number(n) => toml::Value::Integer(n.as_i64()?),
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(a) => toml::Value::Array(a.iter().filter_map(toml_of).collect()),
        Value::Object(o) => toml::Value::Table(
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), toml_of(v)?)))
                .collect(),
        ),
    })
}

/// The properties of an object schema in declaration order (`x-order`, from serde).
fn ordered(s: &Value) -> Vec<(&String, &Value)> {
    let Some(props) = s.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let order: Vec<&str> = s
        .get("x-order")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out: Vec<(&String, &Value)> = props.iter().collect();
    out.sort_by_key(|(k, _)| order.iter().position(|o| o == k).unwrap_or(usize::MAX));
    out
}

/// Appends the table of object schema `s` at `place` to `out`, then the tables nested in it.
fn walk(root: &Value, s: &Value, place: Place, out: &mut Vec<Table>) {
    let path = place.path;
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let at = out.len();
    out.push(Table {
        path: path.clone(),
        array: place.array,
        doc: place.doc,
        keys: Vec::new(),
        absent: None,
    });
    let mut nested = Vec::new();
    let mut keys = Vec::new();
    let mut own_defaults = toml::Table::new();
    for (name, prop) in ordered(s) {
        let target = resolve(root, prop);
        let sub = if is_table(target) {
            Some((target, false))
        } else {
            table_items(root, target).map(|t| (t, true))
        };
        let default = match prop.get("default").map(toml_of) {
            Some(Some(v)) => DefaultValue::Value(v),
            _ if required.contains(&name.as_str()) => DefaultValue::Required,
            _ => DefaultValue::Unset,
        };
        if let DefaultValue::Value(v) = &default {
            own_defaults.insert(name.clone(), v.clone());
        }
        if let Some((t, is_array)) = sub {
            let mut sub_path = path.clone();
            sub_path.push(name.clone());
            // The doc comment on the field, else the struct's own.
            let mut d = doc_of(prop);
            if d.is_empty() {
                d = doc_of(target);
            }
            let place = Place {
                path: sub_path,
                array: is_array,
                doc: d,
                absent: prop.get("default"),
            };
            nested.push((t, place));
            // A table at the top level is its own section only; one inside a table is also a
            // key of it (`layers = [...]` in `[planet]`).
            if path.is_empty() {
                continue;
            }
        }
        let (ty, values) = describe(root, prop);
        let order = match sub {
            Some((t, _)) => ordered(t).into_iter().map(|(k, _)| k.clone()).collect(),
            None => Vec::new(),
        };
        keys.push(Key {
            name: name.clone(),
            ty,
            default,
            values,
            doc: doc_of(prop),
            order,
        });
    }
    let absent = place.absent.and_then(toml_of).and_then(|v| match v {
        toml::Value::Table(t) if t != own_defaults => Some(t),
        _ => None,
    });
    out[at].keys = keys;
    out[at].absent = absent;
    for (t, place) in nested {
        walk(root, t, place, out);
    }
}

/// A value's type in TOML words, and its enum variants if it is one.
fn describe(root: &Value, s: &Value) -> (String, Vec<(String, String)>) {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or_default();
        return describe(root, &root["$defs"][name]);
    }
    if let Some(values) = variants(s) {
        return ("string".into(), values);
    }
    if is_table(s) {
        return ("table".into(), Vec::new());
    }
    for k in ["anyOf", "oneOf"] {
        if let Some(alts) = s.get(k).and_then(Value::as_array) {
            let mut names = Vec::new();
            let mut values = Vec::new();
            for a in alts.iter().filter(|a| !is_null(a)) {
                let (t, v) = describe(root, a);
                names.push(t);
                for x in v {
                    if !values.contains(&x) {
                        values.push(x);
                    }
                }
            }
            return (names.join(" or "), values);
        }
    }
    let types: Vec<&str> = match s.get("type") {
        Some(Value::String(t)) => vec![t],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let ty = types.into_iter().find(|t| *t != "null").unwrap_or("any");
    match ty {
        "number" => ("float".into(), Vec::new()),
        "integer" => {
            let min = s.get("minimum").and_then(Value::as_f64);
            let t = if min == Some(0.0) {
                "integer ≥ 0"
            } else {
                "integer"
            };
            (t.into(), Vec::new())
        }
        "array" => {
            let (item, values) = match s.get("items") {
                Some(items) => describe(root, items),
                None => ("value".into(), Vec::new()),
            };
            let len = match (s.get("minItems"), s.get("maxItems")) {
                (Some(a), Some(b)) if a == b => format!("{a} "),
                _ => String::new(),
            };
            (format!("array of {len}{}", plural(&item)), values)
        }
        t => (t.into(), Vec::new()),
    }
}

/// "float" → "floats", "integer ≥ 0" → "integers ≥ 0", "string or array of strings" as is.
fn plural(item: &str) -> String {
    if item.contains(" or ") {
        return format!("({item})");
    }
    match item.split_once(' ') {
        Some((head, rest)) => format!("{head}s {rest}"),
        None => format!("{item}s"),
    }
}

/// An enum's variants with their doc comments, if `s` is a string enum.
fn variants(s: &Value) -> Option<Vec<(String, String)>> {
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        return Some(
            e.iter()
                .filter_map(Value::as_str)
                .map(|v| (v.to_string(), String::new()))
                .collect(),
        );
    }
    let alts = s.get("oneOf")?.as_array()?;
    let mut out = Vec::new();
    for a in alts {
        if let Some(c) = a.get("const").and_then(Value::as_str) {
            out.push((c.to_string(), doc_of(a)));
        } else {
            out.extend(variants(a)?);
        }
    }
    Some(out)
}

/// A table cell: `|` escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn code(s: &str) -> String {
    format!("`{s}`")
}

/// One command's section of the page.
fn render(c: &CaseCommand) -> String {
    let root = (c.schema)().to_value();
    let mut out = format!("## `warpkit {} {} FILE`\n\n", c.name, c.option);
    out += &format!("{} More: [{}]({}).\n", doc_of(&root), c.page, c.page);
    for t in tables(c) {
        out += &format!("\n### {}\n\n", t.header());
        if !t.doc.is_empty() {
            out += &format!("{}\n\n", t.doc);
        }
        if let Some(absent) = &t.absent {
            let order: Vec<String> = t
                .keys
                .iter()
                .flat_map(|k| std::iter::once(k.name.clone()).chain(k.order.iter().cloned()))
                .collect();
            let keys: Vec<String> = in_order(absent, &order)
                .map(|(k, v)| code(&format!("{k} = {}", inline(v, &order))))
                .collect();
            out += &format!(
                "Without this table: {}. With it, its absent keys take the defaults below.\n\n",
                cell(&keys.join(", "))
            );
        }
        out += "| key | type | default | values | description |\n";
        out += "| --- | --- | --- | --- | --- |\n";
        for k in &t.keys {
            let default = match &k.default {
                DefaultValue::Value(v) => code(&inline(v, &k.order)),
                DefaultValue::Required => "*required*".into(),
                DefaultValue::Unset => "*unset*".into(),
            };
            let values: Vec<String> = k.values.iter().map(|(v, _)| code(v)).collect();
            out += &format!(
                "| {} | {} | {} | {} | {} |\n",
                code(&k.name),
                cell(&k.ty),
                cell(&default),
                values.join(", "),
                cell(&k.doc)
            );
        }
        // The values' own doc comments, where they have any.
        for k in t
            .keys
            .iter()
            .filter(|k| k.values.iter().any(|v| !v.1.is_empty()))
        {
            out += &format!("\n{}:\n", code(&k.name));
            for (v, d) in &k.values {
                out += &match d.is_empty() {
                    true => format!("- {}\n", code(v)),
                    false => format!("- {}: {d}\n", code(v)),
                };
            }
        }
    }
    out
}

/// A schemars transform for `#[schemars(transform = field_order::<Self>)]`: records the order
/// in which `T` declares its keys (serde's own list), which the schema's sorted maps lose.
pub fn field_order<T: DeserializeOwned>(schema: &mut Schema) {
    schema.insert("x-order".into(), serde_fields::<T>().to_vec().into());
}

/// Every name that struct `T` accepts as a key, in declaration order, its aliases beside each
/// field: the list serde's derive hands to `deserialize_struct`, read by a deserializer that
/// stops there. Empty for a type that is no struct.
pub fn serde_fields<T: DeserializeOwned>() -> &'static [&'static str] {
    match T::deserialize(FieldProbe) {
        Err(Probed(Some(fields))) => fields,
        _ => &[],
    }
}

struct FieldProbe;

#[derive(Debug)]
struct Probed(Option<&'static [&'static str]>);

impl std::fmt::Display for Probed {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("field probe")
    }
}

impl std::error::Error for Probed {}

impl de::Error for Probed {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Probed(None)
    }
}

impl<'de> de::Deserializer<'de> for FieldProbe {
    type Error = Probed;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Probed> {
        Err(Probed(None))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Probed> {
        Err(Probed(Some(fields)))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
#[path = "config_keys_tests.rs"]
mod tests;
