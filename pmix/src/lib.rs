//! `weft-pmix`: job bootstrap for weft.
//!
//! Owns the [`Runtime`] trait and its backends:
//! - [`client`]: a PMIx client on the system OpenPMIx library (`weft-run`, `mpirun`,
//!   `srun --mpi=pmix`, PRRTE);
//! - [`pmi2`]: a PMI-2 client over `PMI_FD` (MPICH's hydra, `srun --mpi=pmi2`);
//! - [`singleton`]: a process started without any launcher (size 1).
//!
//! [`from_env`] picks the backend from the environment a launcher leaves behind.
//!
//! Also: [`server`], the OpenPMIx server that the embedded launcher `weft-run` hosts,
//! [`launcher`], weft-run's fault-injection control connection, [`epoch`], its epoch service
//! for global restart (Reinit), and [`board`], the shared page through which weft-run tells
//! its ranks of deaths without a PMIx round trip.

mod error;
mod runtime;

pub mod board;
pub mod client;
pub mod epoch;
pub mod launcher;
pub mod pmi2;
pub mod server;
pub mod singleton;
pub mod universe;

pub use error::{Pmi2Error, RuntimeError};
pub use runtime::{server_timeout, Runtime, DEFAULT_TIMEOUT_SECS, ENV_TIMEOUT};

/// The runtime backends built into this library, in the order [`from_env`] tries them.
pub const BACKENDS: &[&str] = &["pmix", "pmi2", "singleton"];

/// Which backend [`from_env`] would take in an environment described by `var` (a lookup of
/// environment variables), and the variable that decides it:
/// `PMIX_RANK` / `PMIX_NAMESPACE` → pmix (also under `weft-run`, which hosts a PMIx server);
/// `PMI_FD` → pmi2; none of them → singleton.
pub fn select(var: impl Fn(&str) -> bool) -> (&'static str, Option<&'static str>) {
    for (backend, vars) in [("pmix", &["PMIX_RANK", "PMIX_NAMESPACE"][..]), ("pmi2", &[pmi2::ENV_FD][..])] {
        if let Some(v) = vars.iter().find(|v| var(v)) {
            return (backend, Some(v));
        }
    }
    ("singleton", None)
}

/// Pick and initialise the runtime backend for this process (order: see [`select`]).
pub fn from_env() -> Result<Box<dyn Runtime>, RuntimeError> {
    match select(|v| std::env::var_os(v).is_some()).0 {
        "pmix" => Ok(Box::new(client::PmixRuntime::init()?)),
        "pmi2" => Ok(Box::new(pmi2::Pmi2Runtime::from_env()?)),
        _ => Ok(Box::new(singleton::Singleton::new())),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn selection_order() {
        let env = |set: &'static [&'static str]| move |v: &str| set.contains(&v);
        assert_eq!(super::select(env(&[])), ("singleton", None));
        assert_eq!(super::select(env(&["PMI_FD"])), ("pmi2", Some("PMI_FD")));
        assert_eq!(super::select(env(&["PMI_FD", "PMIX_RANK"])), ("pmix", Some("PMIX_RANK")));
        assert_eq!(super::select(env(&["PMIX_NAMESPACE"])), ("pmix", Some("PMIX_NAMESPACE")));
        // weft-run's own variables choose nothing: its ranks are PMIx clients.
        assert_eq!(super::select(env(&["WEFT_RUN_CTL", "WEFT_HOST_SLOT"])), ("singleton", None));
    }
}
