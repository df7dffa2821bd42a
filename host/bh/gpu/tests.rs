//! The host side of the group subsets.

use super::subset_groups;

/// Random groups over a shuffled sort and a random mask: every active body once, in its
/// group's order, each new group inside its old one, no empty group.
#[test]
fn subsets_keep_each_groups_active_members_in_order() {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let n = 5000;
    let mut sort: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        sort.swap(i, next() as usize % (i + 1));
    }
    let mut groups = Vec::new();
    let mut first = 0u32;
    while (first as usize) < n {
        let size = (1 + next() % 64).min(n as u64 - first as u64) as u32;
        groups.push([first, size]);
        first += size;
    }
    for fraction in [0, 3, 50, 100] {
        let active: Vec<bool> = (0..n).map(|_| next() % 100 < fraction).collect();
        let (sub_sort, sub_groups) = subset_groups(&sort, &groups, &active);
        assert_eq!(sub_sort.len(), active.iter().filter(|&&a| a).count());
        let mut seen = vec![false; n];
        for &b in &sub_sort {
            assert!(active[b as usize] && !seen[b as usize], "body {b}");
            seen[b as usize] = true;
        }
        let mut covered = 0;
        let mut old = groups.iter();
        for &[start, size] in &sub_groups {
            assert!(size > 0 && start == covered);
            covered += size;
            let members = &sub_sort[start as usize..(start + size) as usize];
            // The old group that holds the first member holds them all, in order.
            let [f, sz] = *old
                .find(|&&[f, sz]| sort[f as usize..(f + sz) as usize].contains(&members[0]))
                .expect("an old group");
            let want: Vec<u32> = sort[f as usize..(f + sz) as usize]
                .iter()
                .copied()
                .filter(|&b| active[b as usize])
                .collect();
            assert_eq!(members, want.as_slice());
        }
        assert_eq!(covered as usize, sub_sort.len());
    }
}
