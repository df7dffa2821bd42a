//! Every `#[kernel]` contract against the embedded PTX, on the CPU: the host launches a kernel by
//! its contract's name and parameter types, so a contract that drifted from the PTX `.entry`
//! (renamed, a parameter added, a width changed) would fail only on a GPU. Here it fails at once.

use warpkit_gpu::{KERNELS, ptx_entries, ptx_launch_bounds};

fn device_contracts() -> Vec<&'static warpkit_gpu::KernelInfo> {
    KERNELS
        .iter()
        .filter(|k| k.krate() == "warpkit_device")
        .collect()
}

#[test]
fn every_contract_matches_its_ptx_entry() {
    let entries = ptx_entries(warpkit::PTX);
    let contracts = device_contracts();
    assert!(
        contracts.len() >= 60,
        "only {} contracts registered",
        contracts.len()
    );
    for c in &contracts {
        let Some((_, params)) = entries.iter().find(|(n, _)| n == c.name) else {
            panic!(
                "contract `{}` ({}) has no .entry in the PTX",
                c.name, c.module
            );
        };
        assert_eq!(
            params.len(),
            c.params.len(),
            "`{}`: the PTX entry has {} parameters, the contract {}",
            c.name,
            params.len(),
            c.params.len()
        );
        for (i, (ptx, p)) in params.iter().zip(c.params).enumerate() {
            assert_eq!(
                ptx.bytes, p.size,
                "`{}` parameter {i} `{}`: {} bytes in the PTX, {} in the contract",
                c.name, p.name, ptx.bytes, p.size
            );
            assert_eq!(
                ptx.pointer,
                p.pointer.is_some(),
                "`{}` parameter {i} `{}`: pointer in one, value in the other",
                c.name,
                p.name
            );
        }
    }
}

#[test]
fn launch_bounds_reach_the_ptx() {
    let contracts = device_contracts();
    assert!(
        contracts.iter().any(|c| c.launch_bounds.is_some()),
        "no kernel declares launch bounds"
    );
    for c in contracts {
        assert_eq!(
            ptx_launch_bounds(warpkit::PTX, c.name),
            c.launch_bounds,
            "`{}`: the PTX entry's .maxntid/.minnctapersm and the contract differ",
            c.name
        );
    }
}

#[test]
fn every_ptx_entry_has_exactly_one_contract() {
    let contracts = device_contracts();
    for (name, _) in ptx_entries(warpkit::PTX) {
        let n = contracts.iter().filter(|c| c.name == name).count();
        assert_eq!(n, 1, "PTX entry `{name}` has {n} contracts");
    }
}

#[test]
fn the_parser_sees_what_the_module_declares() {
    // Independent count: `.entry` lines in the text.
    let entries = ptx_entries(warpkit::PTX);
    let lines = warpkit::PTX
        .lines()
        .filter(|l| l.contains(".entry "))
        .count();
    assert_eq!(entries.len(), lines);
    assert!(entries.iter().all(|(n, _)| !n.is_empty()));
}
