//! The five stages: a signal generated from its sequence number, its spectrum, the spectrum
//! band-passed, the filtered signal, and what it comes to (energy, peak, checksum).

use std::{f64::consts::PI, sync::Arc};

use hmw::Stage;
use rustfft::{num_complex::Complex, Fft, FftPlanner};
use serde::{Deserialize, Serialize};

/// What the source hands out: the signal's number.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Seed(pub(crate) u64);

/// Real samples.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Signal(pub(crate) Vec<f32>);

/// Complex bins, real and imaginary parts interleaved.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Spectrum(pub(crate) Vec<f32>);

/// What a filtered signal comes to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Summary {
    /// The sum of its squared samples.
    pub(crate) energy: f64,
    /// The sample of largest magnitude.
    pub(crate) peak: u32,
    /// FNV-1a over every sample's bits: equal only for the same samples.
    pub(crate) checksum: u64,
}

/// A pseudo-random number in [0, 1) from `x` (SplitMix64), so that every rank generates the
/// same signal for the same seed.
fn unit(x: u64) -> f64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as f64 / u64::MAX as f64
}

/// Stage 1: `tones` sinusoids of random frequency, amplitude and phase, and noise.
pub(crate) struct Generate {
    pub(crate) samples: usize,
    pub(crate) tones: usize,
}

impl Stage for Generate {
    type In = Seed;
    type Out = Signal;
    fn process(&self, Seed(seq): Seed) -> Signal {
        let n = self.samples as f64;
        let tones: Vec<(f64, f64, f64)> = (0..self.tones as u64)
            .map(|t| {
                let base = seq.wrapping_mul(1000).wrapping_add(t * 3);
                let frequency = 1.0 + (unit(base) * n / 4.0).floor();
                (frequency, 0.2 + unit(base + 1), 2.0 * PI * unit(base + 2))
            })
            .collect();
        let samples = (0..self.samples)
            .map(|i| {
                let x = i as f64 / n;
                let wave: f64 = tones
                    .iter()
                    .map(|&(f, a, phase)| a * (2.0 * PI * f * x + phase).sin())
                    .sum();
                let noise = unit(seq.wrapping_mul(0x1_0000_0001).wrapping_add(i as u64)) - 0.5;
                (wave + 0.3 * noise) as f32
            })
            .collect();
        Signal(samples)
    }
    /// A sine counts 20 floating-point operations.
    fn operations(&self) -> f64 {
        (self.samples * self.tones * 20) as f64
    }
}

/// A forward or inverse FFT of `samples` points, planned once.
fn planned(samples: usize, inverse: bool) -> Arc<dyn Fft<f32>> {
    let mut planner = FftPlanner::new();
    if inverse {
        planner.plan_fft_inverse(samples)
    } else {
        planner.plan_fft_forward(samples)
    }
}

/// `5 n log2 n`: the floating-point operations of an FFT of `n` points.
fn fft_operations(n: usize) -> f64 {
    5.0 * n as f64 * (n as f64).log2()
}

/// Stage 2: the spectrum.
pub(crate) struct Forward {
    fft: Arc<dyn Fft<f32>>,
}

impl Forward {
    pub(crate) fn new(samples: usize) -> Self {
        Forward {
            fft: planned(samples, false),
        }
    }
}

impl Stage for Forward {
    type In = Signal;
    type Out = Spectrum;
    fn process(&self, Signal(samples): Signal) -> Spectrum {
        let mut buffer: Vec<Complex<f32>> = samples.iter().map(|&s| Complex::new(s, 0.0)).collect();
        self.fft.process(&mut buffer);
        Spectrum(buffer.iter().flat_map(|c| [c.re, c.im]).collect())
    }
    fn operations(&self) -> f64 {
        fft_operations(self.fft.len())
    }
}

/// Stage 3: a band-pass, a cascade of `order` first-order resonators centred across
/// `centre - width ..= centre + width` (fractions of the Nyquist frequency), each
/// `1 / (1 + j (f - c) / width)`, applied to both halves of the spectrum (the negative
/// frequencies conjugated, so the signal stays real).
pub(crate) struct BandPass {
    pub(crate) samples: usize,
    pub(crate) centre: f64,
    pub(crate) width: f64,
    pub(crate) order: usize,
}

impl BandPass {
    /// The centres of the resonators.
    fn centres(&self) -> Vec<f64> {
        let n = self.order.max(1);
        (0..n)
            .map(|m| {
                let spread = if n == 1 {
                    0.0
                } else {
                    2.0 * m as f64 / (n - 1) as f64 - 1.0
                };
                self.centre + self.width * spread
            })
            .collect()
    }
}

impl Stage for BandPass {
    type In = Spectrum;
    type Out = Spectrum;
    fn process(&self, Spectrum(mut bins): Spectrum) -> Spectrum {
        let n = bins.len() / 2;
        let half = n as f64 / 2.0;
        let centres = self.centres();
        for k in 0..n {
            let negative = k as f64 > half;
            let frequency = if negative { n - k } else { k } as f64 / half;
            let mut response = Complex::new(1.0f64, 0.0);
            for &c in &centres {
                response /= Complex::new(1.0, (frequency - c) / self.width);
            }
            if negative {
                response = response.conj();
            }
            let bin = Complex::new(f64::from(bins[2 * k]), f64::from(bins[2 * k + 1])) * response;
            bins[2 * k] = bin.re as f32;
            bins[2 * k + 1] = bin.im as f32;
        }
        Spectrum(bins)
    }
    /// A complex division counts 10.
    fn operations(&self) -> f64 {
        (self.samples * self.order.max(1) * 10) as f64
    }
}

/// Stage 4: back to samples (the real part, scaled by `1/n`).
pub(crate) struct Inverse {
    fft: Arc<dyn Fft<f32>>,
}

impl Inverse {
    pub(crate) fn new(samples: usize) -> Self {
        Inverse {
            fft: planned(samples, true),
        }
    }
}

impl Stage for Inverse {
    type In = Spectrum;
    type Out = Signal;
    fn process(&self, Spectrum(bins): Spectrum) -> Signal {
        let mut buffer: Vec<Complex<f32>> = bins
            .chunks_exact(2)
            .map(|c| Complex::new(c[0], c[1]))
            .collect();
        self.fft.process(&mut buffer);
        let scale = 1.0 / buffer.len() as f32;
        Signal(buffer.iter().map(|c| c.re * scale).collect())
    }
    fn operations(&self) -> f64 {
        fft_operations(self.fft.len())
    }
}

/// Stage 5: energy, peak and checksum.
pub(crate) struct Reduce {
    pub(crate) samples: usize,
}

impl Stage for Reduce {
    type In = Signal;
    type Out = Summary;
    fn process(&self, Signal(samples): Signal) -> Summary {
        let energy = samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
        let peak = samples
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
            .map_or(0, |(i, _)| i as u32);
        let checksum = samples.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, s| {
            (h ^ u64::from(s.to_bits())).wrapping_mul(0x0100_0000_01b3)
        });
        Summary {
            energy,
            peak,
            checksum,
        }
    }
    fn operations(&self) -> f64 {
        (self.samples * 4) as f64
    }
}
