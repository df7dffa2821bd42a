//! `#[derive(Choice)]`: implements `warpkit::choice::Choice` for an enum of unit variants.
//!
//! A variant's name is its identifier in kebab-case (`WendlandC2` → `wendland-c2`, as clap and
//! serde's `kebab-case` spell it), and its help is its doc comment on one line. The library's
//! option enums derive it so that a command line, a Python binding or an error message can list
//! and parse them without the library depending on a parser.

use proc_macro::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Expr, Fields, Lit, Meta, parse_macro_input};

#[proc_macro_derive(Choice)]
pub fn derive_choice(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let ident = &input.ident;
    let Data::Enum(data) = &input.data else {
        return syn::Error::new_spanned(&input, "Choice is derived for enums only")
            .to_compile_error()
            .into();
    };
    let mut variants = Vec::new();
    let mut names = Vec::new();
    let mut helps = Vec::new();
    for v in &data.variants {
        if !matches!(v.fields, Fields::Unit) {
            return syn::Error::new_spanned(v, "Choice needs unit variants")
                .to_compile_error()
                .into();
        }
        variants.push(&v.ident);
        names.push(kebab(&v.ident.to_string()));
        helps.push(doc(&v.attrs));
    }
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        impl #impl_generics ::warpkit::choice::Choice for #ident #ty_generics #where_clause {
            const ALL: &'static [Self] = &[#(Self::#variants),*];
            fn name(self) -> &'static str {
                match self { #(Self::#variants => #names),* }
            }
            fn help(self) -> &'static str {
                match self { #(Self::#variants => #helps),* }
            }
        }
    }
    .into()
}

/// `CubicSpline` → `cubic-spline`, `WendlandC2` → `wendland-c2`, `Group2` → `group2`: a dash
/// before an upper-case letter that follows a lower-case letter or a digit.
fn kebab(ident: &str) -> String {
    let mut out = String::new();
    let mut prev: Option<char> = None;
    for c in ident.chars() {
        if c.is_uppercase() {
            if prev.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit()) {
                out.push('-');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
        prev = Some(c);
    }
    out
}

/// The doc comment's lines, trimmed and joined by spaces.
fn doc(attrs: &[syn::Attribute]) -> String {
    let mut lines = Vec::new();
    for a in attrs {
        if let Meta::NameValue(nv) = &a.meta
            && nv.path.is_ident("doc")
            && let Expr::Lit(l) = &nv.value
            && let Lit::Str(s) = &l.lit
        {
            let line = s.value();
            let line = line.trim();
            if !line.is_empty() {
                lines.push(line.to_string());
            }
        }
    }
    lines.join(" ")
}
