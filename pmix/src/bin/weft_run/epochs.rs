//! The epoch service of `weft-run` (global restart, protocol in `weft_pmix::epoch`): which
//! control connection is which rank's, the current epoch, and the fence and finish of that
//! epoch. Pure state: every call returns the lines to write, as `(connection, line)`; the
//! event loop writes them and does the respawning.
//!
//! Invariants: a fence or finish completes only when every rank of the job took part in the
//! *current* epoch; a rollback answers every waiting fence or finish `stale` and pushes
//! `rollback` to every member, so no rank can stay in, or complete, an abandoned epoch.

use std::collections::{BTreeMap, BTreeSet};

use weft_pmix::epoch::EpochRequest;

pub type Out = Vec<(u64, String)>;

pub struct Epochs {
    size: u32,
    job_id: String,
    pub epoch: u64,
    /// Control connection of each rank that joined (the latest process of that rank).
    member: BTreeMap<u32, u64>,
    /// Fence contributions of the current epoch, while its fence is incomplete.
    fenced: BTreeMap<u32, String>,
    /// Ranks whose resilient main returned in the current epoch.
    finished: BTreeSet<u32>,
    /// Some process joined: the job uses global restart.
    joined: bool,
    /// Every rank finished one epoch: the job is done, failures are no longer respawned.
    pub done: bool,
}

impl Epochs {
    pub fn new(size: u32, job_id: &str) -> Epochs {
        Epochs {
            size,
            job_id: job_id.to_string(),
            epoch: 0,
            member: BTreeMap::new(),
            fenced: BTreeMap::new(),
            finished: BTreeSet::new(),
            joined: false,
            done: false,
        }
    }

    fn rank_of(&self, conn: u64) -> Option<u32> {
        self.member.iter().find(|(_, &c)| c == conn).map(|(&r, _)| r)
    }

    /// Carry out a request that came on connection `conn`; `node_of` is the current placement.
    pub fn request(&mut self, conn: u64, req: EpochRequest, node_of: &[u32]) -> Out {
        match req {
            EpochRequest::Join { rank, .. } if rank >= self.size => {
                vec![(conn, format!("error no rank {rank}: the job has {} rank(s)\n", self.size))]
            }
            EpochRequest::Join { rank, .. } => {
                self.member.insert(rank, conn);
                self.joined = true;
                vec![(
                    conn,
                    format!("joined {} {} {} {}\n", self.epoch, self.size, self.job_id, csv(node_of)),
                )]
            }
            EpochRequest::Fence { epoch, data } => {
                let Some(rank) = self.rank_of(conn) else {
                    return vec![(conn, "error reinit-fence before reinit-join\n".into())];
                };
                if epoch != self.epoch {
                    return vec![(conn, format!("stale {}\n", self.epoch))];
                }
                self.fenced.insert(rank, data);
                if self.fenced.len() < self.size as usize {
                    return Vec::new();
                }
                let all: Vec<&str> = self.fenced.values().map(String::as_str).collect();
                let line = format!("fenced {} {}\n", self.epoch, all.join(" "));
                // Nobody waits any more: a later rollback must not answer them `stale`.
                self.fenced.clear();
                self.member.values().map(|&c| (c, line.clone())).collect()
            }
            // The event loop carries these out (it kills the ranks, it hands out ranks).
            EpochRequest::Failed { .. } | EpochRequest::Standby => Vec::new(),
            EpochRequest::Finish { epoch } => {
                let Some(rank) = self.rank_of(conn) else {
                    return vec![(conn, "error reinit-finish before reinit-join\n".into())];
                };
                if epoch != self.epoch {
                    return vec![(conn, format!("stale {}\n", self.epoch))];
                }
                self.finished.insert(rank);
                if self.finished.len() < self.size as usize {
                    return Vec::new();
                }
                self.done = true;
                let line = format!("finished {}\n", self.epoch);
                self.member.values().map(|&c| (c, line.clone())).collect()
            }
        }
    }

    /// Ranks `failed` died and were respawned (or are about to be): move to the next epoch.
    /// Waiting fences and finishes are answered `stale`, every member gets `rollback`.
    pub fn rollback(&mut self, failed: &[u32], seen_ns: u64, respawn_ns: u64, node_of: &[u32]) -> Out {
        self.epoch += 1;
        let mut out = Vec::new();
        for r in self.fenced.keys().chain(self.finished.iter()) {
            if let Some(&c) = self.member.get(r) {
                if !failed.contains(r) {
                    out.push((c, format!("stale {}\n", self.epoch)));
                }
            }
        }
        self.fenced.clear();
        self.finished.clear();
        for r in failed {
            self.member.remove(r);
        }
        let failed_csv = csv(failed);
        let push = format!("rollback {} {seen_ns} {respawn_ns} {failed_csv} {}\n", self.epoch, csv(node_of));
        out.extend(self.member.values().map(|&c| (c, push.clone())));
        out
    }

    /// A control connection closed: it no longer names a member.
    pub fn closed(&mut self, conn: u64) {
        self.member.retain(|_, c| *c != conn);
    }

    /// Some process joined: the job uses global restart.
    pub fn active(&self) -> bool {
        self.joined
    }
}

fn csv(v: &[u32]) -> String {
    let s: Vec<String> = v.iter().map(u32::to_string).collect();
    if s.is_empty() {
        "-".into()
    } else {
        s.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence(e: &mut Epochs, conn: u64, epoch: u64) -> Out {
        e.request(conn, EpochRequest::Fence { epoch, data: format!("k={conn:02x}") }, &[0, 0, 0])
    }

    #[test]
    fn fence_completes_only_with_every_rank_of_the_current_epoch() {
        let mut e = Epochs::new(3, "job");
        for r in 0..3 {
            let out = e.request(10 + u64::from(r), EpochRequest::Join { rank: r, epoch: 0 }, &[0, 0, 0]);
            assert_eq!(out, vec![(10 + u64::from(r), "joined 0 3 job 0,0,0\n".to_string())]);
        }
        assert!(fence(&mut e, 10, 0).is_empty());
        assert!(fence(&mut e, 11, 0).is_empty());
        // Rank 2 dies before fencing: rollback; 0 and 1 are told their fence is stale.
        let out = e.rollback(&[2], 5, 6, &[0, 0, 0]);
        assert!(out.contains(&(10, "stale 1\n".into())) && out.contains(&(11, "stale 1\n".into())));
        assert!(out.contains(&(10, "rollback 1 5 6 2 0,0,0\n".into())));
        assert_eq!(out.len(), 4);
        // An old-epoch fence is stale; the respawned rank joins on a new connection.
        assert_eq!(fence(&mut e, 10, 0), vec![(10, "stale 1\n".into())]);
        e.request(20, EpochRequest::Join { rank: 2, epoch: 1 }, &[0, 0, 0]);
        assert!(fence(&mut e, 10, 1).is_empty());
        assert!(fence(&mut e, 11, 1).is_empty());
        let out = fence(&mut e, 20, 1);
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|(_, l)| l == "fenced 1 k=0a k=0b k=14\n"));
    }

    #[test]
    fn finish_is_uniform_and_rollback_reopens_it() {
        let mut e = Epochs::new(2, "j");
        e.request(1, EpochRequest::Join { rank: 0, epoch: 0 }, &[0, 0]);
        e.request(2, EpochRequest::Join { rank: 1, epoch: 0 }, &[0, 0]);
        assert!(e.request(1, EpochRequest::Finish { epoch: 0 }, &[0, 0]).is_empty());
        let out = e.rollback(&[1], 0, 0, &[0, 0]);
        assert_eq!(out, vec![(1, "stale 1\n".into()), (1, "rollback 1 0 0 1 0,0\n".into())]);
        assert!(!e.done);
        e.request(3, EpochRequest::Join { rank: 1, epoch: 1 }, &[0, 0]);
        assert!(e.request(1, EpochRequest::Finish { epoch: 1 }, &[0, 0]).is_empty());
        assert_eq!(e.request(3, EpochRequest::Finish { epoch: 1 }, &[0, 0]).len(), 2);
        assert!(e.done);
    }

    #[test]
    fn requests_before_join_and_bad_ranks_are_errors() {
        let mut e = Epochs::new(2, "j");
        assert!(!e.active());
        assert!(fence(&mut e, 1, 0)[0].1.starts_with("error"));
        assert!(e.request(1, EpochRequest::Finish { epoch: 0 }, &[0, 0])[0].1.starts_with("error"));
        assert!(e.request(1, EpochRequest::Join { rank: 2, epoch: 0 }, &[0, 0])[0].1.starts_with("error"));
        e.request(1, EpochRequest::Join { rank: 0, epoch: 0 }, &[0, 0]);
        assert!(e.active());
        e.closed(1);
        assert!(fence(&mut e, 1, 0)[0].1.starts_with("error"));
    }
}
