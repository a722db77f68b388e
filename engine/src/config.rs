//! The engine's settings: [`EngineConfig`] (filled by the facade from `WEFT_*` variables) and
//! [`ProgressMode`]. Plain data; nothing here names the protocols.

use std::time::Duration;

/// How waiting callers spend idle time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    /// Spin on progress (lowest latency; one rank per core); a wait that stays idle for
    /// 1024 iterations (tens of µs: a peer's large copy, not a message in
    /// flight) yields the core at each further idle iteration.
    Poll,
    /// Yield the core after a short spin (more ranks than cores).
    Yield,
}

/// Engine settings (the facade fills them from `WEFT_*` variables).
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Idle behaviour of blocking calls.
    pub progress: ProgressMode,
    /// Period of the slow path (failure polling of transports and runtime).
    pub slow_period: Duration,
    /// Largest message a transport may send eagerly, capped by the transport's own limit.
    pub eager_limit: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            progress: ProgressMode::Poll,
            slow_period: Duration::from_micros(200),
            eager_limit: usize::MAX,
        }
    }
}
