//! [`OfiTransport`]: the engine's `Transport` over a libfabric reliable-datagram endpoint.
//!
//! One concern a file, as in libfabric's `prov/rxm` (`rxm_conn.c`, `rxm_ep.c`, `rxm_cq.c`,
//! `rxm_msg.c`). Data below behaviour: `config.rs`, `wire.rs` and `state.rs` hold the data and
//! import no other file of the transport; each behaviour file imports only those three, and
//! calls only into the files listed above it in the table, so its calls form a DAG as its
//! imports do. Each behaviour file is an `impl OfiTransport` block of its own: the split adds
//! no `dyn`, no boxing and, the bodies `api.rs` calls being `#[inline]`, no call on the data
//! path.
//!
//! | file | owns |
//! |---|---|
//! | `config.rs` | [`OfiConfig`]: the settings and their `WEFT_*` variables |
//! | `wire.rs` | what crosses the wire besides messages: the modex address, the [`RemoteRegion`] in an `RKey`, [`WIREUP_TAG`] |
//! | `state.rs` | the [`OfiTransport`] struct (libfabric objects, buffers, per-peer and per-get data), [`OfiStats`], its accessors |
//! | `failure.rs` | peer liveness: usable or not, marking a peer dead and ending its gets |
//! | `read.rs` | the `fi_read`s of a get: posting them in chunks, counting their completions |
//! | `completion.rs` | the CQ: posting receive buffers, reading completions and errors, dispatching each to its slot |
//! | `connection.rs` | opening the transport, publishing and inserting addresses, wire-up messages |
//! | `eager.rs` | eager messages: the send (inject or pool) and the in-order delivery of receives |
//! | `rndv.rs` | rendezvous: exposing a buffer (registration cache, `RKey`), starting and reporting gets |
//! | `api.rs` | `impl Transport for OfiTransport`: each method handing over to the file above that owns it |
//!
//! The protocol:
//!
//! - **Eager messages**: libfabric is a FIFO byte pipe here (the engine matches tags in
//!   software). Each message is one tagged send of `[Header][payload]` whose 64-bit tag is
//!   the sender's world rank, so the receiver learns the source from the completion without
//!   `FI_SOURCE` or an address lookup. Up to `inject_size` bytes go by `fi_tinject` (no
//!   completion); larger ones — and small ones the provider refuses to inject — are copied
//!   into a buffer of a pre-registered send pool and sent with `fi_tsend`, the completion
//!   returns the buffer. `try_send` answers `Ok(false)` on
//!   `-FI_EAGAIN` or an empty pool (after reading the CQ once).
//! - **Receives**: a ring of `rx_buffers` pre-posted buffers of `eager_limit + 24` bytes, each
//!   matching any tag. Completions are delivered in the order the buffers were posted (the
//!   order in which messages matched them), so per-peer FIFO holds even if a provider reports
//!   a long message's completion after a later short one.
//! - **Rendezvous**: `expose` registers the user's buffer (through the
//!   [`RCache`](crate::rcache::RCache)) for `FI_REMOTE_READ` and describes it in the RKey; `get`
//!   posts `fi_read`s straight into the destination (split at `max_msg_size` or `read_chunk`),
//!   reported by `poll_gets`. Nothing is staged: the user's buffer is the registered region.
//! - **Failures**: a CQ error entry on a send, or a connection-loss error on a read, marks the
//!   peer dead; its reads in flight complete at once with `PeerDead` through `poll_gets`, and
//!   `poll_failures` reports it once.
//! - **Wire-up**: providers that connect lazily under `FI_EP_RDM` (`ofi_rxm`, the RDM-native
//!   `tcp`/`net`) cannot report a peer that died before the first connection to it: every send
//!   starts a connection attempt, the attempt is refused, and the send returns `-FI_EAGAIN`, with
//!   no error completion, for as long as one retries (1.17 and 2.5.1 alike). So `connect` queues
//!   one zero-byte message (tag [`WIREUP_TAG`]) to every new peer, and `poll` sends them as the
//!   send pool allows, until the provider has accepted one per peer: from then on the connection
//!   exists and its loss is reported as an error completion. The receiver drops these messages.

mod api;
mod completion;
mod config;
mod connection;
mod eager;
mod failure;
mod read;
mod rndv;
mod state;
mod wire;

#[cfg(test)]
mod tests;

pub use config::OfiConfig;
pub use state::{OfiStats, OfiTransport};
pub use wire::{parse_address, RemoteRegion, WIREUP_TAG};
