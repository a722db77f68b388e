//! The recommendation threshold of one tester for one tested process: TCP's retransmission
//! timeout estimator (Jacobson's smoothed round trip `srtt` and mean deviation `rttvar`, as in
//! RFC 6298: gains 1/8 and 1/4, `RTO = srtt + 4·rttvar`) multiplied by a tolerance factor, the
//! scheme of "Running resilient MPI applications on a Dynamic Group of Recommended Processes"
//! (Camargo and Duarte, 2018; factor 2.5 in its experiments).
//!
//! Invariants: the threshold is never below the configured floor (it absorbs scheduler noise
//! that a sub-millisecond round trip would otherwise turn into removals) and never above the
//! initial value it has before the first sample (a reply slower than that is a timeout: one
//! slow sample that happened to arrive in time cannot inflate the estimate enough to hide a
//! slow process for long, so removal and rejoin stay bounded in testing rounds). Only samples that met the threshold are fed in:
//! like Karn's rule, which keeps retransmitted samples out of TCP's estimate, this keeps a
//! process that stays slow from dragging its own threshold up until it looks recommended.

/// Smoothed round-trip estimate and the threshold derived from it (all times in ns).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rto {
    srtt: f64,
    rttvar: f64,
    samples: u64,
    initial: u64,
    floor: u64,
    factor: f64,
}

impl Rto {
    /// No sample yet: the threshold is `initial` (at least `floor`); it never exceeds it.
    pub fn new(initial: u64, floor: u64, factor: f64) -> Rto {
        Rto { srtt: 0.0, rttvar: 0.0, samples: 0, initial, floor, factor }
    }

    /// Feed one measured round trip (a test that met the threshold).
    pub fn sample(&mut self, rtt: u64) {
        let r = rtt as f64;
        if self.samples == 0 {
            self.srtt = r;
            self.rttvar = r / 2.0;
        } else {
            self.rttvar = 0.75 * self.rttvar + 0.25 * (self.srtt - r).abs();
            self.srtt = 0.875 * self.srtt + 0.125 * r;
        }
        self.samples += 1;
    }

    /// Samples fed so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Smoothed round trip (ns; 0 before the first sample).
    pub fn srtt(&self) -> u64 {
        self.srtt as u64
    }

    /// The recommendation threshold: `factor · (srtt + 4·rttvar)`, at least the floor.
    pub fn threshold(&self) -> u64 {
        let t = if self.samples == 0 {
            self.initial as f64
        } else {
            self.factor * (self.srtt + 4.0 * self.rttvar)
        };
        (t.min(self.initial as f64) as u64).max(self.floor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_then_adapts_to_samples() {
        let mut r = Rto::new(8_000, 10, 2.5);
        assert_eq!(r.threshold(), 8_000);
        r.sample(100);
        // srtt 100, rttvar 50: 2.5·(100 + 200) = 750.
        assert_eq!(r.threshold(), 750);
        for _ in 0..200 {
            r.sample(100);
        }
        // The deviation decays towards 0: the threshold approaches 2.5 · srtt.
        assert!(r.threshold() >= 250 && r.threshold() < 260, "{}", r.threshold());
    }

    #[test]
    fn floor_holds() {
        let mut r = Rto::new(5, 1_000, 2.5);
        assert_eq!(r.threshold(), 1_000);
        r.sample(1);
        assert_eq!(r.threshold(), 1_000);
    }

    #[test]
    fn one_slow_sample_is_capped() {
        let mut r = Rto::new(10_000, 100, 2.5);
        r.sample(9_000);
        assert_eq!(r.threshold(), 10_000);
    }

    #[test]
    fn jitter_widens_the_threshold() {
        let mut steady = Rto::new(u64::MAX, 0, 2.5);
        let mut noisy = Rto::new(u64::MAX, 0, 2.5);
        for i in 0..100u64 {
            steady.sample(1_000);
            noisy.sample(if i % 2 == 0 { 500 } else { 1_500 });
        }
        assert!(noisy.threshold() > steady.threshold() + 1_000);
    }
}
