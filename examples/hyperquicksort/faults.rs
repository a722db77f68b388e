//! Fault injection: `--kill W@R[.A]` makes world rank W SIGKILL itself in the middle of step R
//! (0 = generation, 1..=dim = sorting rounds, dim+1 = verification) on its attempt A of that
//! step (default 0), so that crashes can follow one another at chosen points.

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
    }
}
