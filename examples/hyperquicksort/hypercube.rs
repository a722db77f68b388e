//! The virtual hypercube of the reconfigurable HyperQuickSort ("Running resilient MPI
//! applications on a Dynamic Group of Recommended Processes", Algorithms 3 and 4): the
//! cluster sequence c(i,s), the partner of a slot in a sorting round, the member that replaces
//! a slot whose process is not in the view, and the member keeping a checkpoint copy.
//!
//! A *slot* is a vertex of the hypercube (world rank i owns slot i while it is a member); the
//! *view* is the sorted list of member world ranks. Every function here is a pure function of
//! the view, so members that agree on the view agree on every assignment.

/// c(i,s) = (i ⊕ 2^(s-1), c(i ⊕ 2^(s-1), 1), …, c(i ⊕ 2^(s-1), s-1)): the 2^(s-1) vertices of
/// the subcube of dimension s-1 across dimension s from i, nearest first (1 ≤ s).
pub fn cluster(i: u32, s: u32) -> Vec<u32> {
    let mut out = Vec::with_capacity(1 << (s - 1));
    push_cluster(i, s, &mut out);
    out
}

fn push_cluster(i: u32, s: u32, out: &mut Vec<u32>) {
    let j = i ^ (1 << (s - 1));
    out.push(j);
    for t in 1..s {
        push_cluster(j, t, out);
    }
}

/// Membership test on a sorted view.
pub fn is_member(view: &[u32], w: u32) -> bool {
    view.binary_search(&w).is_ok()
}

/// Algorithm 3: the partner of slot `i` in the sorting round of dimension `s`, the first
/// member of c(i,s); `None` when that subcube has no member.
pub fn partner(i: u32, s: u32, view: &[u32]) -> Option<u32> {
    cluster(i, s).into_iter().find(|&p| is_member(view, p))
}

/// Algorithm 4: the member that does slot `i`'s work: `i` itself when it is a member, else
/// the first member of c(i,1), c(i,2), …, c(i,dim). `None` only for an empty view.
pub fn replacement(i: u32, dim: u32, view: &[u32]) -> Option<u32> {
    if is_member(view, i) {
        return Some(i);
    }
    (1..=dim).find_map(|s| partner(i, s, view))
}

/// The owner of every slot of a 2^dim hypercube under `view` (Algorithm 4 per slot).
pub fn owners(dim: u32, view: &[u32]) -> Option<Vec<u32>> {
    (0..1u32 << dim).map(|i| replacement(i, dim, view)).collect()
}

/// The member keeping the checkpoint copies of member `m`'s slots: the next member of the
/// view, cyclically; `None` when `m` is alone (nobody can keep a copy).
pub fn buddy(m: u32, view: &[u32]) -> Option<u32> {
    let k = view.binary_search(&m).ok()?;
    (view.len() > 1).then(|| view[(k + 1) % view.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_matches_the_papers_table_for_8_processes() {
        assert_eq!(cluster(0, 1), vec![1]);
        assert_eq!(cluster(0, 2), vec![2, 3]);
        assert_eq!(cluster(0, 3), vec![4, 5, 6, 7]);
        assert_eq!(cluster(4, 1), vec![5]);
        assert_eq!(cluster(4, 2), vec![6, 7]);
        assert_eq!(cluster(6, 3), vec![2, 3, 0, 1]);
        assert_eq!(cluster(5, 3), vec![1, 0, 3, 2]);
        // Every c(i,s) is the subcube across dimension s: 2^(s-1) distinct vertices whose
        // bits above s-1 equal i's except bit s-1.
        for i in 0..16u32 {
            for s in 1..=4 {
                let c = cluster(i, s);
                let mut sorted = c.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), 1 << (s - 1));
                for v in c {
                    assert_eq!(v >> (s - 1), (i >> (s - 1)) ^ 1);
                }
            }
        }
    }

    #[test]
    fn partners_and_replacements_of_the_papers_examples() {
        let all: Vec<u32> = (0..8).collect();
        assert_eq!(partner(0, 3, &all), Some(4));
        let no4: Vec<u32> = vec![0, 1, 2, 3, 5, 6, 7];
        assert_eq!(partner(0, 3, &no4), Some(5));
        assert_eq!(replacement(4, 3, &no4), Some(5));
        let no45: Vec<u32> = vec![0, 1, 2, 3, 6, 7];
        assert_eq!(replacement(4, 3, &no45), Some(6));
        let no2: Vec<u32> = vec![0, 1, 3, 4, 5, 6, 7];
        assert_eq!(partner(6, 3, &no2), Some(3));
        assert_eq!(replacement(2, 3, &no2), Some(3));
        let only7 = vec![7];
        assert_eq!(owners(3, &only7), Some(vec![7; 8]));
        assert_eq!(partner(0, 3, &[0, 1, 2, 3]), None);
        assert_eq!(owners(3, &[]), None);
    }

    #[test]
    fn the_owner_of_the_partner_slot_is_algorithm_3s_partner() {
        // For every view of a 16-vertex cube: when c(i,s) has a member, the member replacing
        // slot i ⊕ 2^(s-1) (Algorithm 4) is slot i's partner (Algorithm 3), so exchanging by
        // slot owners realises both algorithms at once.
        let dim = 4;
        for mask in 1u32..(1 << 16) {
            let view: Vec<u32> = (0..16).filter(|v| mask & (1 << v) != 0).collect();
            let own = owners(dim, &view).unwrap();
            for i in 0..16u32 {
                assert!(is_member(&view, own[i as usize]));
                for s in 1..=dim {
                    if let Some(p) = partner(i, s, &view) {
                        assert_eq!(own[(i ^ (1 << (s - 1))) as usize], p);
                    }
                }
            }
        }
    }

    #[test]
    fn buddy_is_the_next_member() {
        assert_eq!(buddy(3, &[1, 3, 6]), Some(6));
        assert_eq!(buddy(6, &[1, 3, 6]), Some(1));
        assert_eq!(buddy(6, &[6]), None);
        assert_eq!(buddy(2, &[1, 3]), None);
    }
}
