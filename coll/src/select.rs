//! Algorithm names, the per-collective override table (`WEFT_COLL_<NAME>` and the
//! communicator info keys `coll_<name>`), and the default selection rules.
//!
//! Precedence: communicator info key, then environment, then the rules below. An override
//! that would reorder a non-commutative reduction falls back to the order-preserving
//! default; `recdbl` allgather on a non-power-of-two size runs Bruck.

use weft_engine::{Error, Result};

use crate::Kind;

/// A collective algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Alg {
    /// Binomial tree.
    Binomial,
    /// k-nomial tree (radix 4).
    Knomial,
    /// Locality-agnostic binary tree over all ranks ("flat binary" of the ERA paper).
    Flat,
    /// Star / linear: the root talks to every rank directly; gather/scatter/alltoall post
    /// every transfer at once.
    Linear,
    /// Hierarchical: binary tree between node leaders, binary tree inside each node.
    BinBin,
    /// Hierarchical: binary tree between node leaders, star inside each node.
    BinStar,
    /// Recursive doubling.
    RecDbl,
    /// Bruck (allgather) / dissemination (barrier).
    Bruck,
    /// Ring.
    Ring,
    /// Rabenseifner: recursive-halving reduce-scatter + recursive-doubling allgather.
    Rabenseifner,
    /// Pairwise exchange.
    Pairwise,
    /// Reduce to rank 0 (binomial) then scatter: order-preserving reduce-scatter.
    Basic,
}

impl Alg {
    /// Every algorithm.
    pub const ALL: [Alg; 12] = [
        Alg::Binomial,
        Alg::Knomial,
        Alg::Flat,
        Alg::Linear,
        Alg::BinBin,
        Alg::BinStar,
        Alg::RecDbl,
        Alg::Bruck,
        Alg::Ring,
        Alg::Rabenseifner,
        Alg::Pairwise,
        Alg::Basic,
    ];

    /// Name used in overrides.
    pub fn name(self) -> &'static str {
        match self {
            Alg::Binomial => "binomial",
            Alg::Knomial => "knomial",
            Alg::Flat => "flat",
            Alg::Linear => "linear",
            Alg::BinBin => "binbin",
            Alg::BinStar => "binstar",
            Alg::RecDbl => "recdbl",
            Alg::Bruck => "bruck",
            Alg::Ring => "ring",
            Alg::Rabenseifner => "rabenseifner",
            Alg::Pairwise => "pairwise",
            Alg::Basic => "basic",
        }
    }

    /// Parse a name (also accepts `bin/bin`, `bin/star`, `dissemination`).
    pub fn from_name(s: &str) -> Option<Alg> {
        let s = s.trim().to_ascii_lowercase();
        let s = match s.as_str() {
            "bin/bin" => "binbin",
            "bin/star" => "binstar",
            "dissemination" => "bruck",
            "recursive_doubling" => "recdbl",
            x => x,
        };
        Alg::ALL.into_iter().find(|a| a.name() == s)
    }
}

const TREES: &[Alg] = &[Alg::Binomial, Alg::Knomial, Alg::Flat, Alg::Linear, Alg::BinBin, Alg::BinStar];

/// Algorithms implemented for `kind`.
pub fn valid(kind: Kind) -> Vec<Alg> {
    use Alg::*;
    match kind {
        Kind::Barrier => [&[Bruck][..], TREES].concat(),
        Kind::Bcast | Kind::Reduce => TREES.to_vec(),
        Kind::Allreduce => [&[RecDbl, Ring, Rabenseifner][..], TREES].concat(),
        Kind::Gather | Kind::Scatter => vec![Binomial, Linear],
        Kind::Gatherv | Kind::Scatterv => vec![Linear],
        Kind::Allgather => vec![Ring, RecDbl, Bruck],
        Kind::Allgatherv => vec![Ring],
        Kind::Alltoall | Kind::Alltoallv => vec![Pairwise, Linear],
        Kind::ReduceScatter | Kind::ReduceScatterBlock => vec![Ring, Pairwise, Basic],
        Kind::Scan | Kind::Exscan => vec![RecDbl, Linear],
    }
}

/// Parse an algorithm name for `kind`; unknown or inapplicable names are an error.
pub fn parse(kind: Kind, s: &str) -> Result<Alg> {
    let ok = valid(kind);
    match Alg::from_name(s) {
        Some(a) if ok.contains(&a) => Ok(a),
        _ => Err(Error::InvalidArg(format!(
            "unknown algorithm {s:?} for {}: expected one of {}",
            kind.name(),
            ok.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// Per-collective algorithm overrides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    algs: [Option<Alg>; Kind::ALL.len()],
}

impl Overrides {
    /// The override of `kind`.
    pub fn get(&self, kind: Kind) -> Option<Alg> {
        self.algs[kind as usize]
    }

    /// Set (or with `auto`/empty, clear) the override of `kind`.
    pub fn set(&mut self, kind: Kind, value: &str) -> Result<()> {
        let v = value.trim();
        self.algs[kind as usize] = if v.is_empty() || v == "auto" { None } else { Some(parse(kind, v)?) };
        Ok(())
    }

    /// Set from an environment variable `WEFT_COLL_<NAME>`; `Ok(false)` if `key` is not one.
    pub fn set_env(&mut self, key: &str, value: &str) -> Result<bool> {
        match Kind::ALL.into_iter().find(|k| k.env_key() == key) {
            Some(k) => self.set(k, value).map(|_| true),
            None => Ok(false),
        }
    }

    /// Current value of `WEFT_COLL_<NAME>` as text (`auto` when not set).
    pub fn env_value(&self, key: &str) -> Option<String> {
        let k = Kind::ALL.into_iter().find(|k| k.env_key() == key)?;
        Some(self.get(k).map_or("auto", |a| a.name()).to_string())
    }
}

/// What selection looks at.
pub struct Shape {
    /// Communicator size.
    pub n: u32,
    /// Bytes this rank contributes (per block for gather/scatter/alltoall/allgather).
    pub bytes: usize,
    /// Nodes the communicator spans.
    pub nodes: usize,
    /// The operation is commutative (true when there is none).
    pub commute: bool,
}

/// True if `alg` keeps rank order for non-commutative reductions of `kind`.
fn order_preserving(kind: Kind, alg: Alg) -> bool {
    match kind {
        Kind::Allreduce => matches!(alg, Alg::RecDbl | Alg::Binomial | Alg::Knomial),
        Kind::Reduce => matches!(alg, Alg::Binomial | Alg::Knomial),
        Kind::ReduceScatter | Kind::ReduceScatterBlock => alg == Alg::Basic,
        _ => true,
    }
}

/// The default algorithm.
pub fn default(kind: Kind, s: &Shape) -> Alg {
    use Alg::*;
    let hier = s.nodes > 1 && s.n > 2;
    match kind {
        Kind::Barrier if hier => BinBin,
        Kind::Barrier => Bruck,
        Kind::Bcast if hier => BinBin,
        Kind::Bcast => Binomial,
        Kind::Reduce if hier && s.commute => BinBin,
        Kind::Reduce => Binomial,
        Kind::Allreduce if !s.commute => RecDbl,
        Kind::Allreduce if hier && s.bytes <= 65536 => BinBin,
        Kind::Allreduce if s.bytes <= 8192 || (s.bytes / 8) < s.n as usize => RecDbl,
        Kind::Allreduce => Rabenseifner,
        Kind::Gather | Kind::Scatter if s.bytes <= 4096 => Binomial,
        Kind::Gather | Kind::Scatter | Kind::Gatherv | Kind::Scatterv => Linear,
        Kind::Allgather if s.bytes * s.n as usize <= 65536 => {
            if s.n.is_power_of_two() {
                RecDbl
            } else {
                Bruck
            }
        }
        Kind::Allgather | Kind::Allgatherv => Ring,
        Kind::Alltoall | Kind::Alltoallv if s.n <= 8 => Linear,
        Kind::Alltoall | Kind::Alltoallv => Pairwise,
        Kind::ReduceScatter | Kind::ReduceScatterBlock if !s.commute => Basic,
        Kind::ReduceScatter | Kind::ReduceScatterBlock => Ring,
        Kind::Scan | Kind::Exscan => RecDbl,
    }
}

/// The algorithm to run: override (if applicable) or default.
pub fn choose(kind: Kind, over: Option<Alg>, s: &Shape) -> Alg {
    match over {
        Some(a) if s.commute || order_preserving(kind, a) => a,
        _ => default(kind, s),
    }
}
