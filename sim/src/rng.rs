//! A small seeded random stream (SplitMix64): the same seed gives the same run on every
//! machine, with no dependency.

/// SplitMix64 (Steele, Lea and Flood 2014): 64 bits of state, passes BigCrush.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A stream from `seed`; `stream` separates streams of the same seed.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut rng = Rng {
            state: seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F),
        };
        rng.next_u64();
        rng
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// A standard normal draw (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_stream_and_draws_look_uniform() {
        let (mut a, mut b) = (Rng::new(7, 1), Rng::new(7, 1));
        assert_eq!(a.next_u64(), b.next_u64());
        assert_ne!(Rng::new(7, 2).next_u64(), Rng::new(7, 1).next_u64());
        let mean = (0..100_000).map(|_| a.unit()).sum::<f64>() / 100_000.0;
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
        let normal: Vec<f64> = (0..100_000).map(|_| b.normal()).collect();
        let m = normal.iter().sum::<f64>() / 1e5;
        let var = normal.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / 1e5;
        assert!(m.abs() < 0.02 && (var - 1.0).abs() < 0.03, "{m} {var}");
    }
}
