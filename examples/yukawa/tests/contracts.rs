//! The example's `#[kernel]` contracts against its own PTX, on the CPU (as warpkit's
//! tests/contracts.rs does for warpkit's): a launch is type-checked against the contract, so a
//! contract that drifted from the PTX `.entry` would otherwise fail only on a GPU.

use warpkit_gpu::{KERNELS, KernelInfo, ptx_entries};

const CRATE: &str = "warpkit_example_yukawa_kernels";

fn ours() -> Vec<&'static KernelInfo> {
    // Naming the kernels crate links it (and so its registry entries) into this test.
    let _ = warpkit_example_yukawa::kernels::kernels::yukawa_group;
    KERNELS.iter().filter(|k| k.krate() == CRATE).collect()
}

#[test]
fn every_contract_matches_its_ptx_entry() {
    let entries = ptx_entries(warpkit_example_yukawa::PTX);
    let contracts = ours();
    let mut names: Vec<&str> = contracts.iter().map(|c| c.name).collect();
    names.sort();
    assert_eq!(names, ["yukawa_direct", "yukawa_group"]);
    for c in &contracts {
        let Some((_, params)) = entries.iter().find(|(n, _)| n == c.name) else {
            panic!("contract `{}` has no .entry in the example's PTX", c.name);
        };
        let ptx: Vec<(usize, bool)> = params.iter().map(|p| (p.bytes, p.pointer)).collect();
        let contract: Vec<(usize, bool)> = c
            .params
            .iter()
            .map(|p| (p.size, p.pointer.is_some()))
            .collect();
        assert_eq!(
            ptx, contract,
            "`{}`: (bytes, pointer) per parameter",
            c.name
        );
    }
}

#[test]
fn every_ptx_entry_has_exactly_one_contract() {
    // The module also holds warpkit's own kernels (its device crate is linked in, and a
    // staticlib keeps every exported entry): those answer to warpkit's contracts.
    for (name, _) in ptx_entries(warpkit_example_yukawa::PTX) {
        let n = KERNELS.iter().filter(|c| c.name == name).count();
        assert_eq!(n, 1, "PTX entry `{name}` has {n} contracts");
    }
}

#[test]
fn the_module_targets_warpkits_architecture() {
    assert_eq!(warpkit_example_yukawa::PTX_ARCH, warpkit::PTX_ARCH);
    let target = format!(".target {}", warpkit::PTX_ARCH);
    assert!(warpkit_example_yukawa::PTX.contains(&target));
}
