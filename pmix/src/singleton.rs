//! [`Singleton`]: the runtime of a process started without any launcher (a job of size 1).

use std::collections::HashMap;

use crate::{Runtime, RuntimeError};

/// Rank 0 of a job of size 1 on node 0. The key-value store is a local map; `commit` and
/// `fence` have nothing to do; no termination is ever reported.
#[derive(Debug)]
pub struct Singleton {
    job_id: String,
    kv: HashMap<String, Vec<u8>>,
    peers: [u32; 1],
    finalized: bool,
}

impl Singleton {
    /// A singleton job. Its id is `weft-singleton-<pid>`.
    pub fn new() -> Singleton {
        Singleton {
            job_id: format!("weft-singleton-{}", std::process::id()),
            kv: HashMap::new(),
            peers: [0],
            finalized: false,
        }
    }

    fn check(&self) -> Result<(), RuntimeError> {
        if self.finalized {
            Err(RuntimeError::Env("singleton runtime already finalized".into()))
        } else {
            Ok(())
        }
    }
}

impl Default for Singleton {
    fn default() -> Self {
        Singleton::new()
    }
}

impl Runtime for Singleton {
    fn backend(&self) -> &'static str {
        "singleton"
    }
    fn job_id(&self) -> &str {
        &self.job_id
    }
    fn rank(&self) -> u32 {
        0
    }
    fn size(&self) -> u32 {
        1
    }
    fn node_id(&self) -> u32 {
        0
    }
    fn node_of(&self, rank: u32) -> Result<u32, RuntimeError> {
        if rank == 0 {
            Ok(0)
        } else {
            Err(RuntimeError::BadRank { rank, size: 1 })
        }
    }
    fn local_peers(&self) -> &[u32] {
        &self.peers
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), RuntimeError> {
        self.check()?;
        self.kv.insert(key.to_owned(), value.to_vec());
        Ok(())
    }
    fn commit(&mut self) -> Result<(), RuntimeError> {
        self.check()
    }
    fn fence(&mut self) -> Result<(), RuntimeError> {
        self.check()
    }
    fn get(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, RuntimeError> {
        if rank != 0 {
            return Err(RuntimeError::BadRank { rank, size: 1 });
        }
        self.kv.get(key).cloned().ok_or_else(|| RuntimeError::NotFound { rank, key: key.to_owned() })
    }
    fn poll_terminated(&mut self, _out: &mut Vec<u32>) {}
    fn abort(&mut self, code: i32, msg: &str) -> ! {
        eprintln!("weft: abort({code}): {msg}");
        std::process::exit(code)
    }
    fn finalize(&mut self) -> Result<(), RuntimeError> {
        self.check()?;
        self.finalized = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn singleton_basics() {
        let mut s = Singleton::new();
        assert_eq!((s.rank(), s.size(), s.node_id()), (0, 1, 0));
        assert_eq!(s.local_peers(), &[0]);
        assert_eq!(s.node_of(0).unwrap(), 0);
        assert!(matches!(s.node_of(1), Err(RuntimeError::BadRank { rank: 1, size: 1 })));
        assert!(s.job_id().starts_with("weft-singleton-"));
        s.put("k", b"v").unwrap();
        s.commit().unwrap();
        s.fence().unwrap();
        assert_eq!(s.get(0, "k").unwrap(), b"v");
        assert!(matches!(s.get(0, "nope"), Err(RuntimeError::NotFound { .. })));
        assert!(matches!(s.get(3, "k"), Err(RuntimeError::BadRank { .. })));
        let mut out = Vec::new();
        s.poll_terminated(&mut out);
        assert!(out.is_empty());
        s.finalize().unwrap();
        assert!(s.put("x", b"y").is_err());
    }
}
