//! The diagnosis messages and their encoding (little endian, class `DGRP`). Every payload
//! starts with a kind byte; decoding never panics: a short, long or inconsistent payload is a
//! [`Malformed`] error, which the driver counts and drops.
//!
//! | kind | message | body after the kind byte |
//! |---|---|---|
//! | 1 | `TestReq` | seq u32, arg u64 |
//! | 2 | `TestReply` | seq u32, result u64 |
//! | 3 | `Events` | count u32, then `count` × (rank u32, counter u32) |

pub use crate::wire::Malformed;

/// Most event entries accepted in one message (bounds the allocation a forged count causes).
pub const MAX_EVENTS: usize = 1 << 16;

/// A diagnosis message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    /// Test `seq`: run the test task on `arg` and reply.
    TestReq { seq: u32, arg: u64 },
    /// The reply to test `seq`: the task's result.
    TestReply { seq: u32, result: u64 },
    /// Event counters `(rank, counter)` newer than the sender had before (reliable broadcast).
    Events(Vec<(u32, u32)>),
}

const K_REQ: u8 = 1;
const K_REPLY: u8 = 2;
const K_EVENTS: u8 = 3;

impl Msg {
    /// Append the encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        match self {
            Msg::TestReq { seq, arg } => {
                out.push(K_REQ);
                out.extend_from_slice(&seq.to_le_bytes());
                out.extend_from_slice(&arg.to_le_bytes());
            }
            Msg::TestReply { seq, result } => {
                out.push(K_REPLY);
                out.extend_from_slice(&seq.to_le_bytes());
                out.extend_from_slice(&result.to_le_bytes());
            }
            Msg::Events(ev) => {
                out.push(K_EVENTS);
                out.extend_from_slice(&(ev.len() as u32).to_le_bytes());
                for (r, c) in ev {
                    out.extend_from_slice(&r.to_le_bytes());
                    out.extend_from_slice(&c.to_le_bytes());
                }
            }
        }
    }

    /// Decode a payload.
    pub fn decode(p: &[u8]) -> Result<Msg, Malformed> {
        let (&kind, body) = p.split_first().ok_or(Malformed("empty dgrp payload"))?;
        let u32_at = |o: usize| -> Result<u32, Malformed> {
            body.get(o..o + 4)
                .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
                .ok_or(Malformed("short dgrp payload"))
        };
        let u64_at = |o: usize| -> Result<u64, Malformed> {
            body.get(o..o + 8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                .ok_or(Malformed("short dgrp payload"))
        };
        let m = match kind {
            K_REQ | K_REPLY => {
                if body.len() != 12 {
                    return Err(Malformed("dgrp test message of the wrong length"));
                }
                let (seq, v) = (u32_at(0)?, u64_at(4)?);
                if kind == K_REQ {
                    Msg::TestReq { seq, arg: v }
                } else {
                    Msg::TestReply { seq, result: v }
                }
            }
            K_EVENTS => {
                let n = u32_at(0)? as usize;
                if n > MAX_EVENTS {
                    return Err(Malformed("too many dgrp events"));
                }
                if body.len() != 4 + 8 * n {
                    return Err(Malformed("dgrp events of the wrong length"));
                }
                Msg::Events(
                    (0..n).map(|i| Ok((u32_at(4 + 8 * i)?, u32_at(8 + 8 * i)?))).collect::<Result<_, _>>()?,
                )
            }
            _ => return Err(Malformed("unknown dgrp message kind")),
        };
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects() {
        for m in [
            Msg::TestReq { seq: 7, arg: 1000 },
            Msg::TestReply { seq: u32::MAX, result: 168 },
            Msg::Events(vec![]),
            Msg::Events(vec![(3, 1), (9, 5)]),
        ] {
            let mut b = Vec::new();
            m.encode_into(&mut b);
            assert_eq!(Msg::decode(&b), Ok(m.clone()));
            // Every truncation and one extra byte are rejected, never a panic.
            for l in 0..b.len() {
                assert!(Msg::decode(&b[..l]).is_err(), "{m:?} cut at {l}");
            }
            b.push(0);
            assert!(Msg::decode(&b).is_err());
        }
        assert!(Msg::decode(&[9]).is_err());
        let mut forged = vec![K_EVENTS];
        forged.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(Msg::decode(&forged).is_err());
    }
}
