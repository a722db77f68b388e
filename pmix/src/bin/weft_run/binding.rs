//! `--bind-to core`: the CPU each rank is bound to before exec, as `mpiexec -bind-to core` does.
//!
//! The ranks of one virtual node take the CPUs the launcher may run on (its own affinity mask,
//! so a `taskset` or a cgroup around weft-run is respected) in order, wrapping around when a
//! node has more ranks than CPUs. Binding is off by default (`none`), as in MPICH's hydra.

use clap::ValueEnum;
use nix::sched::{sched_getaffinity, CpuSet};
use nix::unistd::Pid;

/// Where ranks are bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum BindTo {
    /// No binding: the kernel places the ranks.
    #[default]
    None,
    /// One CPU per rank: local rank i of a node on the i-th allowed CPU (modulo their count).
    Core,
}

/// The CPU set of every rank (`None` everywhere without binding). `node_of[r]` is rank r's
/// virtual node.
pub fn cpu_sets(bind: BindTo, node_of: &[u32]) -> Result<Vec<Option<CpuSet>>, String> {
    if bind == BindTo::None {
        return Ok(vec![None; node_of.len()]);
    }
    let mine = sched_getaffinity(Pid::from_raw(0)).map_err(|e| format!("sched_getaffinity: {e}"))?;
    let allowed: Vec<usize> = (0..CpuSet::count()).filter(|&c| mine.is_set(c).unwrap_or(false)).collect();
    if allowed.is_empty() {
        return Err("--bind-to core: the launcher's affinity mask is empty".into());
    }
    let mut next_local = std::collections::HashMap::<u32, usize>::new();
    node_of
        .iter()
        .map(|node| {
            let local = next_local.entry(*node).or_insert(0);
            let cpu = allowed[*local % allowed.len()];
            *local += 1;
            let mut set = CpuSet::new();
            set.set(cpu).map_err(|e| format!("cpu {cpu}: {e}"))?;
            Ok(Some(set))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_ranks_take_allowed_cpus_in_order_per_node() {
        let sets = cpu_sets(BindTo::Core, &[0, 0, 1, 1, 1]).unwrap();
        let mine = sched_getaffinity(Pid::from_raw(0)).unwrap();
        let allowed: Vec<usize> = (0..CpuSet::count()).filter(|&c| mine.is_set(c).unwrap()).collect();
        let cpu = |s: &Option<CpuSet>| (0..CpuSet::count()).find(|&c| s.unwrap().is_set(c).unwrap()).unwrap();
        assert_eq!(cpu(&sets[0]), allowed[0]);
        assert_eq!(cpu(&sets[1]), allowed[1 % allowed.len()]);
        assert_eq!(cpu(&sets[2]), allowed[0], "a new node starts at the first CPU again");
        assert_eq!(cpu(&sets[4]), allowed[2 % allowed.len()]);
        assert!(cpu_sets(BindTo::None, &[0, 0]).unwrap().iter().all(Option::is_none));
    }
}
