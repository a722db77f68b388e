//! Fault injection: `--kill W@R[.A]` makes world rank W SIGKILL itself in the middle of step R
//! (0 = generation, 1..=dim = sorting rounds, dim+1 = verification) on its attempt A of that
//! step (default 0), so that crashes can follow one another at chosen points. Slow-downs start
//! at the beginning of step R and last S seconds: `--stop W@R:S` (a helper shell SIGSTOPs W for
//! 1 s and lets it run 0.05 s, in turn) and `--busy W@R:S` (a competing busy process that
//! inherits W's CPU affinity, so it shares W's core when ranks are pinned).

/// One planned crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kill {
    pub rank: u32,
    pub step: u32,
    pub attempt: u32,
}

impl std::str::FromStr for Kill {
    type Err = String;

    fn from_str(s: &str) -> Result<Kill, String> {
        let bad = || format!("--kill {s:?}: expected RANK@STEP or RANK@STEP.ATTEMPT");
        let (r, rest) = s.split_once('@').ok_or_else(bad)?;
        let (st, at) = rest.split_once('.').unwrap_or((rest, "0"));
        Ok(Kill {
            rank: r.parse().map_err(|_| bad())?,
            step: st.parse().map_err(|_| bad())?,
            attempt: at.parse().map_err(|_| bad())?,
        })
    }
}

/// A planned slow-down.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slow {
    pub rank: u32,
    pub step: u32,
    pub secs: f64,
    /// SIGSTOP bursts (true) or a competing busy process (false).
    pub stop: bool,
}

impl Slow {
    pub fn parse(s: &str, stop: bool) -> Result<Slow, String> {
        let bad = || format!("{s:?}: expected RANK@STEP:SECONDS");
        let (r, rest) = s.split_once('@').ok_or_else(bad)?;
        let (st, secs) = rest.split_once(':').ok_or_else(bad)?;
        let secs: f64 = secs.parse().map_err(|_| bad())?;
        if !(secs > 0.0 && secs < 3600.0) {
            return Err(bad());
        }
        Ok(Slow { rank: r.parse().map_err(|_| bad())?, step: st.parse().map_err(|_| bad())?, secs, stop })
    }
}

/// Start the slow-downs planned for this rank at this step (first attempt only).
pub fn maybe_slow(slows: &[Slow], me: u32, step: u32, attempt: u32) -> Result<(), String> {
    for s in slows.iter().filter(|s| s.rank == me && s.step == step && attempt == 0) {
        let pid = std::process::id();
        let script = if s.stop {
            format!(
                "end=$(( $(date +%s%N) / 1000000 + {ms} )); \
                 while [ $(( $(date +%s%N) / 1000000 )) -lt $end ]; do \
                 kill -STOP {pid} || exit 0; sleep 1; kill -CONT {pid}; sleep 0.05; done; kill -CONT {pid}",
                ms = (s.secs * 1000.0) as u64
            )
        } else {
            format!("timeout {} sh -c 'while :; do :; done'", s.secs)
        };
        println!(
            "hyperquicksort: rank {me} slowed ({}) for {} s from step {step}",
            if s.stop { "SIGSTOP bursts" } else { "busy competitor" },
            s.secs
        );
        std::process::Command::new("sh")
            .args(["-c", &script])
            .spawn()
            .map_err(|e| format!("slow-down helper: {e}"))?;
    }
    Ok(())
}

/// SIGKILL this process if a planned crash matches (rank, step, attempt).
pub fn maybe_kill(kills: &[Kill], me: u32, step: u32, attempt: u32) {
    if kills.contains(&Kill { rank: me, step, attempt }) {
        println!("hyperquicksort: rank {me} crashes in step {step} attempt {attempt}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        // SAFETY: kill(2) of this very process; no memory is involved.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kill_specs() {
        assert_eq!("3@2".parse(), Ok(Kill { rank: 3, step: 2, attempt: 0 }));
        assert_eq!("3@2.1".parse(), Ok(Kill { rank: 3, step: 2, attempt: 1 }));
        assert!("3".parse::<Kill>().is_err());
        assert!("a@1".parse::<Kill>().is_err());
        assert!("1@2.x".parse::<Kill>().is_err());
        assert_eq!(Slow::parse("2@1:1.5", true), Ok(Slow { rank: 2, step: 1, secs: 1.5, stop: true }));
        assert!(Slow::parse("2@1", true).is_err());
        assert!(Slow::parse("2@1:-1", false).is_err());
    }
}
