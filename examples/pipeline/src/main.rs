//! A pipeline of five stages of unequal cost, each doing real work on each item: a signal
//! generated from its number (sinusoids and noise), its spectrum (FFT, rustfft), the spectrum
//! band-passed, the filtered signal (inverse FFT), and what it comes to (energy, peak,
//! checksum). The sink keeps every summary; at the end the controller recomputes items in
//! one thread, through the same stages, and checks that the run gave the same bits.
//!
//! `[application]`: `items`, `samples` (points per signal, a power of two), `tones`, `centre`
//! and `width` of the band (fractions of the Nyquist frequency), `order` (resonators of the
//! band-pass), `verify` (items recomputed: 0 for all).

mod stages;

use hmw::{Complete, Pipeline, PipelineStats, Sink, Source};
use serde::Deserialize;

use stages::{BandPass, Forward, Generate, Inverse, Reduce, Seed, Summary};

/// The `[application]` settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Settings {
    items: u64,
    samples: usize,
    tones: usize,
    centre: f64,
    width: f64,
    order: usize,
    verify: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            items: 200,
            samples: 4096,
            tones: 8,
            centre: 0.3,
            width: 0.1,
            order: 8,
            verify: 64,
        }
    }
}

/// Seeds 0, 1, ...
struct Seeds {
    next: u64,
    items: u64,
}

impl Source for Seeds {
    type Item = Seed;
    fn next_item(&mut self) -> Option<Seed> {
        (self.next < self.items).then(|| {
            self.next += 1;
            Seed(self.next - 1)
        })
    }
}

/// Every summary, by item, and the settings to check them with.
struct Summaries {
    settings: Settings,
    by_item: Vec<Option<Summary>>,
    out_of_order: u64,
}

impl Sink<Summary> for Summaries {
    fn receive(&mut self, seq: u64, summary: Summary) {
        if seq != self.by_item.iter().filter(|s| s.is_some()).count() as u64 {
            self.out_of_order += 1;
        }
        if let Some(slot) = self.by_item.get_mut(seq as usize) {
            *slot = Some(summary);
        }
    }
}

fn pipeline(settings: &Settings) -> anyhow::Result<Complete<Seeds, Summaries, Summary>> {
    anyhow::ensure!(
        settings.samples.is_power_of_two() && settings.samples >= 16,
        "samples = {}: a power of two, at least 16",
        settings.samples
    );
    anyhow::ensure!(settings.tones >= 1, "tones = 0: at least one");
    anyhow::ensure!(settings.order >= 1, "order = 0: at least one resonator");
    anyhow::ensure!(
        settings.width > 0.0,
        "width = {}: a positive fraction of the Nyquist frequency",
        settings.width
    );
    let samples = settings.samples;
    Ok(Pipeline::source(Seeds {
        next: 0,
        items: settings.items,
    })
    .stage(
        "generate",
        Generate {
            samples,
            tones: settings.tones,
        },
    )
    .stage("fft", Forward::new(samples))
    .stage(
        "filter",
        BandPass {
            samples,
            centre: settings.centre,
            width: settings.width,
            order: settings.order,
        },
    )
    .stage("ifft", Inverse::new(samples))
    .stage("reduce", Reduce { samples })
    .sink(Summaries {
        settings: settings.clone(),
        by_item: vec![None; settings.items as usize],
        out_of_order: 0,
    }))
}

/// The items recomputed to check a run: all of them, or `verify` spread evenly.
fn checked_items(settings: &Settings) -> Vec<u64> {
    let items = settings.items;
    if settings.verify == 0 || settings.verify >= items {
        return (0..items).collect();
    }
    (0..settings.verify)
        .map(|k| k * items / settings.verify)
        .collect()
}

/// Recompute the checked items in this thread through every stage and compare.
fn verify(summaries: &Summaries) -> anyhow::Result<usize> {
    let settings = &summaries.settings;
    anyhow::ensure!(
        summaries.out_of_order == 0,
        "{} items reached the sink out of order",
        summaries.out_of_order
    );
    let missing = summaries.by_item.iter().filter(|s| s.is_none()).count();
    anyhow::ensure!(missing == 0, "{missing} items never reached the sink");
    let checked = checked_items(settings);
    let reference = pipeline(settings)?;
    for &item in &checked {
        let alone = Complete {
            source: Seeds {
                next: item,
                items: item + 1,
            },
            chain: reference.chain.clone(),
            sink: Summaries {
                settings: settings.clone(),
                by_item: vec![None],
                out_of_order: 0,
            },
            output: reference.output,
        }
        .run_locally()?;
        let expected = alone.by_item[0];
        let got = summaries.by_item[item as usize];
        anyhow::ensure!(
            got == expected,
            "item {item}: the run gave {got:?}, one process {expected:?}"
        );
    }
    Ok(checked.len())
}

fn finish(summaries: Summaries, stats: &PipelineStats) -> anyhow::Result<()> {
    let checked = verify(&summaries);
    let verified = checked.is_ok();
    println!(
        "pipeline items={} verified={verified} checked={} makespan_s={:.3} items_per_s={:.2} \
         remaps={}",
        summaries.by_item.len(),
        checked.as_ref().map_or(0, |c| *c),
        stats.makespan_s,
        stats.throughput(),
        stats.remaps()
    );
    checked.map(|_| ())
}

fn main() -> std::process::ExitCode {
    hmw::run_pipeline(pipeline, finish)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stages in one thread give the same summary twice, and a band that filters out
    /// everything leaves no energy.
    #[test]
    fn the_stages_are_deterministic() {
        let settings = Settings {
            items: 3,
            samples: 256,
            ..Settings::default()
        };
        let once = pipeline(&settings).unwrap().run_locally().unwrap();
        let twice = pipeline(&settings).unwrap().run_locally().unwrap();
        assert_eq!(once.by_item, twice.by_item);
        assert!(once
            .by_item
            .iter()
            .all(|s| s.is_some_and(|s| s.energy > 0.0)));
        assert_eq!(verify(&once).unwrap(), 3);
        let mut wrong = once;
        wrong.by_item[1].as_mut().unwrap().checksum ^= 1;
        assert!(verify(&wrong).unwrap_err().to_string().contains("item 1"));
    }
}
