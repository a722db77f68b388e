//! `weft-pmix`: job bootstrap for weft.
//!
//! Owns the [`Runtime`] trait and its backends:
//! - [`launcher`]: the client side of the embedded launcher `weft-run` (one host);
//! - [`client`]: a PMIx client on the system OpenPMIx library (`mpirun`, `srun --mpi=pmix`, PRRTE);
//! - [`singleton`]: a process started without any launcher (size 1).
//!
//! [`from_env`] picks the backend from the environment a launcher leaves behind.

mod error;
mod runtime;

pub mod client;
pub mod launcher;
pub mod singleton;

pub use error::RuntimeError;
pub use runtime::Runtime;

/// Pick and initialise the runtime backend for this process:
/// `WEFT_RUN_SOCK` set → [`launcher::LauncherRuntime`]; `PMIX_NAMESPACE` / `PMIX_RANK` set →
/// [`client::PmixRuntime`]; neither → [`singleton::Singleton`].
pub fn from_env() -> Result<Box<dyn Runtime>, RuntimeError> {
    if std::env::var_os(launcher::ENV_SOCK).is_some() {
        return Ok(Box::new(launcher::LauncherRuntime::connect()?));
    }
    if std::env::var_os("PMIX_NAMESPACE").is_some() || std::env::var_os("PMIX_RANK").is_some() {
        return Ok(Box::new(client::PmixRuntime::init()?));
    }
    Ok(Box::new(singleton::Singleton::new()))
}
