//! `Config`: every `WEFT_*` setting, read from the environment, with its default.
//!
//! This table is the single source of truth: `weft-info` prints it and the README documents it.
//! A known key with a bad value, or an unknown `WEFT_*` key, is a typed [`Error::Config`]
//! (a typo must not silently fall back to a default).

use crate::Error;

/// One configuration key: name, default and meaning.
pub struct Key {
    /// Environment variable name.
    pub name: &'static str,
    /// Default value, as text.
    pub default: &'static str,
    /// What it controls.
    pub help: &'static str,
}

/// Every configuration key weft reads.
pub const KEYS: &[Key] = &[
    Key { name: "WEFT_PROGRESS", default: "auto", help: "idle behaviour of blocking calls: poll (spin; a wait idle for 1024 polls yields the core at each further one) | yield (sched_yield after a short spin; for more ranks than cores) | auto (yield when this host runs more ranks of the job than it has cores, else poll)" },
    Key { name: "WEFT_EAGER_LIMIT", default: "16384", help: "largest message sent eagerly (bytes); larger ones use single-copy rendezvous (socket-based libfabric providers use at least 65536)" },
    Key { name: "WEFT_SHM_BUDGET", default: "4194304", help: "bytes of inbound ring space per rank, shared among its local peers" },
    Key { name: "WEFT_SHM_RING_MIN", default: "16384", help: "smallest ring per peer pair (bytes, power of two)" },
    Key { name: "WEFT_SHM_RING_MAX", default: "524288", help: "largest ring per peer pair (bytes, power of two)" },
    Key { name: "WEFT_SHM_SPLIT_LIMIT", default: "262144", help: "smallest shared-memory rendezvous message whose copy the receiver and the sender split, each copying half on its own core (bytes; 0 = never split)" },
    Key { name: "WEFT_SLOW_PERIOD_US", default: "200", help: "period of the progress engine's slow path (failure polling), microseconds" },
    Key { name: "WEFT_SHM", default: "on", help: "on: peers on the same node use shared memory; off: every peer goes through the network transport (testing)" },
    Key { name: "WEFT_FI_PROVIDER", default: "auto", help: "libfabric provider for inter-node traffic (auto = best RDM provider: verbs;ofi_rxm, cxi, efa, ..., tcp;ofi_rxm)" },
    Key { name: "WEFT_FI_DOMAIN", default: "auto", help: "libfabric domain (NIC / interface) to use, e.g. mlx5_0 or lo; auto = the provider's first" },
    Key { name: "WEFT_RCACHE_MONITOR", default: "on", help: "libfabric registration cache: on (registrations of memory that is unmapped, freed to the system or remapped are dropped, learnt from a userfaultfd monitor; where userfaultfd is not permitted nothing is cached) | off (kept regardless: stale on pinning providers once a buffer is unmapped and mapped again; testing)" },
    Key { name: "WEFT_BIND", default: "core", help: "process binding: core (one core per local rank) | numa (the NUMA node of that core) | none" },
    Key { name: "WEFT_COLL_BARRIER", default: "auto", help: "barrier algorithm: auto | bruck | binomial | knomial | flat | linear | binbin | binstar" },
    Key { name: "WEFT_COLL_BCAST", default: "auto", help: "bcast algorithm: auto | binomial | knomial | flat | linear | binbin | binstar" },
    Key { name: "WEFT_COLL_REDUCE", default: "auto", help: "reduce algorithm: auto | binomial | knomial | flat | linear | binbin | binstar" },
    Key { name: "WEFT_COLL_ALLREDUCE", default: "auto", help: "allreduce algorithm: auto | recdbl | ring | rabenseifner | binomial | knomial | flat | linear | binbin | binstar" },
    Key { name: "WEFT_COLL_GATHER", default: "auto", help: "gather algorithm: auto | binomial | linear" },
    Key { name: "WEFT_COLL_GATHERV", default: "auto", help: "gatherv algorithm: auto | linear" },
    Key { name: "WEFT_COLL_SCATTER", default: "auto", help: "scatter algorithm: auto | binomial | linear" },
    Key { name: "WEFT_COLL_SCATTERV", default: "auto", help: "scatterv algorithm: auto | linear" },
    Key { name: "WEFT_COLL_ALLGATHER", default: "auto", help: "allgather algorithm: auto | ring | recdbl | bruck" },
    Key { name: "WEFT_COLL_ALLGATHERV", default: "auto", help: "allgatherv algorithm: auto | ring" },
    Key { name: "WEFT_COLL_ALLTOALL", default: "auto", help: "alltoall algorithm: auto | pairwise | linear" },
    Key { name: "WEFT_COLL_ALLTOALLV", default: "auto", help: "alltoallv algorithm: auto | pairwise | linear" },
    Key { name: "WEFT_COLL_REDUCE_SCATTER", default: "auto", help: "reduce_scatter algorithm: auto | ring | pairwise | basic" },
    Key { name: "WEFT_COLL_REDUCE_SCATTER_BLOCK", default: "auto", help: "reduce_scatter_block algorithm: auto | ring | pairwise | basic" },
    Key { name: "WEFT_COLL_SCAN", default: "auto", help: "scan algorithm: auto | recdbl | linear" },
    Key { name: "WEFT_COLL_EXSCAN", default: "auto", help: "exscan algorithm: auto | recdbl | linear" },
    Key { name: "WEFT_FT_HB_PERIOD", default: "off", help: "heartbeat failure detector (observation ring): period in ms between heartbeats; off = detector disabled" },
    Key { name: "WEFT_FT_HB_TIMEOUT", default: "auto", help: "heartbeat detector: silence in ms after which the observed rank is declared failed (auto = 3 periods)" },
    Key { name: "WEFT_RT_TIMEOUT", default: "30", help: "seconds to wait for the job's runtime server (a PMIx direct-modex get of a peer's key, any PMI-2 reply including fences); read by weft-pmix" },
    Key { name: "WEFT_MPI_INITIAL_ERRHANDLER", default: "fatal", help: "MPI library: error handler of calls made before MPI_Init or after MPI_Finalize (and of MPI_Init's own failure): fatal (print and exit) | return (print and return the error class); read by weft-mpi" },
    Key { name: "WEFT_FT_AGREE", default: "fast", help: "agreement (agree, shrink): fast (recursive doubling while nothing fails, falling back to ERA's tree) | tree (ERA only; set the same on every rank)" },
];

/// Variables set by launchers, not configuration: accepted without complaint.
const LAUNCHER_VARS: &[&str] = &[
    "WEFT_RUN_CTL",
    "WEFT_HOST_SLOT",
    "WEFT_RUN",
    "WEFT_RUN_RANK",
    "WEFT_REINIT_EPOCH",
    "WEFT_REINIT_STANDBY",
    "WEFT_RUN_BOARD",
    // weft-run's own switch (`--no-mpi-lib`); its ranks inherit the launcher's environment.
    "WEFT_RUN_MPI_LIB",
];

/// Progress mode (`WEFT_PROGRESS`).
pub use weft_engine::ProgressMode;

/// Parsed configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// `WEFT_PROGRESS`; `None` is `auto` (decided at init from the ranks on this host and
    /// its cores).
    pub progress: Option<ProgressMode>,
    /// `WEFT_EAGER_LIMIT`.
    pub eager_limit: usize,
    /// `WEFT_SHM_BUDGET`.
    pub shm_budget: usize,
    /// `WEFT_SHM_RING_MIN`.
    pub shm_ring_min: usize,
    /// `WEFT_SHM_RING_MAX`.
    pub shm_ring_max: usize,
    /// `WEFT_SHM_SPLIT_LIMIT` (0 = never).
    pub shm_split_limit: usize,
    /// `WEFT_SLOW_PERIOD_US`.
    pub slow_period_us: u64,
    /// `WEFT_SHM`.
    pub shm: bool,
    /// `WEFT_FI_PROVIDER` (`None` = automatic choice).
    pub fi_provider: Option<String>,
    /// `WEFT_FI_DOMAIN` (`None` = the provider's first domain).
    pub fi_domain: Option<String>,
    /// `WEFT_RCACHE_MONITOR`.
    pub rcache_monitor: bool,
    /// `WEFT_BIND`.
    pub bind: Bind,
    /// `WEFT_COLL_<NAME>`: per-collective algorithm overrides.
    pub coll: weft_coll::Overrides,
    /// `WEFT_FT_HB_PERIOD` in ms (`None` = detector off).
    pub ft_hb_period_ms: Option<u64>,
    /// `WEFT_FT_HB_TIMEOUT` in ms (`None` = three periods).
    pub ft_hb_timeout_ms: Option<u64>,
    /// `WEFT_FT_AGREE`.
    pub ft_agree: weft_ft::AgreePath,
    /// `WEFT_RT_TIMEOUT`, seconds (read by weft-pmix from the environment; kept here so that
    /// `weft-info` shows the value in force).
    pub rt_timeout_s: u64,
    /// `WEFT_MPI_INITIAL_ERRHANDLER`: `fatal` or `return` (read by weft-mpi, which needs it
    /// before any instance exists).
    pub mpi_initial_errhandler: &'static str,
}

/// Process binding policy (`WEFT_BIND`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bind {
    /// One core per local rank (local rank modulo cores).
    Core,
    /// The NUMA node that holds that core.
    Numa,
    /// Leave the binding alone (e.g. the launcher already bound us).
    None,
}

fn auto_or(v: &str) -> Option<String> {
    match v.trim() {
        "" | "auto" => None,
        s => Some(s.to_string()),
    }
}

fn bad(key: &str, value: &str, reason: &str) -> Error {
    Error::Config { key: key.to_string(), value: value.to_string(), reason: reason.to_string() }
}

fn parse_num<T>(key: &str, v: &str, min: T) -> Result<T, Error>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    let n: T = v.trim().parse().map_err(|_| bad(key, v, "expected a non-negative integer"))?;
    if n < min {
        return Err(bad(key, v, &format!("must be at least {min}")));
    }
    Ok(n)
}

impl Config {
    /// Read the configuration from the process environment.
    pub fn from_env() -> Result<Config, Error> {
        Config::from_vars(std::env::vars())
    }

    /// Read the configuration from `(name, value)` pairs (non-`WEFT_` names are ignored).
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Result<Config, Error> {
        let mut c = Config::default();
        for (k, v) in vars {
            if !k.starts_with("WEFT_") || LAUNCHER_VARS.contains(&k.as_str()) {
                continue;
            }
            match k.as_str() {
                "WEFT_PROGRESS" => {
                    c.progress = match v.trim() {
                        "poll" => Some(ProgressMode::Poll),
                        "yield" => Some(ProgressMode::Yield),
                        "auto" => None,
                        _ => return Err(bad(&k, &v, "expected poll, yield or auto")),
                    }
                }
                "WEFT_EAGER_LIMIT" => c.eager_limit = parse_num(&k, &v, 0usize)?,
                "WEFT_SHM_BUDGET" => c.shm_budget = parse_num(&k, &v, 4096usize)?,
                "WEFT_SHM_RING_MIN" => c.shm_ring_min = parse_num(&k, &v, 4096usize)?,
                "WEFT_SHM_RING_MAX" => c.shm_ring_max = parse_num(&k, &v, 4096usize)?,
                "WEFT_SHM_SPLIT_LIMIT" => c.shm_split_limit = parse_num(&k, &v, 0usize)?,
                "WEFT_SLOW_PERIOD_US" => c.slow_period_us = parse_num(&k, &v, 1u64)?,
                "WEFT_SHM" => {
                    c.shm = match v.trim() {
                        "on" | "1" | "yes" => true,
                        "off" | "0" | "no" => false,
                        _ => return Err(bad(&k, &v, "expected on or off")),
                    }
                }
                "WEFT_FI_PROVIDER" => c.fi_provider = auto_or(&v),
                "WEFT_FI_DOMAIN" => c.fi_domain = auto_or(&v),
                "WEFT_RCACHE_MONITOR" => {
                    c.rcache_monitor = match v.trim() {
                        "on" => true,
                        "off" => false,
                        _ => return Err(bad(&k, &v, "expected on or off")),
                    }
                }
                "WEFT_BIND" => {
                    c.bind = match v.trim() {
                        "core" => Bind::Core,
                        "numa" => Bind::Numa,
                        "none" => Bind::None,
                        _ => return Err(bad(&k, &v, "expected core, numa or none")),
                    }
                }
                "WEFT_FT_HB_PERIOD" => {
                    c.ft_hb_period_ms = match v.trim() {
                        "off" | "" => None,
                        _ => Some(parse_num(&k, &v, 1u64)?),
                    }
                }
                "WEFT_FT_HB_TIMEOUT" => {
                    c.ft_hb_timeout_ms = match v.trim() {
                        "auto" | "" => None,
                        _ => Some(parse_num(&k, &v, 1u64)?),
                    }
                }
                "WEFT_FT_AGREE" => {
                    c.ft_agree = match v.trim() {
                        "fast" => weft_ft::AgreePath::Fast,
                        "tree" => weft_ft::AgreePath::Tree,
                        _ => return Err(bad(&k, &v, "expected fast or tree")),
                    }
                }
                // Read by weft-pmix (`weft_pmix::server_timeout`); validated here.
                "WEFT_RT_TIMEOUT" => {
                    c.rt_timeout_s = parse_num(&k, &v, 1u64)?;
                }
                "WEFT_MPI_INITIAL_ERRHANDLER" => {
                    c.mpi_initial_errhandler = match v.trim() {
                        "fatal" => "fatal",
                        "return" => "return",
                        _ => return Err(bad(&k, &v, "expected fatal | return")),
                    }
                }
                k if k.starts_with("WEFT_COLL_") => match c.coll.set_env(k, &v) {
                    Ok(true) => {}
                    Ok(false) => return Err(bad(k, &v, "unknown collective (see `weft-info` for the list)")),
                    Err(e) => return Err(bad(k, &v, &e.to_string())),
                },
                _ => return Err(bad(&k, &v, "unknown configuration key (see `weft-info` for the list)")),
            }
        }
        if c.shm_ring_min > c.shm_ring_max {
            return Err(bad(
                "WEFT_SHM_RING_MIN",
                &c.shm_ring_min.to_string(),
                "larger than WEFT_SHM_RING_MAX",
            ));
        }
        Ok(c)
    }

    /// Current value of `key` as text (for `weft-info`).
    pub fn value_of(&self, key: &str) -> Option<String> {
        Some(match key {
            "WEFT_PROGRESS" => match self.progress {
                None => "auto".into(),
                Some(ProgressMode::Poll) => "poll".into(),
                Some(ProgressMode::Yield) => "yield".into(),
            },
            "WEFT_EAGER_LIMIT" => self.eager_limit.to_string(),
            "WEFT_SHM_BUDGET" => self.shm_budget.to_string(),
            "WEFT_SHM_RING_MIN" => self.shm_ring_min.to_string(),
            "WEFT_SHM_RING_MAX" => self.shm_ring_max.to_string(),
            "WEFT_SHM_SPLIT_LIMIT" => self.shm_split_limit.to_string(),
            "WEFT_SLOW_PERIOD_US" => self.slow_period_us.to_string(),
            "WEFT_SHM" => if self.shm { "on" } else { "off" }.into(),
            "WEFT_FI_PROVIDER" => self.fi_provider.clone().unwrap_or_else(|| "auto".into()),
            "WEFT_FI_DOMAIN" => self.fi_domain.clone().unwrap_or_else(|| "auto".into()),
            "WEFT_RCACHE_MONITOR" => if self.rcache_monitor { "on" } else { "off" }.into(),
            "WEFT_BIND" => match self.bind {
                Bind::Core => "core".into(),
                Bind::Numa => "numa".into(),
                Bind::None => "none".into(),
            },
            "WEFT_FT_HB_PERIOD" => self.ft_hb_period_ms.map_or_else(|| "off".into(), |v| v.to_string()),
            "WEFT_FT_HB_TIMEOUT" => self.ft_hb_timeout_ms.map_or_else(|| "auto".into(), |v| v.to_string()),
            "WEFT_FT_AGREE" => match self.ft_agree {
                weft_ft::AgreePath::Fast => "fast".into(),
                weft_ft::AgreePath::Tree => "tree".into(),
            },
            "WEFT_RT_TIMEOUT" => self.rt_timeout_s.to_string(),
            "WEFT_MPI_INITIAL_ERRHANDLER" => self.mpi_initial_errhandler.into(),
            k if k.starts_with("WEFT_COLL_") => return self.coll.env_value(k),
            _ => return None,
        })
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            progress: None,
            eager_limit: 16384,
            shm_budget: 4 << 20,
            shm_ring_min: 16 << 10,
            shm_ring_max: 512 << 10,
            shm_split_limit: 256 << 10,
            slow_period_us: 200,
            shm: true,
            fi_provider: None,
            fi_domain: None,
            rcache_monitor: true,
            bind: Bind::Core,
            coll: weft_coll::Overrides::default(),
            ft_hb_period_ms: None,
            ft_hb_timeout_ms: None,
            ft_agree: weft_ft::AgreePath::Fast,
            rt_timeout_s: 30,
            mpi_initial_errhandler: "fatal",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn defaults_match_key_table() {
        let c = Config::default();
        for k in KEYS {
            assert_eq!(c.value_of(k.name).as_deref(), Some(k.default), "{}", k.name);
        }
    }

    #[test]
    fn parses_known_keys() {
        let c = Config::from_vars(vars(&[
            ("WEFT_PROGRESS", "yield"),
            ("WEFT_EAGER_LIMIT", "1024"),
            ("HOME", "/x"),
        ]))
        .unwrap();
        assert_eq!(c.progress, Some(ProgressMode::Yield));
        assert_eq!(c.eager_limit, 1024);
        let c = Config::from_vars(vars(&[("WEFT_PROGRESS", "auto")])).unwrap();
        assert_eq!(c.progress, None);
    }

    #[test]
    fn rejects_bad_values_and_unknown_keys() {
        let e = Config::from_vars(vars(&[("WEFT_PROGRESS", "spin")])).unwrap_err();
        assert!(e.to_string().contains("WEFT_PROGRESS"), "{e}");
        assert!(Config::from_vars(vars(&[("WEFT_EAGER_LIMIT", "-3")])).is_err());
        assert!(Config::from_vars(vars(&[("WEFT_SHM_BUDGET", "12")])).is_err());
        let e = Config::from_vars(vars(&[("WEFT_EAGR_LIMIT", "5")])).unwrap_err();
        assert!(matches!(e, Error::Config { .. }), "{e}");
        assert!(Config::from_vars(vars(&[("WEFT_HOST_SLOT", "3")])).is_ok());
        assert!(Config::from_vars(vars(&[("WEFT_RUN_MPI_LIB", "0")])).is_ok());
    }
}
