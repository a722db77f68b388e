//! Application checkpoints for global restart ([`crate::reinit`]): [`MemCheckpoint`] keeps
//! each rank's state in its own memory and a copy on a buddy rank; [`FileCheckpoint`] keeps it
//! in files. Both are collective over the world communicator and keep the two newest versions.
//!
//! Consistency: `save` ends with a barrier, so when any rank has returned from saving version
//! v, every rank has stored v; ranks are therefore at most one save apart after a failure.
//! `load` takes the newest version that every rank can supply (an allreduce-min over the
//! newest each holds), which is then held by all of them. Versions start at 1; `load` returns
//! `None` when some rank has no checkpoint (the application starts from scratch).

use std::path::PathBuf;

use crate::coll::Op;
use crate::{Error, Result, Weft};

/// Tag the helpers use on the world communicator (applications must not receive it with
/// `ANY_TAG` while a save or load runs).
pub const TAG: i32 = crate::MAX_TAG;

/// Versions kept.
const KEEP: usize = 2;

fn keep_newest(list: &mut Vec<(u64, Vec<u8>)>, version: u64, data: Vec<u8>) {
    list.retain(|(v, _)| *v != version);
    list.push((version, data));
    list.sort_by_key(|(v, _)| *v);
    let extra = list.len().saturating_sub(KEEP);
    list.drain(..extra);
}

fn encode(list: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (v, d) in list {
        out.extend_from_slice(&v.to_le_bytes());
        out.extend_from_slice(&(d.len() as u64).to_le_bytes());
        out.extend_from_slice(d);
    }
    out
}

fn decode(mut b: &[u8]) -> Result<Vec<(u64, Vec<u8>)>> {
    let bad = || Error::Reinit("malformed checkpoint copy from the buddy rank".into());
    let mut out = Vec::new();
    while !b.is_empty() {
        if b.len() < 16 {
            return Err(bad());
        }
        let v = u64::from_le_bytes(b[..8].try_into().map_err(|_| bad())?);
        let n = u64::from_le_bytes(b[8..16].try_into().map_err(|_| bad())?);
        let n = usize::try_from(n).map_err(|_| bad())?;
        let rest = &b[16..];
        if rest.len() < n {
            return Err(bad());
        }
        out.push((v, rest[..n].to_vec()));
        b = &rest[n..];
    }
    Ok(out)
}

/// Send `out` to `to` and receive a message of any length from `from`, on [`TAG`].
fn exchange(w: &Weft, out: &[u8], to: u32, from: u32) -> Result<Vec<u8>> {
    let world = w.world();
    w.scope(|s| {
        let q = world.isend(s, out, to, TAG)?;
        let st = world.probe(from as i32, TAG)?;
        let mut buf = vec![0u8; st.count];
        world.recv(&mut buf, from as i32, TAG)?;
        q.wait()?;
        Ok(buf)
    })
}

/// The newest version every rank can supply (0: some rank has none).
fn agreed_version(w: &Weft, newest: u64) -> Result<u64> {
    let mut v = [newest];
    w.world().allreduce_inplace(&mut v, Op::Min)?;
    Ok(v[0])
}

/// In-memory checkpoint: a rank's own copy plus a copy on its buddy, the rank `n / 2` places
/// further (so with contiguous node blocks of at most half the ranks the copy lives on another
/// node). A respawned rank reloads from its buddy, a survivor from itself. It survives any set
/// of failures that does not take a rank and its buddy together. Keep it outside the
/// resilient main (it must outlive the epoch).
#[derive(Debug, Default)]
pub struct MemCheckpoint {
    own: Vec<(u64, Vec<u8>)>,
    /// Copies of the rank whose buddy this rank is.
    held: Vec<(u64, Vec<u8>)>,
}

impl MemCheckpoint {
    pub fn new() -> MemCheckpoint {
        MemCheckpoint::default()
    }

    fn peers(w: &Weft) -> (u32, u32) {
        let world = w.world();
        let (me, n) = (world.rank(), world.size());
        let d = (n / 2).max(1);
        ((me + d) % n, (me + n - d % n) % n)
    }

    /// Collective: store `data` as `version` (> 0, increasing) here and on the buddy rank.
    pub fn save(&mut self, w: &Weft, version: u64, data: &[u8]) -> Result<()> {
        if version == 0 {
            return Err(Error::Reinit("checkpoint versions start at 1".into()));
        }
        let world = w.world();
        if world.size() > 1 {
            let (buddy, owner) = Self::peers(w);
            let got = exchange(w, &encode(&[(version, data.to_vec())]), buddy, owner)?;
            for (v, d) in decode(&got)? {
                keep_newest(&mut self.held, v, d);
            }
        }
        keep_newest(&mut self.own, version, data.to_vec());
        world.barrier()
    }

    /// Collective: the newest version every rank holds (its own copy, or the buddy's copy for
    /// a respawned rank) with its data, or `None` when some rank has none. Replicates the
    /// loaded version again, so the buddy copies are complete after a restart.
    pub fn load(&mut self, w: &Weft) -> Result<Option<(u64, Vec<u8>)>> {
        let world = w.world();
        let mut cands = self.own.clone();
        if world.size() > 1 {
            let (buddy, owner) = Self::peers(w);
            // Copies go back to their owner; ours come from our buddy.
            let got = exchange(w, &encode(&self.held), owner, buddy)?;
            for (v, d) in decode(&got)? {
                if !cands.iter().any(|(c, _)| *c == v) {
                    cands.push((v, d));
                }
            }
        }
        let newest = cands.iter().map(|(v, _)| *v).max().unwrap_or(0);
        let v = agreed_version(w, newest)?;
        if v == 0 {
            self.own.clear();
            self.held.clear();
            return Ok(None);
        }
        let Some((_, data)) = cands.into_iter().find(|(c, _)| *c == v) else {
            return Err(Error::Reinit(format!(
                "checkpoint version {v} is held by neither this rank nor its buddy"
            )));
        };
        self.own.retain(|(c, _)| *c <= v);
        self.held.retain(|(c, _)| *c <= v);
        self.save(w, v, &data)?;
        Ok(Some((v, data)))
    }
}

/// File checkpoint: `DIR/rank-R.vV` for every rank R and version V, written atomically
/// (temporary file, then rename). Survives the failure of any set of processes on a host that
/// keeps the directory.
#[derive(Debug, Clone)]
pub struct FileCheckpoint {
    dir: PathBuf,
}

impl FileCheckpoint {
    /// Checkpoints in `dir` (created if missing).
    pub fn new(dir: impl Into<PathBuf>) -> FileCheckpoint {
        FileCheckpoint { dir: dir.into() }
    }

    fn path(&self, rank: u32, v: u64) -> PathBuf {
        self.dir.join(format!("rank-{rank}.v{v}"))
    }

    fn versions(&self, rank: u32) -> Vec<u64> {
        let prefix = format!("rank-{rank}.v");
        let mut vs: Vec<u64> = std::fs::read_dir(&self.dir)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().to_str()?.strip_prefix(&prefix)?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        vs.sort_unstable();
        vs
    }

    /// Collective: write `data` as `version` (> 0, increasing), drop older versions but one.
    pub fn save(&self, w: &Weft, version: u64, data: &[u8]) -> Result<()> {
        if version == 0 {
            return Err(Error::Reinit("checkpoint versions start at 1".into()));
        }
        let me = w.world().rank();
        let io = |e: std::io::Error| Error::Reinit(format!("checkpoint in {}: {e}", self.dir.display()));
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let tmp = self.dir.join(format!(".rank-{me}.tmp"));
        std::fs::write(&tmp, data).map_err(io)?;
        std::fs::rename(&tmp, self.path(me, version)).map_err(io)?;
        let vs = self.versions(me);
        for &old in vs.iter().filter(|&&v| v < version).rev().skip(KEEP - 1) {
            let _ = std::fs::remove_file(self.path(me, old));
        }
        w.world().barrier()
    }

    /// Collective: the newest version every rank has a file for, with this rank's data, or
    /// `None` when some rank has none.
    pub fn load(&self, w: &Weft) -> Result<Option<(u64, Vec<u8>)>> {
        let me = w.world().rank();
        let newest = self.versions(me).last().copied().unwrap_or(0);
        let v = agreed_version(w, newest)?;
        if v == 0 {
            return Ok(None);
        }
        let data = std::fs::read(self.path(me, v))
            .map_err(|e| Error::Reinit(format!("checkpoint {}: {e}", self.path(me, v).display())))?;
        Ok(Some((v, data)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_round_trip_and_keep_two_versions() {
        let mut l = Vec::new();
        for v in 1..=4 {
            keep_newest(&mut l, v, vec![v as u8; v as usize]);
        }
        keep_newest(&mut l, 4, vec![9]);
        assert_eq!(l, vec![(3, vec![3, 3, 3]), (4, vec![9])]);
        assert_eq!(decode(&encode(&l)).unwrap(), l);
        assert!(decode(&[1, 2, 3]).is_err());
        let mut b = encode(&l);
        b.pop();
        assert!(decode(&b).is_err());
    }
}
