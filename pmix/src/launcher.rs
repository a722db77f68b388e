//! What ranks started by the embedded launcher `weft-run` get besides PMIx: the fault-injection
//! control connection ([`LauncherControl`]) and its line protocol, and the environment
//! variables weft-run adds to the ones of `PMIx_server_setup_fork`.
//!
//! Bootstrap under weft-run is PMIx: weft-run hosts the OpenPMIx server library
//! ([`crate::server`]) and every rank takes the PMIx client backend ([`crate::client`]),
//! exactly as under PRRTE or Slurm. What stays weft-run's own is *fault injection* for tests:
//! "SIGKILL this rank / every rank of this virtual node, and answer once every survivor has
//! been sent the termination event". It stays a small protocol of its own, on a Unix socket in
//! the launcher's private 0700 directory (`WEFT_RUN_CTL`), because (1) it must be usable from
//! any thread of a rank without touching the process's PMIx client, which the engine owns, and
//! from processes that are not ranks at all; (2) the answer must come after the launcher has
//! handed every survivor's event to libpmix, which `PMIx_Job_control`'s completion does not
//! promise; (3) no PMIx server elsewhere (PRRTE, Slurm) honours a "kill this virtual node"
//! request, so nothing portable would use it.
//!
//! Protocol: one request line, one answer line, any number of times per connection.
//!
//! ```text
//! request = "kill-rank " RANK "\n" | "kill-node " NODE "\n"
//! answer  = "killed " [RANK ("," RANK)*] "\n"      (the ranks killed; already dead ones are not named)
//!         | "error " TEXT "\n"                      (no such rank or node, malformed request)
//! ```
//!
//! A requester that is itself among the victims never gets an answer.

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;

use crate::RuntimeError;

/// Path of the launcher's control socket.
pub const ENV_CTL: &str = "WEFT_RUN_CTL";
/// Index of this process among all ranks on the physical host. Virtual nodes share the
/// host's cores, so binding must use this rather than the node-local rank.
pub const ENV_HOST_SLOT: &str = "WEFT_HOST_SLOT";

/// Longest request line the launcher reads.
pub const MAX_LINE: usize = 256;

/// A fault-injection request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlRequest {
    KillRank(u32),
    KillNode(u32),
}

impl ControlRequest {
    /// Parse one request line (without its newline).
    pub fn parse(line: &str) -> Result<ControlRequest, String> {
        let (verb, arg) = line.trim().split_once(' ').ok_or_else(|| format!("malformed request {line:?}"))?;
        let n: u32 = arg.trim().parse().map_err(|_| format!("{arg:?} is not a number"))?;
        match verb {
            "kill-rank" => Ok(ControlRequest::KillRank(n)),
            "kill-node" => Ok(ControlRequest::KillNode(n)),
            _ => Err(format!("unknown request {verb:?}")),
        }
    }

    /// The request line, with its newline.
    pub fn line(self) -> String {
        match self {
            ControlRequest::KillRank(r) => format!("kill-rank {r}\n"),
            ControlRequest::KillNode(n) => format!("kill-node {n}\n"),
        }
    }
}

/// The answer line for a successful kill, with its newline.
pub fn killed_line(ranks: &[u32]) -> String {
    let list: Vec<String> = ranks.iter().map(u32::to_string).collect();
    format!("killed {}\n", list.join(","))
}

/// Parse an answer line: the ranks killed, or the launcher's error text.
pub fn parse_answer(line: &str) -> Result<Vec<u32>, RuntimeError> {
    let line = line.trim_end_matches('\n');
    if let Some(why) = line.strip_prefix("error ") {
        return Err(RuntimeError::Launcher(why.to_string()));
    }
    let list = line
        .strip_prefix("killed")
        .ok_or_else(|| RuntimeError::Launcher(format!("malformed answer {line:?}")))?
        .trim();
    if list.is_empty() {
        return Ok(Vec::new());
    }
    list.split(',')
        .map(|r| r.parse().map_err(|_| RuntimeError::Launcher(format!("malformed answer {line:?}"))))
        .collect()
}

/// A control connection to `weft-run`: fault injection. Blocking; each call returns once the
/// launcher has carried the kill out and handed the termination event for every victim to
/// the PMIx server.
pub struct LauncherControl {
    rx: BufReader<UnixStream>,
    tx: UnixStream,
}

impl LauncherControl {
    /// Connect to the launcher named by `WEFT_RUN_CTL`.
    pub fn connect() -> Result<LauncherControl, RuntimeError> {
        let path =
            std::env::var_os(ENV_CTL).ok_or_else(|| RuntimeError::Env(format!("{ENV_CTL} is not set")))?;
        let tx = UnixStream::connect(&path).map_err(|e| {
            RuntimeError::Io(io::Error::new(
                e.kind(),
                format!("connecting to {}: {e}", path.to_string_lossy()),
            ))
        })?;
        let rx = BufReader::new(tx.try_clone()?);
        Ok(LauncherControl { rx, tx })
    }

    /// SIGKILL every rank of virtual node `node` at once; returns the ranks killed.
    pub fn kill_node(&mut self, node: u32) -> Result<Vec<u32>, RuntimeError> {
        self.request(ControlRequest::KillNode(node))
    }

    /// SIGKILL rank `rank`; returns the ranks killed (empty if it was already dead).
    pub fn kill_rank(&mut self, rank: u32) -> Result<Vec<u32>, RuntimeError> {
        self.request(ControlRequest::KillRank(rank))
    }

    fn request(&mut self, req: ControlRequest) -> Result<Vec<u32>, RuntimeError> {
        self.tx.write_all(req.line().as_bytes())?;
        let mut line = String::new();
        if self.rx.read_line(&mut line)? == 0 {
            return Err(RuntimeError::Launcher("the launcher closed the control connection".into()));
        }
        parse_answer(&line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        for r in [ControlRequest::KillRank(3), ControlRequest::KillNode(0)] {
            assert_eq!(ControlRequest::parse(r.line().trim_end()), Ok(r));
        }
        assert!(ControlRequest::parse("kill-rank").is_err());
        assert!(ControlRequest::parse("kill-rank x").is_err());
        assert!(ControlRequest::parse("kill-all 1").is_err());
    }

    #[test]
    fn answers_parse() {
        assert_eq!(parse_answer(&killed_line(&[1, 2])).unwrap(), vec![1, 2]);
        assert_eq!(parse_answer(&killed_line(&[])).unwrap(), Vec::<u32>::new());
        assert!(
            matches!(parse_answer("error no such node 9\n"), Err(RuntimeError::Launcher(m)) if m == "no such node 9")
        );
        assert!(parse_answer("killed 1,x\n").is_err());
        assert!(parse_answer("what\n").is_err());
    }

    #[test]
    fn connect_without_environment_is_typed() {
        if std::env::var_os(ENV_CTL).is_none() {
            assert!(matches!(LauncherControl::connect(), Err(RuntimeError::Env(_))));
        }
    }
}
