//! warpkit's attribute macros: [`macro@kernel`] and [`macro@gpu_only`].
//!
//! Both expand differently for the two builds of a device crate. The crate is compiled once for
//! `nvptx64-nvidia-cuda` (the PTX module) and once for the host (formulas for the CPU backend, and
//! the kernels' launch contracts). The expansion checks `cfg(target_arch = "nvptx64")` itself, so
//! a kernel is written once, with no `cfg` at the use site.
//!
//! The expansions name the device layer as `::warpkit_gpu`: a crate using these attributes
//! depends on `warpkit-gpu` (which re-exports both).

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, Pat, Type, parse_macro_input};

/// Marks a device function as a kernel entry point.
///
/// ```ignore
/// use warpkit_gpu::kernel;
///
/// /// y[i] = a·x[i] + y[i] for i < n.
/// #[kernel]
/// pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u32) { /* ... */ }
/// ```
///
/// - **nvptx64**: the function becomes `#[unsafe(no_mangle)] extern "ptx-kernel"`, the PTX
///   `.entry saxpy`.
/// - **host**: the function's name becomes a unit struct implementing `warpkit_gpu::Kernel`,
///   the contract: its PTX name and its parameters as types, `*const T` as `DevPtr<T>`, `*mut T`
///   as `DevMut<T>`, other types by value. The runtime launches it with a tuple of arguments that
///   must match those types (`gpu.launch(saxpy, cfg, (a, &x, &mut y, n))`): a wrong count, order,
///   element type or mutability does not compile. The body is kept as a hidden host function
///   (`__kernel_body_saxpy`), so the host build type-checks and lints it too; it is never called.
///   The contract is also entered in `warpkit_gpu::KERNELS`, which tests compare with the PTX.
///
/// `#[kernel(launch_bounds(MAX_THREADS, MIN_BLOCKS))]` is CUDA's `__launch_bounds__`: the entry
/// gets `.maxntid MAX_THREADS, 1, 1` and `.minnctapersm MIN_BLOCKS`, so ptxas holds the registers
/// to what `MIN_BLOCKS` resident blocks allow, and the runtime refuses larger blocks.
///
/// Parameters must be named by plain identifiers and be raw pointers or by-value types (scalars
/// and `#[repr(C)]` Pod structs); the function must be `unsafe` (it takes raw pointers on trust),
/// not generic and not `async`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let bounds = match parse_kernel_attr(attr.into()) {
        Ok(b) => b,
        Err(e) => return e.to_compile_error().into(),
    };
    let f = parse_macro_input!(item as ItemFn);
    match expand_kernel(f, bounds) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// `launch_bounds(max_threads, min_blocks)`: two constant `u32` expressions.
struct Bounds {
    max_threads: syn::Expr,
    min_blocks: syn::Expr,
}

fn parse_kernel_attr(attr: TokenStream2) -> syn::Result<Option<Bounds>> {
    if attr.is_empty() {
        return Ok(None);
    }
    let usage = "#[kernel] takes nothing or `launch_bounds(max_threads, min_blocks_per_sm)`";
    let meta: syn::Meta =
        syn::parse2(attr.clone()).map_err(|_| syn::Error::new(attr.span(), usage))?;
    let syn::Meta::List(list) = &meta else {
        return Err(syn::Error::new(meta.span(), usage));
    };
    if !list.path.is_ident("launch_bounds") {
        return Err(syn::Error::new(list.path.span(), usage));
    }
    let args = list.parse_args_with(
        syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
    )?;
    let mut it = args.into_iter();
    match (it.next(), it.next(), it.next()) {
        (Some(max_threads), Some(min_blocks), None) => Ok(Some(Bounds {
            max_threads,
            min_blocks,
        })),
        _ => Err(syn::Error::new(list.span(), usage)),
    }
}

fn expand_kernel(f: ItemFn, bounds: Option<Bounds>) -> syn::Result<TokenStream2> {
    let sig = &f.sig;
    if sig.unsafety.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span,
            "a #[kernel] must be an `unsafe fn`: it dereferences pointers the host passes on trust",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "a #[kernel] cannot be generic: a PTX entry has one concrete signature (call a \
             generic function from several kernels instead)",
        ));
    }
    if sig.asyncness.is_some() || sig.constness.is_some() || sig.abi.is_some() {
        return Err(syn::Error::new(
            sig.span(),
            "a #[kernel] is a plain `unsafe fn`: no `async`, `const` or `extern` (the macro adds \
             `extern \"ptx-kernel\"`)",
        ));
    }
    if !matches!(sig.output, syn::ReturnType::Default) {
        return Err(syn::Error::new(
            sig.output.span(),
            "a #[kernel] returns nothing: write results through `*mut` parameters",
        ));
    }

    let name = &sig.ident;
    let vis = &f.vis;
    let block = &f.block;
    let inputs = &sig.inputs;
    let (docs, others): (Vec<_>, Vec<_>) = f.attrs.iter().partition(|a| a.path().is_ident("doc"));

    let mut param_types = Vec::new();
    let mut param_infos = Vec::new();
    for arg in inputs {
        let FnArg::Typed(pt) = arg else {
            return Err(syn::Error::new(arg.span(), "a #[kernel] has no `self`"));
        };
        let Pat::Ident(id) = &*pt.pat else {
            return Err(syn::Error::new(
                pt.pat.span(),
                "#[kernel] parameters are plain identifiers (the contract names them)",
            ));
        };
        let pname = id.ident.to_string();
        match bare(&pt.ty) {
            Type::Ptr(p) => {
                let elem = &p.elem;
                let (ty, mutable) = if p.mutability.is_some() {
                    (quote!(::warpkit_gpu::DevMut<#elem>), true)
                } else {
                    (quote!(::warpkit_gpu::DevPtr<#elem>), false)
                };
                param_infos.push(quote!(::warpkit_gpu::Param::pointer(#pname, #mutable)));
                param_types.push(ty);
            }
            Type::Reference(r) => {
                return Err(syn::Error::new(
                    r.span(),
                    "#[kernel] parameters cannot be references: the host passes device \
                     pointers; use `*const T` or `*mut T`",
                ));
            }
            ty => {
                param_infos.push(quote!(::warpkit_gpu::Param::value::<#ty>(#pname)));
                param_types.push(quote!(#ty));
            }
        }
    }
    // A launch's safety is the kernel's documented contract: say so where the doc does not.
    let has_safety = docs.iter().any(|a| {
        matches!(&a.meta, syn::Meta::NameValue(nv)
            if quote!(#nv).to_string().contains("# Safety"))
    });
    let safety_doc = if has_safety {
        quote!()
    } else {
        // (clippy does not read doc attributes made by a macro: the allow keeps it quiet.)
        quote! {
            ///
            /// # Safety
            /// Every pointer must be valid for what this kernel reads and writes under the
            /// launch's grid, as its documentation states.
            #[allow(clippy::missing_safety_doc)]
        }
    };
    let body_name = format_ident!("__kernel_body_{}", name);
    let registry = format_ident!("__WARPKIT_KERNEL_{}", name.to_string().to_uppercase());
    let name_str = name.to_string();
    let contract_doc = format!(
        " The launch contract of the PTX kernel `{name_str}`; launch it through the runtime \
         with a tuple of its parameters."
    );

    // The bounds travel to the PTX as a global that `warpkit-build` turns into the entry's
    // `.maxntid` / `.minnctapersm` (rustc has no attribute for them), and to the contract.
    let (device_bounds, host_bounds) = match &bounds {
        Some(Bounds {
            max_threads,
            min_blocks,
        }) => {
            let global = format_ident!("__warpkit_launch_bounds_{}", name);
            (
                quote! {
                    #[cfg(target_arch = "nvptx64")]
                    #[doc(hidden)]
                    #[unsafe(no_mangle)]
                    #[used]
                    #[allow(non_upper_case_globals)]
                    pub static #global: [u32; 2] = [#max_threads, #min_blocks];
                },
                quote!(::core::option::Option::Some(::warpkit_gpu::LaunchBounds {
                    max_threads: #max_threads,
                    min_blocks: #min_blocks,
                })),
            )
        }
        None => (quote!(), quote!(::core::option::Option::None)),
    };

    Ok(quote! {
        #device_bounds

        #[cfg(target_arch = "nvptx64")]
        #(#docs)*
        #safety_doc
        #(#others)*
        #[unsafe(no_mangle)]
        #vis unsafe extern "ptx-kernel" fn #name(#inputs) #block

        #[cfg(not(target_arch = "nvptx64"))]
        #(#docs)*
        ///
        #[doc = #contract_doc]
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #vis struct #name;

        #[cfg(not(target_arch = "nvptx64"))]
        impl ::warpkit_gpu::Kernel for #name {
            const NAME: &'static str = #name_str;
            type Params = (#(#param_types,)*);
            const PARAMS: &'static [::warpkit_gpu::Param] = &[#(#param_infos),*];
            const LAUNCH_BOUNDS: ::core::option::Option<::warpkit_gpu::LaunchBounds> =
                #host_bounds;
        }

        #[cfg(not(target_arch = "nvptx64"))]
        #[::warpkit_gpu::__linkme::distributed_slice(::warpkit_gpu::KERNELS)]
        #[linkme(crate = ::warpkit_gpu::__linkme)]
        #[allow(non_upper_case_globals)]
        static #registry: ::warpkit_gpu::KernelInfo = ::warpkit_gpu::KernelInfo {
            name: #name_str,
            module: ::core::module_path!(),
            params: <#name as ::warpkit_gpu::Kernel>::PARAMS,
            launch_bounds: <#name as ::warpkit_gpu::Kernel>::LAUNCH_BOUNDS,
        };

        // The body on the host: type-checked and linted like the rest of the crate, never called.
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc(hidden)]
        #[allow(dead_code, non_snake_case, clippy::too_many_arguments)]
        #(#others)*
        #vis unsafe fn #body_name(#inputs) #block
    })
}

/// The type inside the invisible groups that `macro_rules!` wraps around a `$t:ty` it forwards (and
/// inside parentheses), so a kernel generated by a declarative macro maps like a written one.
fn bare(ty: &Type) -> &Type {
    match ty {
        Type::Group(g) => bare(&g.elem),
        Type::Paren(p) => bare(&p.elem),
        t => t,
    }
}

/// Marks a device-layer function that exists only on the GPU (an intrinsic, an `asm!` wrapper).
///
/// On nvptx64 the function is unchanged. On the host its body is replaced by a panic naming it,
/// so code that calls it — kernels, kept on the host for type checking — still compiles, and a
/// host call fails loudly instead of computing something else.
#[proc_macro_attribute]
pub fn gpu_only(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return syn::Error::new(Span::call_site(), "#[gpu_only] takes no arguments")
            .to_compile_error()
            .into();
    }
    let f = parse_macro_input!(item as ItemFn);
    let ItemFn {
        attrs, vis, sig, ..
    } = &f;
    let name = sig.ident.to_string();
    let msg = format!("`{name}` runs on the GPU only (it was called on the host)");
    // Host parameters are unused: name them `_` to keep the signature without warnings.
    let mut host_sig = sig.clone();
    for arg in host_sig.inputs.iter_mut() {
        if let FnArg::Typed(pt) = arg {
            *pt.pat = syn::parse_quote!(_);
        }
    }
    quote! {
        #[cfg(target_arch = "nvptx64")]
        #f

        #[cfg(not(target_arch = "nvptx64"))]
        #(#attrs)*
        #[allow(unused_variables)]
        #vis #host_sig {
            ::core::panic!(#msg)
        }
    }
    .into()
}
