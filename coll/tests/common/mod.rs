//! N engines in N threads over an in-memory transport (the idea of `engine/tests/inproc.rs`),
//! each with its own collectives state: drives schedules without processes.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use weft_coll::Coll;
use weft_engine::*;

type Msg = (u32, Header, Vec<u8>);

/// Eager limit of the in-memory transport: larger messages use rendezvous.
pub const EAGER: usize = 256;

pub struct Net {
    inbox: Vec<Mutex<VecDeque<Msg>>>,
    pub dead: Vec<Mutex<bool>>,
    cap: usize,
    /// Messages accepted per (sender, receiver).
    pub sent: Mutex<Vec<Vec<u64>>>,
}

struct InProc {
    me: u32,
    net: Arc<Net>,
    reported: Vec<bool>,
}

impl Transport for InProc {
    fn name(&self) -> &'static str {
        "inproc"
    }
    fn eager_limit(&self) -> usize {
        EAGER
    }
    fn try_send(
        &mut self,
        peer: u32,
        hdr: &Header,
        payload: &[u8],
    ) -> std::result::Result<bool, TransportError> {
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
    fn expose(
        &mut self,
        _peer: u32,
        addr: *const u8,
        len: usize,
    ) -> std::result::Result<RKey, TransportError> {
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
    ) -> std::result::Result<GetStatus, TransportError> {
        if *self.net.dead[peer as usize].lock().unwrap() {
            return Err(TransportError::PeerDead(peer));
        }
        let addr = u64::from_le_bytes(key[..8].try_into().unwrap()) as *const u8;
        let max = u64::from_le_bytes(key[8..16].try_into().unwrap()) as usize;
        assert!(len <= max);
        // SAFETY: same address space; the sender keeps the buffer alive until our FIN.
        unsafe { std::ptr::copy_nonoverlapping(addr, dst, len) };
        Ok(GetStatus::Done)
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

pub fn net(n: u32, cap: usize) -> Arc<Net> {
    Arc::new(Net {
        inbox: (0..n).map(|_| Mutex::new(VecDeque::new())).collect(),
        dead: (0..n).map(|_| Mutex::new(false)).collect(),
        cap,
        sent: Mutex::new(vec![vec![0; n as usize]; n as usize]),
    })
}

fn engine(me: u32, n: u32, net: &Arc<Net>) -> Engine {
    let cfg = EngineConfig {
        slow_period: Duration::from_micros(50),
        progress: ProgressMode::Yield,
        ..Default::default()
    };
    let mut e = Engine::new(me, n, cfg);
    let peers: Vec<u32> = (0..n).filter(|&p| p != me).collect();
    e.add_transport(Box::new(InProc { me, net: net.clone(), reported: vec![false; n as usize] }), &peers);
    e
}

/// Run `f(rank, engine, coll, net)` in `n` threads (node of world rank r: `nodes[r]`, or 0),
/// with a watchdog: a hang fails the test.
pub fn run<F>(n: u32, nodes: &[u32], f: F)
where
    F: Fn(u32, &mut Engine, &mut Coll, &Arc<Net>) + Send + Sync + 'static,
{
    let net = net(n, 64);
    let f = Arc::new(f);
    let nodes: Vec<u32> = (0..n as usize).map(|r| nodes.get(r).copied().unwrap_or(0)).collect();
    let hs: Vec<_> = (0..n)
        .map(|r| {
            let (net, f, nodes) = (net.clone(), f.clone(), nodes.clone());
            std::thread::spawn(move || {
                let mut e = engine(r, n, &net);
                let mut c = Coll::new(nodes, EAGER);
                f(r, &mut e, &mut c, &net);
                if !*net.dead[r as usize].lock().unwrap() {
                    e.finalize();
                }
            })
        })
        .collect();
    let deadline = Instant::now()
        + Duration::from_secs(std::env::var("HANG_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(120));
    let mut hs: Vec<Option<_>> = hs.into_iter().map(Some).collect();
    while hs.iter().any(Option::is_some) {
        for slot in hs.iter_mut() {
            if slot.as_ref().is_some_and(|h: &std::thread::JoinHandle<()>| h.is_finished()) {
                if let Err(p) = slot.take().unwrap().join() {
                    std::panic::resume_unwind(p);
                }
            }
        }
        assert!(Instant::now() < deadline, "test hung");
        std::thread::sleep(Duration::from_millis(1));
    }
}
