//! Wire protocol between `weft-run` and its ranks (version [`VERSION`]).
//!
//! Transport: one `SOCK_STREAM` Unix-domain connection per rank, to the socket named by
//! `WEFT_RUN_SOCK`. Both directions carry **frames**:
//!
//! ```text
//! frame   = len:u32 | op:u8 | payload        (len = 1 + payload length, little-endian)
//! bytes   = n:u32 | n bytes                  (strings are UTF-8 bytes)
//! ```
//!
//! All integers are little-endian. A frame longer than [`MAX_FRAME`] is a protocol error.
//!
//! Rank → launcher ([`ToLauncher`]):
//!
//! | op   | name     | payload                                              |
//! |------|----------|------------------------------------------------------|
//! | 0x01 | HELLO    | version:u32, rank:u32, pid:u32                       |
//! | 0x02 | COMMIT   | n:u32, n × (key:bytes, value:bytes)                  |
//! | 0x03 | FENCE    | epoch:u32 (1 for the first fence, then +1 each time) |
//! | 0x04 | ABORT    | code:i32, msg:bytes                                  |
//! | 0x05 | FINALIZE | —                                                    |
//! | 0x06 | KILL_RANK| rank:u32 (v2)                                        |
//! | 0x07 | KILL_NODE| node:u32 (v2)                                        |
//! | 0x08 | CONTROL  | version:u32 (v2; first frame of a control connection)|
//!
//! Launcher → rank ([`ToRank`]):
//!
//! | op   | name         | payload                                                   |
//! |------|--------------|-----------------------------------------------------------|
//! | 0x81 | WELCOME      | version:u32, size:u32, n:u32, n × node:u32 (n = size; v2) |
//! | 0x82 | TERMINATED   | rank:u32                                                  |
//! | 0x83 | FENCE_DONE   | epoch:u32, n:u32, n × (rank:u32, key:bytes, value:bytes)  |
//! | 0x84 | FENCE_FAILED | epoch:u32, n:u32, n × rank:u32                            |
//! | 0x85 | KILL_DONE    | n:u32, n × rank:u32 (v2)                                  |
//!
//! Conversation: the rank connects and sends HELLO; the launcher answers WELCOME and then one
//! TERMINATED per rank that already failed. `put` is buffered by the rank and sent in one COMMIT.
//! FENCE is answered by FENCE_DONE carrying the *whole* key-value set committed so far by every
//! rank (so `get` is local), or by FENCE_FAILED naming the ranks whose death prevented it.
//! TERMINATED may arrive at any time; each failed rank is announced once to every other
//! connected rank. FINALIZE ends the conversation (the rank then exits with status 0).
//!
//! Virtual nodes (version 2): WELCOME carries the node of every rank (`nodes[r]`, dense ids
//! from 0), so `node_of` is local. Fault injection: KILL_RANK / KILL_NODE make the launcher
//! SIGKILL that rank / every rank of that node at once, reap them, send TERMINATED for each of
//! them to every other live rank, and then answer the requester with KILL_DONE naming the ranks
//! that were killed (ranks already dead are not named; the requester never gets an answer if
//! it was itself among the victims). A bad rank or node number is a protocol error.
//! A *control connection* starts with CONTROL instead of HELLO: it is not a rank, gets no
//! WELCOME and no TERMINATED, and may only send KILL_RANK / KILL_NODE (each answered by
//! KILL_DONE). It lets code that does not own the rank's runtime object (a test program inside
//! a weft job) inject failures.
//!
//! Fence semantics (what the launcher guarantees): fence epoch `k` is expected from every rank
//! of epoch `k-1` (all ranks for `k = 1`) that neither finalized nor was named by a failed
//! earlier epoch. Epoch `k` *fails* as soon as one of its expected ranks is dead without having
//! entered it; every rank that enters `k` then gets the same FENCE_FAILED set (uniform). A
//! failed rank is therefore named by exactly one failed fence, and later fences run among the
//! survivors.
//!
//! This module is pure encoding/decoding with no I/O, so that a launcher hosting a PMIx server
//! can later replace it without touching the rest.

use std::fmt;

/// Protocol version carried by HELLO and WELCOME.
pub const VERSION: u32 = 2;
/// Largest accepted frame (length field value), 256 MiB.
pub const MAX_FRAME: usize = 256 << 20;

const OP_HELLO: u8 = 0x01;
const OP_COMMIT: u8 = 0x02;
const OP_FENCE: u8 = 0x03;
const OP_ABORT: u8 = 0x04;
const OP_FINALIZE: u8 = 0x05;
const OP_KILL_RANK: u8 = 0x06;
const OP_KILL_NODE: u8 = 0x07;
const OP_CONTROL: u8 = 0x08;
const OP_WELCOME: u8 = 0x81;
const OP_TERMINATED: u8 = 0x82;
const OP_FENCE_DONE: u8 = 0x83;
const OP_FENCE_FAILED: u8 = 0x84;
const OP_KILL_DONE: u8 = 0x85;

/// A frame a rank sends to the launcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToLauncher {
    Hello { version: u32, rank: u32, pid: u32 },
    Commit { kvs: Vec<(String, Vec<u8>)> },
    Fence { epoch: u32 },
    Abort { code: i32, msg: String },
    Finalize,
    KillRank { rank: u32 },
    KillNode { node: u32 },
    Control { version: u32 },
}

/// A frame the launcher sends to a rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToRank {
    /// `nodes[r]` is the node of rank `r` (`nodes.len() == size`).
    Welcome {
        version: u32,
        size: u32,
        nodes: Vec<u32>,
    },
    Terminated {
        rank: u32,
    },
    FenceDone {
        epoch: u32,
        kvs: Vec<(u32, String, Vec<u8>)>,
    },
    FenceFailed {
        epoch: u32,
        ranks: Vec<u32>,
    },
    KillDone {
        ranks: Vec<u32>,
    },
}

/// A malformed frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoError(pub String);

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProtoError {}

fn err<T>(msg: impl Into<String>) -> Result<T, ProtoError> {
    Err(ProtoError(msg.into()))
}

// ---------------------------------------------------------------- encoding

struct Enc(Vec<u8>);

impl Enc {
    fn new(op: u8) -> Enc {
        let mut v = Vec::with_capacity(64);
        v.extend_from_slice(&[0, 0, 0, 0, op]);
        Enc(v)
    }
    fn u32(&mut self, x: u32) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn i32(&mut self, x: i32) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(len_u32(b.len()));
        self.0.extend_from_slice(b);
    }
    fn finish(mut self) -> Vec<u8> {
        let len = len_u32(self.0.len() - 4);
        self.0[..4].copy_from_slice(&len.to_le_bytes());
        self.0
    }
}

fn len_u32(n: usize) -> u32 {
    // Callers check sizes against MAX_FRAME before encoding; saturate rather than wrap.
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl ToLauncher {
    /// Encode as one complete frame (length prefix included).
    pub fn encode(&self) -> Vec<u8> {
        match self {
            ToLauncher::Hello { version, rank, pid } => {
                let mut e = Enc::new(OP_HELLO);
                e.u32(*version);
                e.u32(*rank);
                e.u32(*pid);
                e.finish()
            }
            ToLauncher::Commit { kvs } => {
                let mut e = Enc::new(OP_COMMIT);
                e.u32(len_u32(kvs.len()));
                for (k, v) in kvs {
                    e.bytes(k.as_bytes());
                    e.bytes(v);
                }
                e.finish()
            }
            ToLauncher::Fence { epoch } => {
                let mut e = Enc::new(OP_FENCE);
                e.u32(*epoch);
                e.finish()
            }
            ToLauncher::Abort { code, msg } => {
                let mut e = Enc::new(OP_ABORT);
                e.i32(*code);
                e.bytes(msg.as_bytes());
                e.finish()
            }
            ToLauncher::Finalize => Enc::new(OP_FINALIZE).finish(),
            ToLauncher::KillRank { rank } => {
                let mut e = Enc::new(OP_KILL_RANK);
                e.u32(*rank);
                e.finish()
            }
            ToLauncher::KillNode { node } => {
                let mut e = Enc::new(OP_KILL_NODE);
                e.u32(*node);
                e.finish()
            }
            ToLauncher::Control { version } => {
                let mut e = Enc::new(OP_CONTROL);
                e.u32(*version);
                e.finish()
            }
        }
    }

    /// Decode the body of one frame (`op | payload`, without the length prefix).
    pub fn decode(body: &[u8]) -> Result<ToLauncher, ProtoError> {
        let mut d = Dec::new(body)?;
        let msg = match d.op {
            OP_HELLO => ToLauncher::Hello { version: d.u32()?, rank: d.u32()?, pid: d.u32()? },
            OP_COMMIT => {
                let n = d.count(8)?;
                let mut kvs = Vec::with_capacity(n);
                for _ in 0..n {
                    kvs.push((d.string()?, d.bytes()?.to_vec()));
                }
                ToLauncher::Commit { kvs }
            }
            OP_FENCE => ToLauncher::Fence { epoch: d.u32()? },
            OP_ABORT => ToLauncher::Abort { code: d.i32()?, msg: d.string()? },
            OP_FINALIZE => ToLauncher::Finalize,
            OP_KILL_RANK => ToLauncher::KillRank { rank: d.u32()? },
            OP_KILL_NODE => ToLauncher::KillNode { node: d.u32()? },
            OP_CONTROL => ToLauncher::Control { version: d.u32()? },
            op => return err(format!("unknown rank-to-launcher op 0x{op:02x}")),
        };
        d.end()?;
        Ok(msg)
    }
}

impl ToRank {
    /// Encode as one complete frame (length prefix included).
    pub fn encode(&self) -> Vec<u8> {
        match self {
            ToRank::Welcome { version, size, nodes } => {
                let mut e = Enc::new(OP_WELCOME);
                e.u32(*version);
                e.u32(*size);
                e.u32(len_u32(nodes.len()));
                for n in nodes {
                    e.u32(*n);
                }
                e.finish()
            }
            ToRank::Terminated { rank } => {
                let mut e = Enc::new(OP_TERMINATED);
                e.u32(*rank);
                e.finish()
            }
            ToRank::FenceDone { epoch, kvs } => {
                encode_fence_done(*epoch, kvs.iter().map(|(r, k, v)| (*r, k.as_str(), v.as_slice())))
            }
            ToRank::FenceFailed { epoch, ranks } => {
                let mut e = Enc::new(OP_FENCE_FAILED);
                e.u32(*epoch);
                e.u32(len_u32(ranks.len()));
                for r in ranks {
                    e.u32(*r);
                }
                e.finish()
            }
            ToRank::KillDone { ranks } => {
                let mut e = Enc::new(OP_KILL_DONE);
                e.u32(len_u32(ranks.len()));
                for r in ranks {
                    e.u32(*r);
                }
                e.finish()
            }
        }
    }

    /// Decode the body of one frame (`op | payload`, without the length prefix).
    pub fn decode(body: &[u8]) -> Result<ToRank, ProtoError> {
        let mut d = Dec::new(body)?;
        let msg = match d.op {
            OP_WELCOME => {
                let version = d.u32()?;
                if version != VERSION {
                    // Do not guess at the layout of another version: report it.
                    return Ok(ToRank::Welcome { version, size: 0, nodes: Vec::new() });
                }
                let size = d.u32()?;
                ToRank::Welcome { version, size, nodes: d.u32_list()? }
            }
            OP_TERMINATED => ToRank::Terminated { rank: d.u32()? },
            OP_FENCE_DONE => {
                let epoch = d.u32()?;
                let n = d.count(12)?;
                let mut kvs = Vec::with_capacity(n);
                for _ in 0..n {
                    kvs.push((d.u32()?, d.string()?, d.bytes()?.to_vec()));
                }
                ToRank::FenceDone { epoch, kvs }
            }
            OP_FENCE_FAILED => {
                let epoch = d.u32()?;
                ToRank::FenceFailed { epoch, ranks: d.u32_list()? }
            }
            OP_KILL_DONE => ToRank::KillDone { ranks: d.u32_list()? },
            op => return err(format!("unknown launcher-to-rank op 0x{op:02x}")),
        };
        d.end()?;
        Ok(msg)
    }
}

/// Encode a FENCE_DONE frame straight from borrowed data (the launcher sends the same, possibly
/// large, key-value set to every rank, so it encodes it once without cloning the store).
pub fn encode_fence_done<'a>(
    epoch: u32,
    kvs: impl ExactSizeIterator<Item = (u32, &'a str, &'a [u8])>,
) -> Vec<u8> {
    let mut e = Enc::new(OP_FENCE_DONE);
    e.u32(epoch);
    e.u32(len_u32(kvs.len()));
    for (r, k, v) in kvs {
        e.u32(r);
        e.bytes(k.as_bytes());
        e.bytes(v);
    }
    e.finish()
}

// ---------------------------------------------------------------- decoding

struct Dec<'a> {
    op: u8,
    rest: &'a [u8],
}

impl<'a> Dec<'a> {
    fn new(body: &'a [u8]) -> Result<Dec<'a>, ProtoError> {
        match body.split_first() {
            Some((&op, rest)) => Ok(Dec { op, rest }),
            None => err("empty frame"),
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        if self.rest.len() < n {
            return err(format!("truncated frame (op 0x{:02x})", self.op));
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Ok(a)
    }
    fn u32(&mut self) -> Result<u32, ProtoError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i32(&mut self) -> Result<i32, ProtoError> {
        let b = self.take(4)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn bytes(&mut self) -> Result<&'a [u8], ProtoError> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn string(&mut self) -> Result<String, ProtoError> {
        match std::str::from_utf8(self.bytes()?) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => err("string is not UTF-8"),
        }
    }
    /// An element count, checked against the bytes left (each element is >= `min_elem` bytes)
    /// so a hostile count cannot make us allocate a huge vector.
    fn count(&mut self, min_elem: usize) -> Result<usize, ProtoError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_elem) > self.rest.len() {
            return err(format!("element count {n} exceeds frame size"));
        }
        Ok(n)
    }
    fn u32_list(&mut self) -> Result<Vec<u32>, ProtoError> {
        let n = self.count(4)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.u32()?);
        }
        Ok(v)
    }
    fn end(&self) -> Result<(), ProtoError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            err(format!("{} trailing bytes in frame (op 0x{:02x})", self.rest.len(), self.op))
        }
    }
}

/// Incremental frame splitter for a byte stream.
#[derive(Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    start: usize,
}

impl FrameReader {
    pub fn new() -> FrameReader {
        FrameReader::default()
    }

    /// Append bytes read from the stream.
    pub fn push(&mut self, data: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// Whether unconsumed bytes (complete frames or part of one) are buffered.
    pub fn has_buffered(&self) -> bool {
        self.start < self.buf.len()
    }

    /// The body (`op | payload`) of the next complete frame, if one is buffered.
    /// The returned slice is valid until the next call on `self`.
    pub fn next_frame(&mut self) -> Result<Option<&[u8]>, ProtoError> {
        if self.start > (1 << 20) && self.start * 2 > self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        let avail = &self.buf[self.start..];
        if avail.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_le_bytes([avail[0], avail[1], avail[2], avail[3]]) as usize;
        if len == 0 || len > MAX_FRAME {
            return err(format!("bad frame length {len}"));
        }
        if avail.len() < 4 + len {
            return Ok(None);
        }
        let s = self.start + 4;
        self.start = s + len;
        Ok(Some(&self.buf[s..s + len]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(frame: &[u8]) -> &[u8] {
        let len = u32::from_le_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(len, frame.len() - 4);
        &frame[4..]
    }

    #[test]
    fn roundtrip_to_launcher() {
        let msgs = vec![
            ToLauncher::Hello { version: VERSION, rank: 3, pid: 4242 },
            ToLauncher::Commit { kvs: vec![("a".into(), vec![1, 2, 3]), ("ß".into(), vec![])] },
            ToLauncher::Commit { kvs: vec![] },
            ToLauncher::Fence { epoch: 7 },
            ToLauncher::Abort { code: -3, msg: "boom".into() },
            ToLauncher::Finalize,
            ToLauncher::KillRank { rank: 3 },
            ToLauncher::KillNode { node: 1 },
            ToLauncher::Control { version: VERSION },
        ];
        for m in msgs {
            let f = m.encode();
            assert_eq!(ToLauncher::decode(split(&f)).unwrap(), m);
        }
    }

    #[test]
    fn roundtrip_to_rank() {
        let msgs = vec![
            ToRank::Welcome { version: VERSION, size: 3, nodes: vec![0, 0, 1] },
            ToRank::Welcome { version: VERSION, size: 0, nodes: vec![] },
            ToRank::KillDone { ranks: vec![2, 3] },
            ToRank::KillDone { ranks: vec![] },
            ToRank::Terminated { rank: 5 },
            ToRank::FenceDone {
                epoch: 1,
                kvs: vec![(0, "k".into(), b"v".to_vec()), (7, "x".into(), vec![0; 1000])],
            },
            ToRank::FenceFailed { epoch: 2, ranks: vec![1, 4] },
        ];
        for m in msgs {
            let f = m.encode();
            assert_eq!(ToRank::decode(split(&f)).unwrap(), m);
        }
    }

    #[test]
    fn welcome_of_another_version_decodes_to_its_version() {
        // A version-1 WELCOME (version, size): the rank must be able to say "version 1".
        let body = [0x81, 1, 0, 0, 0, 8, 0, 0, 0];
        match ToRank::decode(&body).unwrap() {
            ToRank::Welcome { version: 1, .. } => {}
            other => panic!("{other:?}"),
        }
        // Hostile node count.
        let mut body = vec![0x81];
        body.extend_from_slice(&VERSION.to_le_bytes());
        body.extend_from_slice(&4u32.to_le_bytes());
        body.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(ToRank::decode(&body).is_err());
    }

    #[test]
    fn reader_splits_byte_by_byte() {
        let a = ToLauncher::Fence { epoch: 9 }.encode();
        let b = ToLauncher::Commit { kvs: vec![("key".into(), vec![9; 300])] }.encode();
        let stream: Vec<u8> = a.iter().chain(b.iter()).copied().collect();
        let mut r = FrameReader::new();
        let mut got = Vec::new();
        for byte in stream {
            r.push(&[byte]);
            while let Some(body) = r.next_frame().unwrap() {
                got.push(ToLauncher::decode(body).unwrap());
            }
        }
        assert_eq!(got.len(), 2);
        assert!(!r.has_buffered());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut r = FrameReader::new();
        r.push(&[0xff, 0xff, 0xff, 0xff, 1, 2]);
        assert!(r.next_frame().is_err());
        let mut r = FrameReader::new();
        r.push(&[0, 0, 0, 0]);
        assert!(r.next_frame().is_err());
        // Every truncation and every op byte: decode returns an error or a value, never panics.
        let f = ToRank::FenceDone { epoch: 1, kvs: vec![(0, "k".into(), b"v".to_vec())] }.encode();
        for cut in 0..f.len() - 4 {
            let _ = ToRank::decode(&f[4..4 + cut]);
        }
        for op in 0..=255u8 {
            let _ = ToLauncher::decode(&[op, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
            let _ = ToRank::decode(&[op, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        }
        // Hostile element count.
        let mut body = vec![OP_COMMIT];
        body.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(ToLauncher::decode(&body).is_err());
        // Trailing bytes.
        let mut f = ToLauncher::Finalize.encode();
        f.push(0);
        assert!(ToLauncher::decode(&f[4..]).is_err());
        // Non-UTF-8 key.
        let mut body = vec![OP_COMMIT, 1, 0, 0, 0, 1, 0, 0, 0, 0xff, 0, 0, 0, 0];
        assert!(ToLauncher::decode(&body).is_err());
        body[9] = b'a';
        assert!(ToLauncher::decode(&body).is_ok());
    }
}
