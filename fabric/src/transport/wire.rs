//! What the transport puts on the wire besides messages: the endpoint address it publishes
//! in the modex ([`parse_address`]), the [`RemoteRegion`] a rendezvous `RKey` carries, and
//! the tag of wire-up messages ([`WIREUP_TAG`]). Pure encoding: no libfabric call.

use weft_engine::transport::RKey;

/// Wire format of the published address.
pub(super) const ADDR_MAGIC: &[u8; 4] = b"WFA1";
const ADDR_HDR: usize = 4 + 4 + 2;

/// RKey layout: remote address or offset (8) | MR key (8) | length (8) | magic (2) |
/// version (1) | flags (1) | owner world rank (4).
const RKEY_MAGIC: u16 = 0x5746;
const RKEY_VERSION: u8 = 1;

/// Decoded rendezvous key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteRegion {
    /// Address to read at: a virtual address (`FI_MR_VIRT_ADDR`) or an offset in the region.
    pub addr: u64,
    /// Registration key.
    pub key: u64,
    /// Length of the exposed range.
    pub len: u64,
    /// World rank that exposed it.
    pub owner: u32,
}

impl RemoteRegion {
    /// Encode into the engine's 32-byte key.
    pub fn encode(&self) -> RKey {
        let mut k = [0u8; 32];
        k[0..8].copy_from_slice(&self.addr.to_le_bytes());
        k[8..16].copy_from_slice(&self.key.to_le_bytes());
        k[16..24].copy_from_slice(&self.len.to_le_bytes());
        k[24..26].copy_from_slice(&RKEY_MAGIC.to_le_bytes());
        k[26] = RKEY_VERSION;
        k[28..32].copy_from_slice(&self.owner.to_le_bytes());
        k
    }

    /// Decode a key; `None` if it was not made by [`RemoteRegion::encode`].
    pub fn decode(k: &RKey) -> Option<RemoteRegion> {
        let u64_at = |o: usize| u64::from_le_bytes(k[o..o + 8].try_into().expect("8 bytes"));
        if u16::from_le_bytes([k[24], k[25]]) != RKEY_MAGIC || k[26] != RKEY_VERSION || k[27] != 0 {
            return None;
        }
        Some(RemoteRegion {
            addr: u64_at(0),
            key: u64_at(8),
            len: u64_at(16),
            owner: u32::from_le_bytes(k[28..32].try_into().expect("4 bytes")),
        })
    }
}

/// Encode the endpoint name for the modex.
pub(super) fn encode_address(addr_format: u32, name: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(ADDR_HDR + name.len());
    v.extend_from_slice(ADDR_MAGIC);
    v.extend_from_slice(&addr_format.to_le_bytes());
    v.extend_from_slice(&(name.len() as u16).to_le_bytes());
    v.extend_from_slice(name);
    v
}

/// Validate a peer's published address against ours (same format, same name length) and
/// return the raw endpoint name.
pub fn parse_address(b: &[u8], addr_format: u32, name_len: usize) -> Result<&[u8], String> {
    if b.len() < ADDR_HDR {
        return Err(format!("address is {} bytes, shorter than its {ADDR_HDR}-byte header", b.len()));
    }
    if &b[..4] != ADDR_MAGIC {
        return Err("not a weft-fabric address (bad magic)".into());
    }
    let fmt = u32::from_le_bytes(b[4..8].try_into().expect("4 bytes"));
    if fmt != addr_format {
        return Err(format!("address format {fmt} differs from ours ({addr_format}): different provider?"));
    }
    let len = u16::from_le_bytes([b[8], b[9]]) as usize;
    if len != name_len || b.len() != ADDR_HDR + len {
        return Err(format!(
            "endpoint name of {} bytes (header says {len}), expected {name_len}",
            b.len() - ADDR_HDR
        ));
    }
    Ok(&b[ADDR_HDR..])
}

/// Tag bit of the wire-up messages (data messages carry the sender's rank, below 2^32).
pub const WIREUP_TAG: u64 = 1 << 63;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rkey_roundtrip() {
        let r = RemoteRegion { addr: 0x7fff_1234_5678, key: 0xdead_beef_cafe, len: 64 << 20, owner: 3 };
        let k = r.encode();
        assert_eq!(RemoteRegion::decode(&k), Some(r));
        let mut bad = k;
        bad[24] ^= 1;
        assert_eq!(RemoteRegion::decode(&bad), None);
        assert_eq!(RemoteRegion::decode(&[0u8; 32]), None);
        let mut bad = k;
        bad[27] = 1;
        assert_eq!(RemoteRegion::decode(&bad), None, "unknown flags");
    }

    #[test]
    fn address_parsing_rejects_garbage() {
        let name = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
        let a = encode_address(1, &name);
        assert_eq!(parse_address(&a, 1, 16).unwrap(), &name);
        assert!(parse_address(&[], 1, 16).is_err());
        assert!(parse_address(b"garbage garbage garbage", 1, 16).is_err());
        assert!(parse_address(&a, 2, 16).unwrap_err().contains("format"));
        assert!(parse_address(&a[..a.len() - 1], 1, 16).is_err());
        let mut long = a.clone();
        long.push(0);
        assert!(parse_address(&long, 1, 16).is_err());
        assert!(parse_address(&encode_address(1, &name[..8]), 1, 16).is_err());
        // Pseudo-random garbage never panics.
        let mut x = 88172645463325252u64;
        for n in 0..2000usize {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut v: Vec<u8> = (0..n % 40).map(|i| (x >> (i % 8 * 8)) as u8).collect();
            if n % 3 == 0 && v.len() >= 4 {
                v[..4].copy_from_slice(ADDR_MAGIC);
            }
            let _ = parse_address(&v, 1, 16);
        }
    }
}
