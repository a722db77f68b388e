//! `weft-run --netns`: one network namespace per virtual node, joined by veth pairs to a
//! bridge that lives in a launcher-owned namespace.
//!
//! ```text
//!   <job>-n0            <job>-br                  <job>-n1
//!   lo (up)             br0 ── wb0 ═══ veth ═══ wn0 (10.77.S.1/24)   (node 0)
//!   wn0 ═══ veth ═══ wb0 │
//!                       └── wb1 ═══ veth ═══ wn1 (10.77.S.2/24)   (node 1) …
//! ```
//!
//! Everything is created with `ip` (iproute2) *inside* the job's own namespaces (`ip -n NS …`,
//! `… peer … netns BR`): the host namespace, its interfaces and its routes are never touched.
//! The subnet `10.77.S.0/24` exists only inside those namespaces; `S` is derived from the job
//! id. Ranks enter their node's namespace with `setns` between fork and exec. [`NetNs`]'s
//! `Drop` deletes every namespace it created (which also destroys the veth pairs and the
//! bridge), so every exit path of the launcher that unwinds normally cleans up. A launcher
//! killed by SIGKILL cannot clean up: the next `--netns` run removes namespaces of launchers
//! that no longer exist ([`sweep_stale`]).

use std::fs;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::Command;

/// Where `ip netns add` puts its namespace handles.
const NETNS_DIR: &str = "/run/netns";

/// The namespaces, bridge and veth pairs of one job.
pub struct NetNs {
    bridge: String,
    nodes: Vec<String>,
    /// Open handles on the node namespaces (for `setns` in the ranks' `pre_exec`).
    fds: Vec<OwnedFd>,
    /// Namespaces to delete on drop, in creation order.
    created: Vec<String>,
    subnet: u8,
}

/// Interface name of node `k`'s end of its veth pair, inside the node's namespace.
pub fn veth_name(k: u32) -> String {
    format!("wn{k}")
}

/// Whether the launcher runs with effective uid 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid takes no arguments, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() == 0 }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip` (iproute2 is needed for --netns): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("`ip {}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl NetNs {
    /// Create the namespaces of a job of `nodes` virtual nodes. Needs root.
    pub fn create(job_id: &str, nodes: u32) -> Result<NetNs, String> {
        if !is_root() {
            return Err("--netns needs root (it creates network namespaces, veth pairs and a bridge)".into());
        }
        if nodes > 250 {
            return Err(format!("--netns supports at most 250 nodes, not {nodes}"));
        }
        sweep_stale();
        // Job-specific third octet; the subnet is only ever configured inside our namespaces.
        let subnet = job_id.bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b))) as u8;
        let mut ns = NetNs {
            bridge: format!("{job_id}-br"),
            nodes: (0..nodes).map(|k| format!("{job_id}-n{k}")).collect(),
            fds: Vec::new(),
            created: Vec::new(),
            subnet,
        };
        // On error, `ns` is dropped here and deletes whatever was created so far.
        ns.build()?;
        Ok(ns)
    }

    fn add_ns(&mut self, name: &str) -> Result<(), String> {
        ip(&["netns", "add", name])?;
        self.created.push(name.to_owned());
        ip(&["-n", name, "link", "set", "lo", "up"])
    }

    fn build(&mut self) -> Result<(), String> {
        let br = self.bridge.clone();
        self.add_ns(&br)?;
        ip(&["-n", &br, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &br, "link", "set", "br0", "up"])?;
        for (k, name) in self.nodes.clone().iter().enumerate() {
            let k = k as u32;
            self.add_ns(name)?;
            let (wn, wb) = (veth_name(k), format!("wb{k}"));
            // Created in the node's namespace, peer created directly in the bridge namespace.
            ip(&["-n", name, "link", "add", &wn, "type", "veth", "peer", "name", &wb, "netns", &br])?;
            ip(&["-n", name, "addr", "add", &format!("{}/24", self.addr(k)), "dev", &wn])?;
            ip(&["-n", name, "link", "set", &wn, "up"])?;
            ip(&["-n", &br, "link", "set", &wb, "master", "br0"])?;
            ip(&["-n", &br, "link", "set", &wb, "up"])?;
            let path = Path::new(NETNS_DIR).join(name);
            let f = fs::File::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            self.fds.push(OwnedFd::from(f));
        }
        Ok(())
    }

    /// Address of node `k` (inside its namespace).
    pub fn addr(&self, k: u32) -> String {
        format!("10.77.{}.{}", self.subnet, k + 1)
    }

    /// Descriptor of node `k`'s namespace, for `setns(fd, CLONE_NEWNET)`.
    pub fn fd(&self, k: u32) -> RawFd {
        self.fds[k as usize].as_raw_fd()
    }

    /// Name of node `k`'s namespace.
    pub fn name(&self, k: u32) -> &str {
        &self.nodes[k as usize]
    }

    /// Cut node `k` off: its veth link goes down (its ranks stay alive).
    pub fn partition(&self, k: u32) -> Result<(), String> {
        ip(&["-n", &self.nodes[k as usize], "link", "set", &veth_name(k), "down"])
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        self.fds.clear();
        // Node namespaces first (deleting one destroys its veth pair), the bridge last.
        for name in self.created.iter().rev() {
            if let Err(e) = ip(&["netns", "del", name]) {
                note!("weft-run: cleanup: {e}");
            }
        }
    }
}

/// Delete `weft-<pid>-<hex>-{br,nK}` namespaces whose launcher `<pid>` no longer exists (left
/// behind by a launcher killed with SIGKILL).
pub fn sweep_stale() {
    let Ok(rd) = fs::read_dir(NETNS_DIR) else {
        return;
    };
    for ent in rd.flatten() {
        let name = ent.file_name().to_string_lossy().into_owned();
        let mut parts = name.split('-');
        let (Some("weft"), Some(pid), Some(hex), Some(tail), None) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let Ok(pid) = pid.parse::<i32>() else { continue };
        let ours = hex.len() == 12
            && hex.bytes().all(|b| b.is_ascii_hexdigit())
            && (tail == "br" || tail.strip_prefix('n').is_some_and(|k| k.parse::<u32>().is_ok()));
        if ours && pid > 0 && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["netns", "del", &name]);
        }
    }
}
