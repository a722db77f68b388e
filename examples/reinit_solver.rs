//! An iterative solver under global restart (`weft::reinit`): a 1-D three-point smoothing
//! (Jacobi) iteration over `n * CELLS` cells, block-distributed, with a halo exchange and an
//! allreduce of the largest change per iteration, and a checkpoint every `--ckpt` iterations
//! (in memory with a buddy copy, or in files with `--dir`). At the end rank 0 gathers the
//! field and compares it bit for bit with the same iteration run serially (the failure-free
//! answer): every cell's update uses the same operations in the same order, so any lost,
//! duplicated or stale message shows.
//!
//! Failures: `--kill E:R@I` makes rank R SIGKILL itself at iteration I of epoch E
//! (repeatable); `--kill-in-recovery E:R` makes rank R SIGKILL itself in epoch E before it
//! loads its checkpoint, i.e. while the job is recovering; `--kill-node E:NODE@I` makes rank 0
//! ask weft-run to SIGKILL every rank of virtual node NODE at iteration I of epoch E;
//! `--stop E:R@I` makes rank R SIGSTOP itself there (a helper sends SIGCONT 2 s later), for
//! the heartbeat detector to declare it and weft-run to kill it.
//!
//! Usage: `weft-run -n N reinit_solver [--iters I] [--ckpt K] [--dir DIR] [--kill E:R@I]...
//! [--kill-in-recovery E:R]...`

use std::process::ExitCode;

use weft::checkpoint::{FileCheckpoint, MemCheckpoint};
use weft::coll::Op;
use weft::{ReinitState, Weft};

const CELLS: usize = 32;
const HALO_TAG: i32 = 1;
const GATHER_TAG: i32 = 2;

struct Args {
    iters: u64,
    ckpt: u64,
    dir: Option<String>,
    kills: Vec<(u64, u32, u64)>,
    recovery_kills: Vec<(u64, u32)>,
    node_kills: Vec<(u64, u32, u64)>,
    stops: Vec<(u64, u32, u64)>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        iters: 200,
        ckpt: 10,
        dir: None,
        kills: Vec::new(),
        recovery_kills: Vec::new(),
        node_kills: Vec::new(),
        stops: Vec::new(),
    };
    let at = |v: &str, what: &str| -> Result<(u64, u32, u64), String> {
        let bad = || format!("{what} E:R@I, not {v:?}");
        let (e, ri) = v.split_once(':').ok_or_else(bad)?;
        let (r, i) = ri.split_once('@').ok_or_else(bad)?;
        Ok((e.parse().map_err(|_| bad())?, r.parse().map_err(|_| bad())?, i.parse().map_err(|_| bad())?))
    };
    let mut it = std::env::args().skip(1);
    let num = |s: &str| s.parse::<u64>().map_err(|_| format!("{s:?} is not a number"));
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        match k.as_str() {
            "--iters" => a.iters = num(&v)?,
            "--ckpt" => a.ckpt = num(&v)?.max(1),
            "--dir" => a.dir = Some(v),
            "--kill" => a.kills.push(at(&v, "--kill")?),
            "--kill-node" => a.node_kills.push(at(&v, "--kill-node")?),
            "--stop" => a.stops.push(at(&v, "--stop")?),
            "--kill-in-recovery" => {
                let (e, r) = v.split_once(':').ok_or("--kill-in-recovery E:R")?;
                a.recovery_kills.push((num(e)?, num(r)? as u32));
            }
            _ => return Err(format!("unknown option {k}")),
        }
    }
    Ok(a)
}

fn initial(n: u32) -> Vec<f64> {
    (0..n as usize * CELLS).map(|i| ((i * 7919) % 1000) as f64 / 1000.0).collect()
}

/// One iteration over `u` (the block) with `left` / `right` halo values (`None`: boundary).
fn step(u: &[f64], left: Option<f64>, right: Option<f64>) -> Vec<f64> {
    (0..u.len())
        .map(|i| {
            let l = if i == 0 { left } else { Some(u[i - 1]) };
            let r = if i + 1 == u.len() { right } else { Some(u[i + 1]) };
            match (l, r) {
                (Some(l), Some(r)) => (l + u[i] + r) / 3.0,
                // Fixed boundary cells.
                _ => u[i],
            }
        })
        .collect()
}

fn die() -> ! {
    // SAFETY: raise() with a valid signal number has no memory-safety preconditions.
    unsafe { libc::raise(libc::SIGKILL) };
    unreachable!("SIGKILL returned")
}

fn to_bytes(it: u64, u: &[f64]) -> Vec<u8> {
    let mut b = it.to_le_bytes().to_vec();
    for x in u {
        b.extend_from_slice(&x.to_le_bytes());
    }
    b
}

fn from_bytes(b: &[u8]) -> Option<(u64, Vec<f64>)> {
    if b.len() != 8 + CELLS * 8 {
        return None;
    }
    let it = u64::from_le_bytes(b[..8].try_into().ok()?);
    let u = b[8..].chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
    Some((it, u))
}

enum Store {
    Mem(MemCheckpoint),
    File(FileCheckpoint),
}

impl Store {
    fn save(&mut self, w: &Weft, v: u64, d: &[u8]) -> weft::Result<()> {
        match self {
            Store::Mem(m) => m.save(w, v, d),
            Store::File(f) => f.save(w, v, d),
        }
    }
    fn load(&mut self, w: &Weft) -> weft::Result<Option<(u64, Vec<u8>)>> {
        match self {
            Store::Mem(m) => m.load(w),
            Store::File(f) => f.load(w),
        }
    }
}

/// The resilient main: resume from the last checkpoint, iterate, return the final field on
/// rank 0.
fn solve(a: &Args, store: &mut Store, state: ReinitState, w: &Weft) -> weft::Result<Option<Vec<f64>>> {
    let world = w.world();
    let (me, n) = (world.rank(), world.size());
    let epoch = w.epoch().unwrap_or(0);
    if a.recovery_kills.contains(&(epoch, me)) {
        die();
    }
    let (mut it, mut u) = match store.load(w)? {
        Some((_, data)) => from_bytes(&data).ok_or(weft::Error::Reinit("bad checkpoint data".into()))?,
        None => (0, initial(n)[me as usize * CELLS..(me as usize + 1) * CELLS].to_vec()),
    };
    println!(
        "reinit_solver: rank {me} epoch {epoch} {state:?} resumes at iteration {it} on node {}",
        w.node_id()
    );
    while it < a.iters {
        if a.kills.contains(&(epoch, me, it)) {
            die();
        }
        if me == 0 {
            for &(_, node, _) in a.node_kills.iter().filter(|&&(e, _, i)| (e, i) == (epoch, it)) {
                let killed =
                    weft_pmix::launcher::LauncherControl::connect().and_then(|mut c| c.kill_node(node));
                println!("reinit_solver: node {node} killed: {killed:?}");
            }
        }
        if a.stops.contains(&(epoch, me, it)) {
            let pid = std::process::id();
            let _ = std::process::Command::new("sh")
                .args(["-c", &format!("sleep 2; kill -CONT {pid} 2>/dev/null")])
                .spawn();
            println!("reinit_solver: rank {me} stops itself at iteration {it}");
            // SAFETY: raise() with a valid signal number has no memory-safety preconditions.
            unsafe { libc::raise(libc::SIGSTOP) };
            println!("reinit_solver: rank {me} resumed (FAILED: a declared rank must have been killed)");
        }
        let (first, last) = (u[0].to_le_bytes(), u[CELLS - 1].to_le_bytes());
        let (mut lb, mut rb) = ([0u8; 8], [0u8; 8]);
        w.scope(|s| {
            let mut reqs = Vec::new();
            if me > 0 {
                reqs.push(world.irecv(s, &mut lb, (me - 1) as i32, HALO_TAG)?);
                reqs.push(world.isend(s, &first, me - 1, HALO_TAG)?);
            }
            if me + 1 < n {
                reqs.push(world.irecv(s, &mut rb, (me + 1) as i32, HALO_TAG)?);
                reqs.push(world.isend(s, &last, me + 1, HALO_TAG)?);
            }
            weft::wait_all(&mut reqs).map(|_| ())
        })?;
        let left = (me > 0).then(|| f64::from_le_bytes(lb));
        let right = (me + 1 < n).then(|| f64::from_le_bytes(rb));
        let next = step(&u, left, right);
        let mut change = [next.iter().zip(&u).map(|(x, y)| (x - y).abs()).fold(0.0f64, f64::max)];
        world.allreduce_inplace(&mut change, Op::Max)?;
        u = next;
        it += 1;
        if it % a.ckpt == 0 {
            store.save(w, it / a.ckpt, &to_bytes(it, &u))?;
        }
    }
    // Gather the field on rank 0.
    let mine: Vec<u8> = u.iter().flat_map(|x| x.to_le_bytes()).collect();
    if me != 0 {
        world.send(&mine, 0, GATHER_TAG)?;
        return Ok(None);
    }
    let mut all = u;
    for r in 1..n {
        let mut b = vec![0u8; CELLS * 8];
        world.recv(&mut b, r as i32, GATHER_TAG)?;
        all.extend(b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))));
    }
    Ok(Some(all))
}

/// The failure-free answer: the same iteration on the whole field in one process.
fn serial(n: u32, iters: u64) -> Vec<f64> {
    let mut u = initial(n);
    for _ in 0..iters {
        u = step(&u, None, None);
    }
    u
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("reinit_solver: {e}");
            return ExitCode::from(2);
        }
    };
    let mut store = match &a.dir {
        Some(d) => Store::File(FileCheckpoint::new(d)),
        None => Store::Mem(MemCheckpoint::new()),
    };
    let mut epochs = 0u64;
    let res = weft::reinit(|state, w| {
        epochs = w.epoch().unwrap_or(0);
        solve(&a, &mut store, state, w)
    });
    match res {
        Ok(Some(field)) => {
            let n = (field.len() / CELLS) as u32;
            let expect = serial(n, a.iters);
            let same = field.len() == expect.len()
                && field.iter().zip(&expect).all(|(x, y)| x.to_bits() == y.to_bits());
            let sum: f64 = field.iter().sum();
            if same {
                println!("reinit_solver: answer OK ({n} ranks, {} iterations, final epoch {epochs}, sum {sum:.12})", a.iters);
                ExitCode::SUCCESS
            } else {
                println!("reinit_solver: answer FAILED: differs from the failure-free run (sum {sum:.12})");
                ExitCode::from(1)
            }
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => {
            println!("reinit_solver: FAILED: {e}");
            ExitCode::from(1)
        }
    }
}
