//! Raw libfabric baseline for the network path (`--net --fi-pingpong`): `fi_pingpong`
//! (libfabric-bin) on the provider weft uses between virtual nodes ([`provider`]), on `lo`.
//!
//! What `fi_pingpong` reports: `usec/xfer` = elapsed / iterations / 2 (`show_perf(…, 2)` in
//! libfabric's `util/pingpong.c`: every iteration is two transfers, a send and the reply), so it
//! is already the one-way latency, half the round trip, like weft's `latency`. No conversion.
//! It has no warm-up: its first iteration includes the connection setup.
//!
//! The server and the client run in one shell, a supervised job (`weft_testkit::job`) under a
//! hard timeout, in its own process group (killed on expiry). As root, that shell runs in a private network namespace
//! (`unshare --net`, only `lo`, brought up by the shell) so that the server's control socket
//! (bound to INADDR_ANY by `fi_pingpong`) is not reachable from any other interface.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::Duration;

use weft_testkit::job::{End, Supervisor};

/// What weft's automatic selection is assumed to pick when libfabric cannot be asked.
const FALLBACK_PROVIDER: &str = "tcp;ofi_rxm";

/// The provider of the network path (`--net`): `WEFT_FI_PROVIDER` when set (and not `auto`),
/// else what weft's automatic selection picks on `lo` (`tcp;ofi_rxm` here). The weft job is
/// given it explicitly and `fi_pingpong` runs on it, so the comparison stays on one provider.
/// Resolved once.
pub fn provider() -> &'static str {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        match std::env::var("WEFT_FI_PROVIDER") {
            Ok(v) if !v.is_empty() && !v.eq_ignore_ascii_case("auto") => return v,
            _ => {}
        }
        weft_fabric::info::select(None, Some("lo"))
            .ok()
            .and_then(|i| i.first().map(|e| e.provider()))
            .unwrap_or_else(|| FALLBACK_PROVIDER.to_string())
    })
}

/// Message size compared (bytes).
pub const SIZE: u64 = 8;
/// `fi_pingpong -I`.
pub const ITERS: u64 = 10_000;
/// Target of the network path: weft's 8 B latency within 15% of fi_pingpong's.
pub const TARGET_RATIO: f64 = 1.15;

/// Connection attempts of the client while the server starts listening (50 ms apart).
const CONNECT_TRIES: u32 = 100;

/// The shell that runs server and client: `$1` = 1 to bring `lo` up (private namespace),
/// `$2` / `$3` = server / client core (`-`: not pinned), then the `fi_pingpong` arguments.
const SCRIPT: &str = r#"
netns=$1; score=$2; ccore=$3; tries=$4; shift 4
on() { c=$1; shift; if [ "$c" = - ]; then "$@"; else taskset -c "$c" "$@"; fi; }
if [ "$netns" = 1 ]; then
  ip link set lo up || { echo "cannot bring lo up in the private network namespace" >&2; exit 97; }
fi
on "$score" fi_pingpong "$@" >/dev/null &
srv=$!
i=0
until out=$(on "$ccore" fi_pingpong "$@" 127.0.0.1 2>&1); do
  i=$((i + 1))
  if [ "$i" -ge "$tries" ] || ! kill -0 "$srv" 2>/dev/null; then
    printf '%s\n' "$out" >&2
    kill "$srv" 2>/dev/null
    exit 1
  fi
  sleep 0.05
done
printf '%s\n' "$out"
wait "$srv"
"#;

/// The `fi_pingpong` arguments on [`provider`] (server; the client adds `127.0.0.1`).
pub fn args() -> Vec<String> {
    args_for(provider())
}

fn args_for(provider: &str) -> Vec<String> {
    let s = |x: &str| x.to_string();
    vec![
        s("-p"),
        s(provider),
        s("-e"),
        s("rdm"),
        s("-d"),
        s("lo"),
        s("-S"),
        SIZE.to_string(),
        s("-I"),
        ITERS.to_string(),
    ]
}

/// The command line as a user would type it (for the report).
pub fn command_line() -> String {
    command_line_for(provider())
}

fn command_line_for(provider: &str) -> String {
    args_for(provider)
        .iter()
        .map(|a| if a.contains(';') { format!("\"{a}\"") } else { a.clone() })
        .collect::<Vec<_>>()
        .join(" ")
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// True when a private network namespace can be created here (root and `unshare`, `ip`).
fn netns_available() -> bool {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    root && which("unshare").is_some()
        && which("ip").is_some()
        && Command::new("unshare")
            .args(["--net", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// How one run was set up (for the report).
pub struct Setup {
    pub netns: bool,
    pub pinned: bool,
}

impl Setup {
    pub fn describe(&self) -> String {
        format!(
            "{}; {}",
            if self.pinned { "server on core 0, client on core 1 (taskset)" } else { "not pinned" },
            if self.netns {
                "both in a private network namespace (unshare --net, lo only)"
            } else {
                "in the host network namespace (not root: no private namespace)"
            }
        )
    }
}

/// Checks the tools once: the setup to use, or why fi_pingpong cannot run.
pub fn prepare(pin: bool) -> Result<Setup, String> {
    if which("fi_pingpong").is_none() {
        return Err("fi_pingpong not found (install libfabric-bin)".into());
    }
    if pin && which("taskset").is_none() {
        return Err("taskset not found (install util-linux) or use --no-pin".into());
    }
    Ok(Setup { netns: netns_available(), pinned: pin })
}

/// Runs server + client once; returns the client's one-way latency in µs.
pub fn run(setup: &Setup, timeout: Duration) -> Result<f64, String> {
    let ncores = thread::available_parallelism().map_or(1, |n| n.get());
    let (score, ccore) = if !setup.pinned {
        ("-".to_string(), "-".to_string())
    } else {
        ("0".to_string(), (1 % ncores).to_string())
    };
    let mut cmd = if setup.netns {
        let mut c = Command::new("unshare");
        c.args(["--net", "--", "sh"]);
        c
    } else {
        Command::new("sh")
    };
    cmd.arg("-c")
        .arg(SCRIPT)
        .arg("sh")
        .arg(if setup.netns { "1" } else { "0" })
        .arg(score)
        .arg(ccore)
        .arg(CONNECT_TRIES.to_string())
        .args(args());
    let done =
        Supervisor::new(timeout).run(cmd).map_err(|e| format!("cannot start fi_pingpong: {}", e.source))?;
    let status = match done.end {
        End::Exited(st) => st,
        End::TimedOut(_) => {
            return Err(format!("fi_pingpong timed out after {} s (process group killed)", timeout.as_secs()))
        }
    };
    let out: Vec<String> = done.stdout.lines().map(str::to_string).collect();
    if !status.success() {
        let err: Vec<&str> = done.stderr.lines().collect();
        let tail = &err[err.len().saturating_sub(8)..];
        return Err(format!("fi_pingpong exited with {status}: {}", tail.join(" | ")));
    }
    parse_usec_per_xfer(&out).ok_or_else(|| format!("cannot parse fi_pingpong output: {}", out.join(" | ")))
}

/// The `usec/xfer` column of the result line under `fi_pingpong`'s header
/// (`bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec`).
pub fn parse_usec_per_xfer(lines: &[String]) -> Option<f64> {
    let hdr = lines.iter().position(|l| l.split_whitespace().any(|t| t == "usec/xfer"))?;
    let cols: Vec<&str> = lines[hdr].split_whitespace().collect();
    let col = cols.iter().position(|t| *t == "usec/xfer")?;
    lines[hdr + 1..].iter().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() != cols.len() || f[0].parse::<u64>().ok()? != SIZE {
            return None;
        }
        f[col].parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fi_pingpong_1_17_output() {
        let out: Vec<String> = [
            "bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec",
            "8       10k     =10k     156k        0.12s      1.34       5.95       0.17",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(parse_usec_per_xfer(&out), Some(5.95));
        assert_eq!(parse_usec_per_xfer(&out[..1]), None);
        assert_eq!(parse_usec_per_xfer(&["noise".to_string()]), None);
    }

    #[test]
    fn command_line_quotes_the_provider() {
        assert_eq!(command_line_for("tcp;ofi_rxm"), "-p \"tcp;ofi_rxm\" -e rdm -d lo -S 8 -I 10000");
        assert_eq!(command_line_for("net"), "-p net -e rdm -d lo -S 8 -I 10000");
    }
}
