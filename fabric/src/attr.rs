//! What the transport asks of a provider, read by every object module that needs it: the
//! capabilities it requires ([`REQUIRED_CAPS`]) and the memory-registration modes it
//! implements ([`SUPPORTED_MR_MODE`], decoded into [`MrMode`]).
//!
//! This module imports no object module, so the objects form a DAG: [`crate::info`] offers
//! these bits in its hints and passes over entries that need others, [`crate::mr`] registers
//! memory as [`MrMode`] says, and neither reads the other.

use weft_fabric_sys as sys;

use crate::error::FabricError;

/// Capabilities the transport needs.
pub const REQUIRED_CAPS: u64 =
    (sys::FI_TAGGED | sys::FI_RMA | sys::FI_SEND | sys::FI_RECV | sys::FI_READ | sys::FI_REMOTE_READ) as u64;

/// Memory-registration modes the transport implements.
pub const SUPPORTED_MR_MODE: u64 = (sys::FI_MR_LOCAL
    | sys::FI_MR_VIRT_ADDR
    | sys::FI_MR_ALLOCATED
    | sys::FI_MR_PROV_KEY
    | sys::FI_MR_ENDPOINT) as u64;

/// How the provider wants memory registered (from `domain_attr.mr_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MrMode {
    /// `FI_MR_LOCAL`: local buffers of data transfers need a descriptor.
    pub local: bool,
    /// `FI_MR_VIRT_ADDR`: remote addresses are virtual addresses, otherwise offsets from
    /// the start of the region.
    pub virt_addr: bool,
    /// `FI_MR_PROV_KEY`: the provider chooses keys; otherwise we request unique ones.
    pub prov_key: bool,
    /// `FI_MR_ENDPOINT`: regions must be bound to the endpoint and enabled.
    pub endpoint: bool,
    /// `FI_MR_ALLOCATED`: only backed memory may be registered (always true for us).
    pub allocated: bool,
}

impl MrMode {
    /// Decode `mr_mode` bits; `FI_MR_RAW` (keys wider than 64 bits), `FI_MR_MMU_NOTIFY`,
    /// `FI_MR_RMA_EVENT` and `FI_MR_HMEM` are not implemented.
    pub fn from_bits(bits: u64, key_size: usize) -> Result<MrMode, FabricError> {
        let unsupported = bits & !SUPPORTED_MR_MODE;
        if unsupported != 0 {
            return Err(FabricError::MrMode(format!("mr_mode bits {unsupported:#x} are not implemented")));
        }
        if key_size > 8 {
            return Err(FabricError::MrMode(format!(
                "{key_size}-byte MR keys (only 64-bit keys fit an RKey)"
            )));
        }
        let has = |b: u32| bits & b as u64 != 0;
        Ok(MrMode {
            local: has(sys::FI_MR_LOCAL),
            virt_addr: has(sys::FI_MR_VIRT_ADDR),
            prov_key: has(sys::FI_MR_PROV_KEY),
            endpoint: has(sys::FI_MR_ENDPOINT),
            allocated: has(sys::FI_MR_ALLOCATED),
        })
    }
}
