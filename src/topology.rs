//! Machine topology and process binding, through hwloc (`hwlocality`).
//!
//! [`Topology::load`] reads the cores, PUs (hardware threads), NUMA nodes and network devices
//! (hwloc OS devices of type *network*, e.g. `eth0`, and *openfabrics*, e.g. `mlx5_0`) with
//! their locality; [`Topology::summary`] prints it for `weft-info`. [`bind_self`] applies the
//! `WEFT_BIND` policy to the calling process.
//!
//! Which CPUs are candidates: hwloc's *allowed* cpuset (what the cgroup / cpuset permits),
//! restricted to the process's affinity at the time of the call when the two intersect, so a
//! job started under `taskset` or a batch system's cpuset stays inside it. The cores are those
//! whose PUs meet the candidate set, in hwloc's logical order.

use std::fmt::Write as _;

use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::{OSDeviceType, ObjectType};
use hwlocality::object::TopologyObject;
use hwlocality::topology::builder::TypeFilter;

use crate::{Bind, Error};

/// A network device hwloc found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nic {
    /// OS name (`eth0`, `mlx5_0`, `cxi0`, …).
    pub name: String,
    /// `network` (a kernel network interface) or `openfabrics` (an RDMA device).
    pub kind: &'static str,
    /// OS indexes of the NUMA nodes it is attached to (empty if hwloc does not say).
    pub numa: Vec<u32>,
    /// CPUs close to it, as a list (`0-15`), if hwloc reports a locality.
    pub cpus: Option<String>,
}

/// One NUMA node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaNode {
    /// OS index.
    pub os_index: u32,
    /// Its CPUs, as a list (`0-15`).
    pub cpus: String,
    /// Local memory in bytes (0 if unknown).
    pub memory: u64,
}

/// The machine as hwloc sees it.
pub struct Topology {
    topo: hwlocality::Topology,
    cores: usize,
    pus: usize,
    numa: Vec<NumaNode>,
    nics: Vec<Nic>,
}

/// A CPU (or NUMA node) set as a list: `0-3,8,10-11`.
fn list(set: &CpuSet) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    for i in set.iter_set().map(usize::from) {
        run = match run {
            Some((a, b)) if i == b + 1 => Some((a, i)),
            Some((a, b)) => {
                out.push(if a == b { a.to_string() } else { format!("{a}-{b}") });
                Some((i, i))
            }
            None => Some((i, i)),
        };
    }
    if let Some((a, b)) = run {
        out.push(if a == b { a.to_string() } else { format!("{a}-{b}") });
    }
    if out.is_empty() {
        "none".into()
    } else {
        out.join(",")
    }
}

fn topo_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Topology(format!("{what}: {e}"))
}

impl Topology {
    /// Discover the machine, including its network devices.
    pub fn load() -> Result<Topology, Error> {
        let topo = hwlocality::Topology::builder()
            .with_io_type_filter(TypeFilter::KeepImportant)
            .map_err(|e| topo_err("hwloc I/O filter", e))?
            .build()
            .map_err(|e| topo_err("hwloc topology load", e))?;
        let cores = topo.objects_with_type(ObjectType::Core).len();
        let pus = topo.objects_with_type(ObjectType::PU).len();
        let numa = topo
            .objects_with_type(ObjectType::NUMANode)
            .map(|n| NumaNode {
                os_index: n.os_index().unwrap_or(0) as u32,
                cpus: n.cpuset().map(|c| list(&c)).unwrap_or_default(),
                memory: match n.attributes() {
                    Some(ObjectAttributes::NUMANode(a)) => a.local_memory().map_or(0, |m| m.get()),
                    _ => 0,
                },
            })
            .collect();
        let mut nics = Vec::new();
        for obj in topo.objects_with_type(ObjectType::OSDevice) {
            let kind = match obj.attributes() {
                Some(ObjectAttributes::OSDevice(a)) => match a.device_type() {
                    OSDeviceType::Network => "network",
                    OSDeviceType::OpenFabrics => "openfabrics",
                    _ => continue,
                },
                _ => continue,
            };
            let name = obj.name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let anchor = obj.first_non_io_ancestor();
            // The machine object as "locality" says nothing: report it only below the root.
            let local = anchor.filter(|a| a.object_type() != ObjectType::Machine);
            let numa = local
                .and_then(TopologyObject::nodeset)
                .map(|ns| ns.iter_set().map(|i| usize::from(i) as u32).collect())
                .unwrap_or_default();
            let cpus = local.and_then(TopologyObject::cpuset).map(|c| list(&c));
            nics.push(Nic { name, kind, numa, cpus });
        }
        Ok(Topology { topo, cores, pus, numa, nics })
    }

    /// Number of cores.
    pub fn cores(&self) -> usize {
        self.cores
    }

    /// Number of PUs (hardware threads).
    pub fn pus(&self) -> usize {
        self.pus
    }

    /// NUMA nodes.
    pub fn numa_nodes(&self) -> &[NumaNode] {
        &self.numa
    }

    /// Network and RDMA devices.
    pub fn nics(&self) -> &[Nic] {
        &self.nics
    }

    /// Multi-line human-readable description (for `weft-info`), each line indented by two.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let allowed = self.topo.allowed_cpuset();
        let _ = writeln!(
            s,
            "  cores {}, PUs {}, NUMA nodes {}, allowed CPUs {}",
            self.cores,
            self.pus,
            self.numa.len(),
            list(&allowed)
        );
        if let Ok(b) = self.topo.cpu_binding(CpuBindingFlags::PROCESS) {
            let _ = writeln!(s, "  this process is bound to CPUs {}", list(&b));
        }
        for n in &self.numa {
            let mem = if n.memory > 0 { format!(", {} MiB", n.memory >> 20) } else { String::new() };
            let _ = writeln!(s, "  NUMA node {}: CPUs {}{mem}", n.os_index, n.cpus);
        }
        if self.nics.is_empty() {
            let _ = writeln!(s, "  network devices: none reported by hwloc");
        }
        for d in &self.nics {
            let near = match (&d.cpus, d.numa.is_empty()) {
                (Some(c), false) => format!("NUMA {:?}, CPUs {c}", d.numa),
                (Some(c), true) => format!("CPUs {c}"),
                (None, _) => "locality unknown".to_string(),
            };
            let _ = writeln!(s, "  {:<12} {:<12} {near}", d.name, d.kind);
        }
        s
    }

    /// Where [`bind_self`] would put local rank `local_rank` under `policy`, without binding.
    pub fn binding_target(&self, policy: Bind, local_rank: u32) -> Result<Option<String>, Error> {
        Ok(self.target(policy, local_rank)?.map(|(_, d)| d))
    }

    /// The candidate CPUs (see the module documentation).
    fn candidates(&self) -> CpuSet {
        let allowed: CpuSet = self.topo.allowed_cpuset().clone_target();
        match self.topo.cpu_binding(CpuBindingFlags::PROCESS) {
            Ok(cur) if cur.intersects(&allowed) => cur & allowed,
            _ => allowed,
        }
    }

    /// The cores that meet the candidate set, in logical order.
    fn candidate_cores(&self, cand: &CpuSet) -> Vec<&TopologyObject> {
        self.topo
            .objects_with_type(ObjectType::Core)
            .filter(|c| c.cpuset().is_some_and(|cs| cs.intersects(cand)))
            .collect()
    }

    /// Where `policy` puts local rank `local_rank`: the cpuset and a description.
    fn target(&self, policy: Bind, local_rank: u32) -> Result<Option<(CpuSet, String)>, Error> {
        if policy == Bind::None {
            return Ok(None);
        }
        let cand = self.candidates();
        let cores = self.candidate_cores(&cand);
        if cores.is_empty() {
            return Err(Error::Topology(format!("no core in the allowed CPUs {}", list(&cand))));
        }
        let core = cores[local_rank as usize % cores.len()];
        let core_set: CpuSet = core.cpuset().map(|c| c.clone_target()).unwrap_or_default() & &cand;
        match policy {
            Bind::Core => {
                let desc = format!("core L#{} (CPUs {})", core.logical_index(), list(&core_set));
                Ok(Some((core_set, desc)))
            }
            Bind::Numa => {
                let nodeset = core.nodeset();
                let mut set = CpuSet::new();
                let mut ids = Vec::new();
                for n in self.topo.objects_with_type(ObjectType::NUMANode) {
                    let Some(idx) = n.os_index() else { continue };
                    if nodeset.as_ref().is_some_and(|ns| ns.is_set(idx)) {
                        if let Some(c) = n.cpuset() {
                            set |= &*c;
                        }
                        ids.push(idx);
                    }
                }
                set &= &cand;
                if set.is_empty() {
                    // No NUMA information for that core: the core itself is the best we know.
                    let desc = format!(
                        "core L#{} (CPUs {}; no NUMA node found)",
                        core.logical_index(),
                        list(&core_set)
                    );
                    return Ok(Some((core_set, desc)));
                }
                let desc =
                    format!("NUMA node {ids:?} of core L#{} (CPUs {})", core.logical_index(), list(&set));
                Ok(Some((set, desc)))
            }
            Bind::None => Ok(None),
        }
    }
}

/// Bind the calling process (all its threads) according to `policy`:
/// - `core`: core number `local_rank % ncores` of the candidate CPUs;
/// - `numa`: every CPU of that core's NUMA node (within the candidate CPUs);
/// - `none`: nothing (`Ok(None)`).
///
/// Returns a description of where the process is now bound.
pub fn bind_self(policy: Bind, local_rank: u32) -> Result<Option<String>, Error> {
    if policy == Bind::None {
        return Ok(None);
    }
    let pre = PRELOADED.lock().unwrap_or_else(|e| e.into_inner()).take();
    let t = match pre {
        Some(t) => t,
        None => Topology::load()?,
    };
    let Some((set, desc)) = t.target(policy, local_rank)? else {
        return Ok(None);
    };
    t.topo
        .bind_cpu(&set, CpuBindingFlags::PROCESS)
        .map_err(|e| topo_err(&format!("binding to CPUs {}", list(&set)), e))?;
    Ok(Some(desc))
}

/// A topology loaded ahead of the binding (see [`preload`]), taken by the next [`bind_self`].
static PRELOADED: std::sync::Mutex<Option<Topology>> = std::sync::Mutex::new(None);

/// Load the topology now for the next [`bind_self`]: a global-restart standby process does it
/// while it waits for a rank, so the hwloc discovery is not on the recovery path.
pub(crate) fn preload() {
    if let Ok(t) = Topology::load() {
        *PRELOADED.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
    }
}

/// CPUs online on this host (not this process's affinity mask, which a launcher's binding
/// may have narrowed to one core); at least 1.
pub fn host_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| count_cpu_list(s.trim()))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

/// Number of CPUs in a kernel CPU list such as `0-3,8,10-11`.
fn count_cpu_list(s: &str) -> Option<usize> {
    s.split(',').try_fold(0usize, |n, part| {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
        Some(n + b.checked_sub(a)? + 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_cpu_lists_are_counted() {
        assert_eq!(count_cpu_list("0-1"), Some(2));
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpu_list("5"), Some(1));
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("x"), None);
    }

    fn bitmap_indexes(set: &CpuSet) -> Vec<usize> {
        set.iter_set().map(usize::from).collect()
    }

    /// The calling thread's affinity, as sorted CPU numbers (read with `sched_getaffinity`,
    /// independently of hwloc).
    fn affinity() -> Vec<usize> {
        // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid, writable cpu_set_t of the size we pass; pid 0 = this thread.
        let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        assert_eq!(rc, 0, "sched_getaffinity: {}", std::io::Error::last_os_error());
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `i` is below CPU_SETSIZE and `set` is initialised.
            .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
            .collect()
    }

    #[test]
    fn cpu_lists() {
        let mut s = CpuSet::new();
        assert_eq!(list(&s), "none");
        for i in [0usize, 1, 2, 3, 8, 10, 11] {
            s.set(i);
        }
        assert_eq!(list(&s), "0-3,8,10-11");
    }

    #[test]
    fn load_and_summary() {
        let t = Topology::load().unwrap();
        assert!(t.cores() >= 1 && t.pus() >= t.cores(), "{} cores {} PUs", t.cores(), t.pus());
        assert!(!t.numa_nodes().is_empty());
        let s = t.summary();
        assert!(s.contains("cores ") && s.contains("NUMA node "), "{s}");
        assert!(bind_self(Bind::None, 3).unwrap().is_none());
    }

    /// Binding changes the whole test process, so the checks run in a child process (this same
    /// test binary, running only `bind_worker` with `WEFT_TOPO_BIND_WORKER` set).
    #[test]
    fn bind_core_and_numa_read_back() {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args(["--exact", "topology::tests::bind_worker", "--nocapture", "--test-threads", "1"])
            .env("WEFT_TOPO_BIND_WORKER", "1")
            .output()
            .unwrap();
        let text =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{text}");
        assert!(text.contains("BIND_WORKER_DONE"), "worker did not run: {text}");
    }

    #[test]
    fn bind_worker() {
        if std::env::var_os("WEFT_TOPO_BIND_WORKER").is_none() {
            return;
        }
        let t = Topology::load().unwrap();
        let cand = t.candidates();
        let cores: Vec<(usize, Vec<usize>)> = t
            .candidate_cores(&cand)
            .iter()
            .map(|c| {
                let set: CpuSet = c.cpuset().unwrap().clone_target() & &cand;
                (c.logical_index(), bitmap_indexes(&set))
            })
            .collect();
        assert!(!cores.is_empty());
        // bind_self narrows its candidates to the current affinity: widen it again each time.
        let reset = || t.topo.bind_cpu(&cand, CpuBindingFlags::PROCESS).unwrap();
        // Every local rank k lands on core k mod ncores, exactly.
        for k in 0..(cores.len() as u32 + 1) {
            reset();
            let desc = bind_self(Bind::Core, k).unwrap().unwrap();
            let (li, want) = &cores[k as usize % cores.len()];
            assert_eq!(affinity(), *want, "local rank {k}: {desc}");
            assert!(desc.contains(&format!("core L#{li}")), "{desc}");
            println!("core k={k}: {desc}");
        }
        // numa: the NUMA node of that core, all of its CPUs.
        for k in 0..cores.len() as u32 {
            reset();
            let desc = bind_self(Bind::Numa, k).unwrap().unwrap();
            let core_cpu = cores[k as usize].1[0];
            let node = t
                .topo
                .objects_with_type(ObjectType::NUMANode)
                .find(|n| n.cpuset().is_some_and(|c| c.is_set(core_cpu)))
                .expect("a NUMA node holds the core");
            let want: CpuSet = node.cpuset().unwrap().clone_target() & &cand;
            assert_eq!(affinity(), bitmap_indexes(&want), "numa k={k}: {desc}");
            println!("numa k={k}: {desc}");
        }
        println!("BIND_WORKER_DONE");
    }
}
