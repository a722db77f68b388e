//! [`OfiConfig`]: the transport's settings, their defaults and the `WEFT_*` variables they
//! are read from, and the registration cache's invalidation they select.

use crate::error::FabricError;
use crate::rcache::Invalidation;

/// Transport settings (the facade fills them from `WEFT_*` variables).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfiConfig {
    /// Provider name (`WEFT_FI_PROVIDER`, e.g. `tcp;ofi_rxm`); `None`: best available.
    pub provider: Option<String>,
    /// Domain name (`WEFT_FI_DOMAIN`, e.g. `lo`, `mlx5_0`); `None`: the provider's first.
    pub domain: Option<String>,
    /// Largest eager payload (default 16 KiB); receive buffers are this plus the 24-byte header.
    pub eager_limit: usize,
    /// Eager limit floor for providers that emulate RMA over sockets (`tcp`, `sockets`,
    /// `udp`, `net`), where a rendezvous read costs several round trips (default 64 KiB).
    pub eager_limit_emulated_rma: usize,
    /// Idle registrations kept by the registration cache (default 256; 0 disables caching).
    pub rcache_entries: usize,
    /// Registration-cache invalidation (`WEFT_RCACHE_MONITOR`): `on` (default) drops cached
    /// registrations whose memory is unmapped, learnt from a userfaultfd monitor, and caches
    /// nothing where userfaultfd is not permitted; `off` keeps them regardless (stale on
    /// pinning providers once memory is unmapped and mapped again: for tests).
    pub rcache_monitor: String,
    /// Pre-posted receive buffers (default 128; capped by the provider's rx queue size).
    pub rx_buffers: usize,
    /// Send-pool buffers for messages above `inject_size` (default 64; capped by tx size).
    pub tx_buffers: usize,
    /// Largest single `fi_read` (0: the provider's `max_msg_size`); larger gets are split.
    pub read_chunk: usize,
}

impl Default for OfiConfig {
    fn default() -> Self {
        OfiConfig {
            provider: None,
            domain: None,
            eager_limit: 16 << 10,
            eager_limit_emulated_rma: 64 << 10,
            rcache_entries: 256,
            rcache_monitor: "on".into(),
            rx_buffers: 128,
            tx_buffers: 64,
            read_chunk: 0,
        }
    }
}

impl OfiConfig {
    /// Defaults, with `provider`, `domain` and `rcache_monitor` from `WEFT_FI_PROVIDER`,
    /// `WEFT_FI_DOMAIN` and `WEFT_RCACHE_MONITOR`.
    pub fn from_env() -> OfiConfig {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let d = OfiConfig::default();
        OfiConfig {
            provider: var("WEFT_FI_PROVIDER"),
            domain: var("WEFT_FI_DOMAIN"),
            rcache_monitor: var("WEFT_RCACHE_MONITOR").unwrap_or(d.rcache_monitor.clone()),
            ..d
        }
    }

    /// The registration cache's invalidation for `rcache_monitor`. With `on` and no
    /// userfaultfd, the cache keeps nothing, and the first transport of the process says why
    /// on stderr.
    pub(super) fn invalidation(&self) -> Result<Invalidation, FabricError> {
        match self.rcache_monitor.as_str() {
            "off" => Ok(Invalidation::Off),
            "on" => Ok(match crate::monitor::subscribe() {
                Ok(s) => Invalidation::Monitor(Box::new(s)),
                Err(e) => {
                    static WARNED: std::sync::Once = std::sync::Once::new();
                    WARNED.call_once(|| {
                        eprintln!(
                            "weft: registration cache disabled (every rendezvous registers afresh): {e}"
                        )
                    });
                    Invalidation::Unavailable
                }
            }),
            v => Err(FabricError::Config(format!("WEFT_RCACHE_MONITOR must be on or off, not {v:?}"))),
        }
    }
}
