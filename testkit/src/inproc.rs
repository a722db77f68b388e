//! In-process "network" for engine-level tests: N engines in N threads exchanging messages
//! through mutex-protected inboxes. Used by the engine's and the collectives' tests to drive
//! matching, rendezvous, flow control, failures and schedules without processes.
//!
//! [`Net`] is the shared medium (bounded inbox per rank, a dead flag per rank, and a count of
//! messages per (sender, receiver)); [`InProc`] is one rank's [`Transport`] on it; [`engine`]
//! builds an engine wired to it; [`join_all`] waits for the rank threads with a watchdog.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use weft_engine::{Engine, EngineConfig, GetStatus, Header, RKey, Setup, Transport, TransportError};

type Msg = (u32, Header, Vec<u8>);

/// Eager limit of the in-memory transport: larger messages use rendezvous.
pub const EAGER: usize = 256;

/// The shared medium.
pub struct Net {
    inbox: Vec<Mutex<VecDeque<Msg>>>,
    /// Set a rank's flag to make it "die": sends and reads towards it fail, and every other
    /// rank's transport reports it once through `poll_failures`.
    pub dead: Vec<Mutex<bool>>,
    cap: usize,
    /// Messages accepted per (sender, receiver).
    pub sent: Mutex<Vec<Vec<u64>>>,
    /// The transports' [`Transport::split_limit`] (default `usize::MAX`: no split
    /// rendezvous; set it before building the engines).
    pub split_limit: AtomicUsize,
}

/// A medium for `n` ranks whose inboxes hold at most `cap` messages (flow control).
pub fn net(n: u32, cap: usize) -> Arc<Net> {
    Arc::new(Net {
        inbox: (0..n).map(|_| Mutex::new(VecDeque::new())).collect(),
        dead: (0..n).map(|_| Mutex::new(false)).collect(),
        cap,
        sent: Mutex::new(vec![vec![0; n as usize]; n as usize]),
        split_limit: AtomicUsize::new(usize::MAX),
    })
}

/// One rank's transport on a [`Net`].
pub struct InProc {
    me: u32,
    net: Arc<Net>,
    reported: Vec<bool>,
}

impl InProc {
    /// Rank `me`'s transport.
    pub fn new(me: u32, net: &Arc<Net>) -> InProc {
        InProc { me, net: net.clone(), reported: vec![false; net.dead.len()] }
    }
}

impl Transport for InProc {
    fn name(&self) -> &'static str {
        "inproc"
    }

    fn eager_limit(&self) -> usize {
        EAGER
    }

    fn try_send(&mut self, peer: u32, hdr: &Header, payload: &[u8]) -> Result<bool, TransportError> {
        if *self.net.dead[peer as usize].lock().unwrap() {
            return Err(TransportError::PeerDead(peer));
        }
        let mut q = self.net.inbox[peer as usize].lock().unwrap();
        if q.len() >= self.net.cap {
            return Ok(false);
        }
        q.push_back((self.me, *hdr, payload.to_vec()));
        self.net.sent.lock().unwrap()[self.me as usize][peer as usize] += 1;
        Ok(true)
    }

    fn poll(&mut self, budget: usize, sink: &mut dyn FnMut(u32, &Header, &[u8])) -> usize {
        let mut n = 0;
        while n < budget {
            let m = self.net.inbox[self.me as usize].lock().unwrap().pop_front();
            let Some((from, h, p)) = m else { break };
            sink(from, &h, &p);
            n += 1;
        }
        n
    }

    fn expose(&mut self, _peer: u32, addr: *const u8, len: usize) -> Result<RKey, TransportError> {
        let mut k = [0u8; 32];
        k[..8].copy_from_slice(&(addr as u64).to_le_bytes());
        k[8..16].copy_from_slice(&(len as u64).to_le_bytes());
        Ok(k)
    }

    fn unexpose(&mut self, _peer: u32, _key: &RKey) {}

    unsafe fn get(
        &mut self,
        peer: u32,
        key: &RKey,
        dst: *mut u8,
        len: usize,
    ) -> Result<GetStatus, TransportError> {
        if *self.net.dead[peer as usize].lock().unwrap() {
            return Err(TransportError::PeerDead(peer));
        }
        let addr = u64::from_le_bytes(key[..8].try_into().unwrap()) as *const u8;
        let max = u64::from_le_bytes(key[8..16].try_into().unwrap()) as usize;
        assert!(len <= max, "get of {len} bytes from an exposure of {max}");
        // SAFETY: one address space; the sender keeps the exposed buffer alive until our FIN,
        // and the caller guarantees `dst` is valid for `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(addr, dst, len) };
        Ok(GetStatus::Done)
    }

    fn split_limit(&self) -> usize {
        self.net.split_limit.load(Ordering::Relaxed)
    }

    unsafe fn put(
        &mut self,
        peer: u32,
        key: &RKey,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError> {
        if *self.net.dead[peer as usize].lock().unwrap() {
            return Err(TransportError::PeerDead(peer));
        }
        let addr = u64::from_le_bytes(key[..8].try_into().unwrap()) as *mut u8;
        let max = u64::from_le_bytes(key[8..16].try_into().unwrap()) as usize;
        assert!(len <= max, "put of {len} bytes to an exposure of {max}");
        // SAFETY: one address space; the receiver keeps the exposed buffer alive until our
        // PUT_DONE, and the caller guarantees `src` is valid for `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(src, addr, len) };
        Ok(())
    }

    fn poll_failures(&mut self, out: &mut Vec<u32>) {
        for (i, d) in self.net.dead.iter().enumerate() {
            if *d.lock().unwrap() && !self.reported[i] {
                self.reported[i] = true;
                out.push(i as u32);
            }
        }
    }
}

/// An engine for rank `me` of `n` with an [`InProc`] transport to every other rank.
pub fn engine(me: u32, n: u32, net: &Arc<Net>, cfg: EngineConfig) -> Engine {
    let mut e = Engine::new(me, n, cfg);
    let peers: Vec<u32> = (0..n).filter(|&p| p != me).collect();
    Setup::of(&mut e).add_transport(Box::new(InProc::new(me, net)), &peers);
    e
}

/// Join the rank threads; a panic in any of them is re-raised at once (not masked as a hang
/// of its peers), and the test fails if they are not all done within `limit`.
pub fn join_all(hs: Vec<JoinHandle<()>>, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut hs: Vec<Option<JoinHandle<()>>> = hs.into_iter().map(Some).collect();
    while hs.iter().any(Option::is_some) {
        for slot in hs.iter_mut() {
            if slot.as_ref().is_some_and(|h| h.is_finished()) {
                if let Err(p) = slot.take().unwrap().join() {
                    std::panic::resume_unwind(p);
                }
            }
        }
        assert!(Instant::now() < deadline, "test hung");
        std::thread::sleep(Duration::from_millis(1));
    }
}
