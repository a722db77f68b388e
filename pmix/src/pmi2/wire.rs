//! The PMI-2 wire protocol on the client side: framing, command encoding, reply parsing, and
//! the value encoding weft uses on top of it.
//!
//! Facts of the protocol (MPICH's `pmi-2.0` message list, checked against Debian's hydra 4.0.2):
//! - The connection starts with one PMI-1 line: `cmd=init pmi_version=2 pmi_subversion=0\n`,
//!   answered by `cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n`.
//! - Every later message is a 6-character decimal length (space padded) followed by that many
//!   bytes: `cmd=NAME;key=value;…;`. Replies are named `NAME-response` and carry `rc=0` on
//!   success (`rc≠0` plus an optional `errmsg` on failure).
//! - hydra does not honour the `;;` escape of `;` inside values, and values are limited to
//!   1024 bytes, so weft sends only hex text (`[0-9a-f]`) as values, split into chunks (see
//!   [`encode_value`]).
//!
//! Every read has a deadline (socket receive timeout): a server that stops answering is a
//! [`Pmi2Error::Timeout`], never a hang.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::error::Pmi2Error;

/// Longest PMI-2 message accepted (MPICH's client uses the same bound).
pub(crate) const MAX_MSG: usize = 64 * 1024;
/// Longest value weft puts in one KVS entry (hydra's limit is 1024 bytes).
pub(crate) const MAX_VAL: usize = 1000;

/// A parsed reply: the command name and its attributes in order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) cmd: String,
    pub(crate) attrs: Vec<(String, String)>,
}

impl Reply {
    /// The value of attribute `key`, if present.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of attribute `key`, or a malformed-reply error.
    pub(crate) fn need(&self, key: &str) -> Result<&str, Pmi2Error> {
        self.get(key).ok_or_else(|| Pmi2Error::Malformed(format!("{} without {key}=", self.cmd)))
    }

    /// The integer attribute `key`, or a malformed-reply error.
    pub(crate) fn need_int<T: std::str::FromStr>(&self, key: &str) -> Result<T, Pmi2Error> {
        let v = self.need(key)?;
        v.parse().map_err(|_| Pmi2Error::Malformed(format!("{} has {key}={v:?}, not an integer", self.cmd)))
    }

    /// A boolean attribute (`TRUE`/`FALSE`, any case, or 1/0).
    pub(crate) fn need_bool(&self, key: &str) -> Result<bool, Pmi2Error> {
        match self.need(key)?.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Ok(true),
            "false" | "0" | "no" => Ok(false),
            v => Err(Pmi2Error::Malformed(format!("{} has {key}={v:?}, not a boolean", self.cmd))),
        }
    }
}

/// Parse the body of a PMI-2 message (`cmd=NAME;k=v;…;`).
pub(crate) fn parse(body: &[u8]) -> Result<Reply, Pmi2Error> {
    let text = std::str::from_utf8(body).map_err(|_| Pmi2Error::Malformed("message is not UTF-8".into()))?;
    let mut attrs = Vec::new();
    for field in text.split(';').filter(|f| !f.is_empty()) {
        let (k, v) = field
            .split_once('=')
            .ok_or_else(|| Pmi2Error::Malformed(format!("field {field:?} has no '='")))?;
        if k.is_empty() {
            return Err(Pmi2Error::Malformed(format!("field {field:?} has an empty key")));
        }
        attrs.push((k.to_string(), v.to_string()));
    }
    if attrs.first().map(|(k, _)| k.as_str()) != Some("cmd") {
        return Err(Pmi2Error::Malformed(format!("message {text:?} does not start with cmd=")));
    }
    let cmd = attrs.remove(0).1;
    Ok(Reply { cmd, attrs })
}

/// Frame `body` as one PMI-2 message (6-character length prefix).
pub(crate) fn frame(body: &str) -> Vec<u8> {
    format!("{:<6}{body}", body.len()).into_bytes()
}

/// A PMI-2 connection to the process manager.
pub(crate) struct Conn {
    sock: UnixStream,
}

impl Conn {
    /// Wrap a connected stream socket; every read waits at most `timeout`.
    pub(crate) fn new(sock: UnixStream, timeout: Duration) -> Result<Conn, Pmi2Error> {
        sock.set_read_timeout(Some(timeout))
            .map_err(|e| Pmi2Error::Io("setting the read timeout".into(), e))?;
        sock.set_write_timeout(Some(timeout))
            .map_err(|e| Pmi2Error::Io("setting the write timeout".into(), e))?;
        Ok(Conn { sock })
    }

    fn write_all(&mut self, what: &str, bytes: &[u8]) -> Result<(), Pmi2Error> {
        self.sock.write_all(bytes).map_err(|e| io_err(what, e))
    }

    fn read_exact(&mut self, what: &str, buf: &mut [u8]) -> Result<(), Pmi2Error> {
        self.sock.read_exact(buf).map_err(|e| io_err(what, e))
    }

    /// The PMI-1 `init` handshake that selects PMI-2.
    pub(crate) fn handshake(&mut self) -> Result<(), Pmi2Error> {
        self.write_all("init", b"cmd=init pmi_version=2 pmi_subversion=0\n")?;
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while b[0] != b'\n' {
            self.read_exact("response_to_init", &mut b)?;
            line.push(b[0]);
            if line.len() > 1024 {
                return Err(Pmi2Error::Malformed("response_to_init line longer than 1024 bytes".into()));
            }
        }
        let text = String::from_utf8_lossy(&line);
        let words: Vec<&str> = text.split_whitespace().collect();
        let field = |k: &str| words.iter().find_map(|w| w.strip_prefix(k).and_then(|r| r.strip_prefix('=')));
        if field("cmd") != Some("response_to_init") {
            return Err(Pmi2Error::Malformed(format!(
                "expected response_to_init, got {:?}",
                text.trim_end()
            )));
        }
        if field("rc").unwrap_or("0") != "0" || field("pmi_version") != Some("2") {
            return Err(Pmi2Error::Unsupported(format!(
                "the process manager does not speak PMI-2: {:?}",
                text.trim_end()
            )));
        }
        Ok(())
    }

    /// Send `cmd` with `attrs` without waiting for a reply (`abort`).
    pub(crate) fn send(&mut self, cmd: &str, attrs: &[(&str, &str)]) -> Result<(), Pmi2Error> {
        let mut body = format!("cmd={cmd};");
        for (k, v) in attrs {
            if v.contains(';') || k.contains(';') || k.contains('=') {
                return Err(Pmi2Error::Malformed(format!("attribute {k}={v:?} cannot be sent over PMI-2")));
            }
            body.push_str(&format!("{k}={v};"));
        }
        if body.len() > MAX_MSG {
            return Err(Pmi2Error::Malformed(format!("{cmd} message of {} bytes is too long", body.len())));
        }
        self.write_all(cmd, &frame(&body))
    }

    /// Read one framed message.
    pub(crate) fn recv(&mut self, expect: &str) -> Result<Reply, Pmi2Error> {
        let mut hdr = [0u8; 6];
        self.read_exact(expect, &mut hdr)?;
        let len: usize = std::str::from_utf8(&hdr)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| Pmi2Error::Malformed(format!("length header {:?} is not a number", hdr)))?;
        if len > MAX_MSG {
            return Err(Pmi2Error::Malformed(format!("announced length {len} exceeds {MAX_MSG}")));
        }
        let mut body = vec![0u8; len];
        self.read_exact(expect, &mut body)?;
        parse(&body)
    }

    /// Send `cmd` and wait for `cmd-response`; a non-zero `rc` is a [`Pmi2Error::Server`].
    pub(crate) fn call(&mut self, cmd: &str, attrs: &[(&str, &str)]) -> Result<Reply, Pmi2Error> {
        self.send(cmd, attrs)?;
        let expect = format!("{cmd}-response");
        let r = self.recv(&expect)?;
        if r.cmd != expect {
            return Err(Pmi2Error::Malformed(format!("expected {expect}, got {}", r.cmd)));
        }
        match r.get("rc") {
            None | Some("0") => Ok(r),
            Some(rc) => Err(Pmi2Error::Server {
                cmd: cmd.to_string(),
                rc: rc.to_string(),
                msg: r.get("errmsg").unwrap_or("").to_string(),
            }),
        }
    }
}

fn io_err(what: &str, e: std::io::Error) -> Pmi2Error {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Pmi2Error::Timeout(what.to_string()),
        std::io::ErrorKind::UnexpectedEof
        | std::io::ErrorKind::BrokenPipe
        | std::io::ErrorKind::ConnectionReset => Pmi2Error::Closed(what.to_string()),
        _ => Pmi2Error::Io(what.to_string(), e),
    }
}

/// Lower-case hex of `bytes` (PMI-2 values must be `;`-free printable text).
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(D[(b >> 4) as usize] as char);
        s.push(D[(b & 15) as usize] as char);
    }
    s
}

/// Inverse of [`to_hex`]; `None` on odd length or a non-hex digit.
pub(crate) fn from_hex(s: &str) -> Option<Vec<u8>> {
    let s = s.as_bytes();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.chunks(2).map(|p| Some(digit(p[0])? << 4 | digit(p[1])?)).collect()
}

/// The KVS entries for `value` under `key`: one entry `key=HEX` when the hex fits in
/// [`MAX_VAL`], else `key=*N` and the chunks `key.0` … `key.N-1`. Hex never starts with `*`.
pub(crate) fn encode_value(key: &str, value: &[u8]) -> Vec<(String, String)> {
    let hex = to_hex(value);
    if hex.len() <= MAX_VAL {
        return vec![(key.to_string(), hex)];
    }
    let chunks: Vec<&str> =
        hex.as_bytes().chunks(MAX_VAL).map(|c| std::str::from_utf8(c).expect("hex")).collect();
    let mut out = vec![(key.to_string(), format!("*{}", chunks.len()))];
    out.extend(chunks.iter().enumerate().map(|(i, c)| (format!("{key}.{i}"), c.to_string())));
    out
}

/// Parse `PMI_process_mapping` (`(vector,(start,nodes,ppn),…)`) into the node of every rank.
/// The blocks repeat until `size` ranks are placed (how hydra and Slurm describe a cyclic
/// layout). `None` if malformed or if it places no rank.
pub(crate) fn parse_mapping(s: &str, size: u32) -> Option<Vec<u32>> {
    let inner = s.trim().strip_prefix("(vector,")?.strip_suffix(')')?;
    let mut blocks = Vec::new();
    for b in inner.split("),") {
        let b = b.trim().trim_start_matches('(').trim_end_matches(')');
        let nums: Vec<u32> = b.split(',').map(|t| t.trim().parse().ok()).collect::<Option<_>>()?;
        let [start, nodes, ppn] = nums[..] else { return None };
        blocks.push((start, nodes, ppn));
    }
    if blocks.iter().all(|&(_, n, p)| n == 0 || p == 0) {
        return None;
    }
    let mut map = Vec::with_capacity(size as usize);
    'fill: loop {
        for &(start, nodes, ppn) in &blocks {
            for n in 0..nodes {
                for _ in 0..ppn {
                    if map.len() == size as usize {
                        break 'fill;
                    }
                    map.push(start.checked_add(n)?);
                }
            }
        }
    }
    Some(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_and_parsing() {
        assert_eq!(frame("cmd=kvs-fence;"), b"14    cmd=kvs-fence;".to_vec());
        let r = parse(b"cmd=kvs-get-response;found=TRUE;value=ab;rc=0;").unwrap();
        assert_eq!(r.cmd, "kvs-get-response");
        assert_eq!(r.get("value"), Some("ab"));
        assert!(r.need_bool("found").unwrap());
        assert_eq!(r.need_int::<i32>("rc").unwrap(), 0);
        assert!(matches!(parse(b"found=TRUE;"), Err(Pmi2Error::Malformed(_))));
        assert!(matches!(parse(b"cmd=x;novalue;"), Err(Pmi2Error::Malformed(_))));
        assert!(matches!(parse(b"cmd=x;=v;"), Err(Pmi2Error::Malformed(_))));
        assert!(matches!(parse(&[0xff, 0xfe]), Err(Pmi2Error::Malformed(_))));
        assert!(matches!(r.need_int::<u32>("value"), Err(Pmi2Error::Malformed(_))));
    }

    #[test]
    fn hex_roundtrip_and_chunks() {
        let v: Vec<u8> = (0..=255u8).collect();
        assert_eq!(from_hex(&to_hex(&v)).unwrap(), v);
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
        assert_eq!(encode_value("k", b"\x01\xff"), vec![("k".to_string(), "01ff".to_string())]);
        let big = vec![7u8; 1200];
        let e = encode_value("k", &big);
        assert_eq!(e[0], ("k".to_string(), "*3".to_string()));
        assert_eq!(e.len(), 4);
        let joined: String = e[1..].iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(from_hex(&joined).unwrap(), big);
    }

    #[test]
    fn process_mapping() {
        assert_eq!(parse_mapping("(vector,(0,1,1))", 3), Some(vec![0, 0, 0]));
        assert_eq!(parse_mapping("(vector,(0,2,2))", 5), Some(vec![0, 0, 1, 1, 0]));
        assert_eq!(parse_mapping("(vector,(0,2,1),(2,1,2))", 4), Some(vec![0, 1, 2, 2]));
        assert_eq!(parse_mapping("(vector,(0,0,0))", 2), None);
        assert_eq!(parse_mapping("garbage", 2), None);
        assert_eq!(parse_mapping("(vector,(0,1))", 2), None);
    }
}
