//! `weft-fabric`: weft's network transport over libfabric.
//!
//! Two floors, each a DAG of modules (no module imports one that imports it back):
//!
//! **libfabric objects**, one module per object as in libfabric's `prov/` layout and
//! rust-ibverbs: [`library`] (the loaded libfabric: version, path), [`info`] (`fi_getinfo`,
//! provider selection), [`fabric`], [`domain`], [`av`], [`cq`], [`ep`], [`mr`] (+ [`rcache`],
//! the registration cache, invalidated by the userfaultfd [`monitor`]), with the data-path
//! calls apart in [`data`]. What several of them read — the capabilities the transport
//! requires and the memory-registration modes it implements ([`attr::MrMode`]) — is in
//! [`attr`], which imports no object. The imports follow the objects' parentage: fabric →
//! info; domain → fabric, info; av, cq → domain; ep → av, cq, domain, info; mr → domain, ep,
//! attr; info → attr, library; data → cq, ep; monitor → rcache; [`error`] below all.
//! Teardown order is enforced by ownership: every object holds an `Rc` to its parent
//! (endpoint → CQ, AV → domain → fabric; an MR → domain, and → endpoint under
//! `FI_MR_ENDPOINT`), so a parent is closed only after its last child. Calls into libfabric
//! are confined to these thin wrapper modules (in [`monitor`], only the creation of a
//! userfaultfd by system call) and `weft-fabric-sys`; the transport's `unsafe` blocks call
//! their `unsafe fn`s, whose contracts are about buffers outliving posted operations.
//!
//! **The transport**, [`transport`], built on the objects and split by concern as libfabric's
//! `prov/rxm` is: its data (`state.rs`: the [`OfiTransport`] struct, per-peer and per-get
//! state; `config.rs`; `wire.rs`: address and `RKey` formats) below its behaviour (peer
//! failure, RMA reads, completions, connections, eager messages, rendezvous), and
//! `impl Transport` on top. Its module doc has the file map and the protocol.
//!
//! [`OfiTransport`] implements the engine's `Transport`. Construction has two phases around
//! the runtime's modex:
//!
//! ```no_run
//! # use weft_fabric::{OfiConfig, OfiTransport};
//! # fn modex_exchange(_: Vec<u8>) -> Vec<(u32, Vec<u8>)> { unimplemented!() }
//! let cfg = OfiConfig { domain: Some("lo".into()), ..OfiConfig::from_env() };
//! let mut t = OfiTransport::open(0, 4, &cfg)?;
//! let all = modex_exchange(t.address());
//! t.connect(&all)?;
//! # Ok::<(), weft_fabric::FabricError>(())
//! ```

#![deny(unsafe_op_in_unsafe_fn)]

pub mod attr;
pub mod av;
pub mod cq;
pub mod data;
pub mod domain;
pub mod ep;
pub mod error;
pub mod fabric;
pub mod info;
pub mod library;
pub mod monitor;
pub mod mr;
pub mod rcache;
pub mod transport;

pub use error::FabricError;
pub use info::{providers, ProviderInfo};
pub use transport::{OfiConfig, OfiStats, OfiTransport, RemoteRegion};

pub use library::version;
