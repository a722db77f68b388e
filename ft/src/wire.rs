//! Encoding of the FT messages (little endian). Every payload starts with a kind byte that
//! must match the message class. Decoding never panics: a short, long or inconsistent
//! payload is an error, which the glue counts and drops.
//!
//! | kind | class | body after the kind byte |
//! |---|---|---|
//! | 1 `Revoke` | REVOKE | ctx u32, epoch u32 |
//! | 2 `Up` / 3 `Decide` | AGREE | ctx u32, epoch u32, seq u32, flag u64, newctx u32, nfailed u32, `failed[nfailed]` u32, acked_all u8 (1 = "everything", 0 = list), nacked u32, `acked[nacked]` u32 |
//! | 6 `Fast` | AGREE | ctx u32, epoch u32, seq u32, step u8, then the value as for `Up` |
//! | 7 `Abort` | AGREE | ctx u32, epoch u32, seq u32 |
//! | 8 short | AGREE | kind u8 (2, 3 or 6), step u8 (0 unless 6), acked_all u8, ctx u32, epoch u32, seq u32, newctx u32, flag u64 |
//! | 4 `Heartbeat` | HEARTBEAT | counter u64 |
//! | 5 `Finding` | FINDING | failed world rank u32 |
//!
//! Ranks in agreement messages are communicator ranks; in findings, world ranks.
//!
//! Kind 8 is how `Up`, `Decide` and `Fast` travel when their value has no rank lists (no
//! failure known, none acknowledged: every failure-free agreement). Its 28 bytes plus the
//! engine header fit one 64-byte shared-memory record, one cache line to move between cores
//! instead of two for the general form's 39 bytes.

use crate::agree::{Msg as AgreeMsg, Value};

/// A decoded FT message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wire {
    /// Revoke the communicator `(ctx, epoch)`.
    Revoke { ctx: u32, epoch: u32 },
    /// Agreement message of instance `seq` on `(ctx, epoch)`.
    Agree { ctx: u32, epoch: u32, seq: u32, msg: AgreeMsg },
    /// Heartbeat.
    Heartbeat { counter: u64 },
    /// World rank `rank` was found failed by a detector.
    Finding { rank: u32 },
}

/// Why a payload was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// Largest rank list accepted in one message (bounds the allocation a forged count can cause).
pub const MAX_LIST: usize = 1 << 16;

const K_REVOKE: u8 = 1;
const K_UP: u8 = 2;
const K_DECIDE: u8 = 3;
const K_HB: u8 = 4;
const K_FINDING: u8 = 5;
const K_FAST: u8 = 6;
const K_ABORT: u8 = 7;
const K_SHORT: u8 = 8;
/// Length of a kind-8 payload.
const SHORT_LEN: usize = 28;

fn put_list(out: &mut Vec<u8>, l: &[u32]) {
    out.extend_from_slice(&(l.len() as u32).to_le_bytes());
    for x in l {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn put_value(o: &mut Vec<u8>, v: &Value) {
    o.extend_from_slice(&v.flag.to_le_bytes());
    o.extend_from_slice(&v.ctx.to_le_bytes());
    put_list(o, &v.failed);
    match &v.acked {
        None => {
            o.push(1);
            put_list(o, &[]);
        }
        Some(a) => {
            o.push(0);
            put_list(o, a);
        }
    }
}

impl Wire {
    /// The engine message class this message travels in.
    pub fn class(&self) -> u8 {
        match self {
            Wire::Revoke { .. } => crate::class::REVOKE,
            Wire::Agree { .. } => crate::class::AGREE,
            Wire::Heartbeat { .. } => crate::class::HEARTBEAT,
            Wire::Finding { .. } => crate::class::FINDING,
        }
    }

    /// Encode.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::with_capacity(48);
        self.encode_into(&mut o);
        o
    }

    /// Encode, appending to `o`.
    pub fn encode_into(&self, o: &mut Vec<u8>) {
        match self {
            Wire::Revoke { ctx, epoch } => {
                o.push(K_REVOKE);
                o.extend_from_slice(&ctx.to_le_bytes());
                o.extend_from_slice(&epoch.to_le_bytes());
            }
            Wire::Agree { ctx, epoch, seq, msg } => {
                let (k, step, v) = match msg {
                    AgreeMsg::Up(v) => (K_UP, None, Some(v)),
                    AgreeMsg::Decide(v) => (K_DECIDE, None, Some(v)),
                    AgreeMsg::Fast { step, v } => (K_FAST, Some(*step), Some(v)),
                    AgreeMsg::Abort => (K_ABORT, None, None),
                };
                if let Some(v) =
                    v.filter(|v| v.failed.is_empty() && v.acked.as_ref().is_none_or(Vec::is_empty))
                {
                    o.extend_from_slice(&[K_SHORT, k, step.unwrap_or(0), v.acked.is_none() as u8]);
                    for x in [ctx, epoch, seq, &v.ctx] {
                        o.extend_from_slice(&x.to_le_bytes());
                    }
                    o.extend_from_slice(&v.flag.to_le_bytes());
                    return;
                }
                o.push(k);
                o.extend_from_slice(&ctx.to_le_bytes());
                o.extend_from_slice(&epoch.to_le_bytes());
                o.extend_from_slice(&seq.to_le_bytes());
                o.extend(step);
                if let Some(v) = v {
                    put_value(o, v);
                }
            }
            Wire::Heartbeat { counter } => {
                o.push(K_HB);
                o.extend_from_slice(&counter.to_le_bytes());
            }
            Wire::Finding { rank } => {
                o.push(K_FINDING);
                o.extend_from_slice(&rank.to_le_bytes());
            }
        }
    }

    /// Decode a payload that arrived in message class `cls`.
    pub fn decode(cls: u8, b: &[u8]) -> Result<Wire, Malformed> {
        let mut r = Reader { b, i: 0 };
        let k = r.u8()?;
        let w = match (cls, k) {
            (crate::class::REVOKE, K_REVOKE) => Wire::Revoke { ctx: r.u32()?, epoch: r.u32()? },
            (crate::class::AGREE, K_UP | K_DECIDE | K_FAST | K_ABORT) => {
                let (ctx, epoch, seq) = (r.u32()?, r.u32()?, r.u32()?);
                let msg = match k {
                    K_ABORT => AgreeMsg::Abort,
                    K_FAST => {
                        let step = r.u8()?;
                        AgreeMsg::Fast { step, v: r.value()? }
                    }
                    K_UP => AgreeMsg::Up(r.value()?),
                    _ => AgreeMsg::Decide(r.value()?),
                };
                Wire::Agree { ctx, epoch, seq, msg }
            }
            (crate::class::AGREE, K_SHORT) => {
                // Fixed size: one length check, then plain loads (the failure-free hot path).
                let x: &[u8; SHORT_LEN] =
                    b.try_into().map_err(|_| Malformed("short agreement message length"))?;
                r.i = SHORT_LEN;
                let u32_at = |i: usize| u32::from_le_bytes([x[i], x[i + 1], x[i + 2], x[i + 3]]);
                let (inner, step, all) = (x[1], x[2], x[3]);
                let (ctx, epoch, seq, newctx) = (u32_at(4), u32_at(8), u32_at(12), u32_at(16));
                let flag = u64::from(u32_at(20)) | u64::from(u32_at(24)) << 32;
                let acked = match all {
                    0 => Some(Vec::new()),
                    1 => None,
                    _ => return Err(Malformed("bad acked-set marker")),
                };
                let v = Value { flag, ctx: newctx, failed: Vec::new(), acked };
                let msg = match (inner, step) {
                    (K_FAST, step) => AgreeMsg::Fast { step, v },
                    (K_UP, 0) => AgreeMsg::Up(v),
                    (K_DECIDE, 0) => AgreeMsg::Decide(v),
                    _ => return Err(Malformed("bad short agreement message")),
                };
                Wire::Agree { ctx, epoch, seq, msg }
            }
            (crate::class::HEARTBEAT, K_HB) => Wire::Heartbeat { counter: r.u64()? },
            (crate::class::FINDING, K_FINDING) => Wire::Finding { rank: r.u32()? },
            _ => return Err(Malformed("kind does not match class")),
        };
        if r.i != b.len() {
            return Err(Malformed("trailing bytes"));
        }
        Ok(w)
    }
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Malformed> {
        let end = self.i.checked_add(n).ok_or(Malformed("length overflow"))?;
        let s = self.b.get(self.i..end).ok_or(Malformed("truncated"))?;
        self.i = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, Malformed> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self) -> Result<u64, Malformed> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }
    fn list(&mut self) -> Result<Vec<u32>, Malformed> {
        let n = self.u32()? as usize;
        if n > MAX_LIST || n.saturating_mul(4) > self.b.len() - self.i {
            return Err(Malformed("rank list longer than the payload"));
        }
        (0..n).map(|_| self.u32()).collect()
    }
    fn value(&mut self) -> Result<Value, Malformed> {
        let flag = self.u64()?;
        let ctx = self.u32()?;
        let failed = self.list()?;
        let all = self.u8()?;
        let acked = self.list()?;
        let acked = match all {
            1 if acked.is_empty() => None,
            0 => Some(acked),
            _ => return Err(Malformed("bad acked-set marker")),
        };
        let v = Value { flag, ctx, failed, acked };
        if !v.is_canonical() {
            return Err(Malformed("rank lists not sorted"));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Wire> {
        let v = Value { flag: 0xdead_beef, ctx: 12, failed: vec![1, 5], acked: Some(vec![1]) };
        let short = Value { flag: u64::MAX - 1, ctx: 77, failed: vec![], acked: Some(vec![]) };
        vec![
            Wire::Revoke { ctx: 4, epoch: 99 },
            Wire::Agree { ctx: 2, epoch: 7, seq: 3, msg: AgreeMsg::Up(v.clone()) },
            Wire::Agree { ctx: 2, epoch: 7, seq: 3, msg: AgreeMsg::Fast { step: 2, v: v.clone() } },
            Wire::Agree { ctx: 2, epoch: 7, seq: 3, msg: AgreeMsg::Abort },
            Wire::Agree {
                ctx: 2,
                epoch: 7,
                seq: 3,
                msg: AgreeMsg::Decide(Value { acked: None, ..v.clone() }),
            },
            // Short forms (no rank lists).
            Wire::Agree { ctx: 2, epoch: 7, seq: 9, msg: AgreeMsg::Fast { step: 1, v: short.clone() } },
            Wire::Agree {
                ctx: 2,
                epoch: 7,
                seq: 9,
                msg: AgreeMsg::Up(Value { acked: None, ..short.clone() }),
            },
            Wire::Agree { ctx: 2, epoch: 7, seq: 9, msg: AgreeMsg::Decide(short) },
            Wire::Heartbeat { counter: 42 },
            Wire::Finding { rank: 3 },
        ]
    }

    #[test]
    fn round_trip() {
        for w in samples() {
            assert_eq!(Wire::decode(w.class(), &w.encode()), Ok(w));
        }
    }

    #[test]
    fn failure_free_agreement_messages_fit_one_shared_memory_record() {
        // Engine header (24) + ring prefix (8) + payload must stay within 64 bytes.
        let v = Value::new(u64::MAX, 0, &[], &[]);
        for msg in [AgreeMsg::Fast { step: 3, v: v.clone() }, AgreeMsg::Up(v.clone()), AgreeMsg::Decide(v)] {
            let w = Wire::Agree { ctx: u32::MAX, epoch: u32::MAX, seq: u32::MAX, msg };
            let b = w.encode();
            assert_eq!(b[0], K_SHORT);
            assert!(b.len() <= 32, "{} bytes", b.len());
        }
        // Bad markers in the short form are rejected.
        let w = Wire::Agree { ctx: 1, epoch: 2, seq: 3, msg: AgreeMsg::Up(Value::new(1, 0, &[], &[])) };
        let good = w.encode();
        for (i, x) in [(1, K_ABORT), (1, K_SHORT), (2, 1), (3, 2)] {
            let mut b = good.clone();
            b[i] = x;
            assert!(Wire::decode(crate::class::AGREE, &b).is_err(), "byte {i} = {x}");
        }
    }

    #[test]
    fn malformed_never_panics() {
        for w in samples() {
            let b = w.encode();
            for cut in 0..b.len() {
                assert!(Wire::decode(w.class(), &b[..cut]).is_err());
            }
            let mut long = b.clone();
            long.push(0);
            assert!(Wire::decode(w.class(), &long).is_err());
            // Every single-byte corruption decodes or is rejected, never panics.
            for i in 0..b.len() {
                for x in [0u8, 1, 0x7f, 0xff] {
                    let mut c = b.clone();
                    c[i] = x;
                    let _ = Wire::decode(w.class(), &c);
                }
            }
            assert!(Wire::decode(w.class().wrapping_add(1), &b).is_err());
        }
        assert!(Wire::decode(crate::class::AGREE, &[]).is_err());
        // A forged huge count is rejected without allocating.
        let mut b = vec![K_UP];
        b.extend_from_slice(&[0; 20]);
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(Wire::decode(crate::class::AGREE, &b).is_err());
    }
}
