//! Change points in a series of figures: E-Divisive means (Matteson & James 2014, "A
//! nonparametric approach for multiple change point analysis of multivariate data", with the
//! divergence exponent α = 1, as MongoDB's continuous-benchmarking "signal processing" uses it).
//!
//! Why not pairwise thresholds: on a series with 5–15 % run-to-run noise, "this run is X % worse
//! than the previous one" fires on noise again and again. E-Divisive looks at the whole series
//! at once and only keeps a split whose two sides differ in distribution more than random
//! re-orderings of the same values do.
//!
//! Method, for a segment `Z` of length `L` split at `τ` into `X = Z[..τ]` and `Y = Z[τ..]`:
//!
//! ```text
//! Ê(τ) = 2/(|X||Y|) Σ|x−y| − 1/C(|X|,2) Σ_{x<x'}|x−x'| − 1/C(|Y|,2) Σ_{y<y'}|y−y'|
//! Q̂(τ) = |X||Y|/L · Ê(τ)
//! ```
//!
//! 1. In every current segment, the best split is the `τ` with the largest `Q̂`, both sides at
//!    least `min_size` long; the candidate is the best of all segments.
//! 2. Significance by permutation: the values of every segment are shuffled within that segment
//!    (`permutations` times, `ChaCha8Rng` seeded with `seed`: deterministic) and the largest `Q̂`
//!    over all segments recomputed; `p = (1 + #{permuted ≥ observed}) / (1 + permutations)`.
//! 3. The candidate is a change point when `p < alpha`; it splits its segment and the search
//!    goes on; the first candidate that is not significant ends it.
//!
//! Pure: no I/O, no clock; the same input, options and seed give the same change points.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Settings of the search.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Options {
    /// Significance level of the permutation test.
    pub alpha: f64,
    /// Number of permutations per test.
    pub permutations: usize,
    /// Fewest points on either side of a change point (≥ 2: a side needs a spread).
    pub min_size: usize,
    /// Seed of the permutation generator.
    pub seed: u64,
}

/// The defaults: α = 0.01 (a fleet has many metrics on many machines: at 0.05 one series in
/// twenty would get a false alarm), 199 permutations (p can reach 0.005), at least 3 runs on
/// either side of a change.
impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.01,
            permutations: 199,
            min_size: 3,
            seed: 0x0e_d1_u64,
        }
    }
}

/// One change point found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangePoint {
    /// Index of the first point after the change (the new segment starts here).
    pub index: usize,
    /// The split's statistic `Q̂`.
    pub q: f64,
    /// Permutation p-value of the split when it was accepted.
    pub p: f64,
}

/// `Q̂(τ)` for every admissible `τ` of `z` (both sides ≥ `min_size`): (τ, Q̂).
fn best_split(z: &[f64], min_size: usize) -> Option<(usize, f64)> {
    let l = z.len();
    let m = min_size.max(2);
    if l < 2 * m {
        return None;
    }
    // Running sums over a split that moves right one point at a time: within the left part,
    // within the right part, and across.
    let d = |i: usize, j: usize| (z[i] - z[j]).abs();
    let mut within_left = 0.0;
    let mut within_right = 0.0;
    for j in 0..l {
        for k in j + 1..l {
            within_right += d(j, k);
        }
    }
    let mut across = 0.0;
    let mut best: Option<(usize, f64)> = None;
    // Move point t from the right part to the left: split τ = t + 1.
    for t in 0..l - 1 {
        let to_left: f64 = (0..t).map(|i| d(i, t)).sum();
        let to_right: f64 = (t + 1..l).map(|k| d(t, k)).sum();
        within_left += to_left;
        within_right -= to_right;
        across += to_right - to_left;
        let tau = t + 1;
        if tau < m || l - tau < m {
            continue;
        }
        let (nx, ny) = (tau as f64, (l - tau) as f64);
        let e = 2.0 * across / (nx * ny)
            - within_left / (nx * (nx - 1.0) / 2.0)
            - within_right / (ny * (ny - 1.0) / 2.0);
        let q = nx * ny / l as f64 * e;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
    }
    best
}

/// The best split over all segments (given by their bounds): (global index, Q̂).
fn best_over(z: &[f64], bounds: &[usize], min_size: usize) -> Option<(usize, f64)> {
    let mut best: Option<(usize, f64)> = None;
    for w in bounds.windows(2) {
        if let Some((tau, q)) = best_split(&z[w[0]..w[1]], min_size)
            && best.is_none_or(|(_, b)| q > b)
        {
            best = Some((w[0] + tau, q));
        }
    }
    best
}

fn shuffle(rng: &mut ChaCha8Rng, xs: &mut [f64]) {
    for i in (1..xs.len()).rev() {
        let j = rng.random_range(0..=i);
        xs.swap(i, j);
    }
}

/// Change points of `series` by E-Divisive means, in index order. A series with a non-finite
/// value has none (nothing to say about it).
pub fn e_divisive(series: &[f64], opts: Options) -> Vec<ChangePoint> {
    search(series, opts).0
}

/// [`e_divisive`], and the candidate that ended the search: the likeliest further split, with
/// its p ≥ α (None when no segment was long enough to split).
pub fn search(series: &[f64], opts: Options) -> (Vec<ChangePoint>, Option<ChangePoint>) {
    if series.iter().any(|x| !x.is_finite()) {
        return (Vec::new(), None);
    }
    let mut rejected = None;
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let mut bounds = vec![0, series.len()];
    let mut found = Vec::new();
    let mut permuted = series.to_vec();
    while let Some((index, q)) = best_over(series, &bounds, opts.min_size) {
        let mut at_least = 0usize;
        for _ in 0..opts.permutations {
            permuted.copy_from_slice(series);
            for w in bounds.windows(2) {
                shuffle(&mut rng, &mut permuted[w[0]..w[1]]);
            }
            if let Some((_, pq)) = best_over(&permuted, &bounds, opts.min_size)
                && pq >= q
            {
                at_least += 1;
            }
        }
        let p = (1 + at_least) as f64 / (1 + opts.permutations) as f64;
        if p >= opts.alpha {
            rejected = Some(ChangePoint { index, q, p });
            break;
        }
        found.push(ChangePoint { index, q, p });
        let at = bounds.partition_point(|&b| b < index);
        bounds.insert(at, index);
    }
    found.sort_by_key(|c| c.index);
    (found, rejected)
}

/// Why a series has no (further) change point, in words, for a person: too few points; a
/// possible step too near the end to test (its last points all beyond the range of the rest of
/// the last segment); or the likeliest split and its p. `last_start`: where the last segment
/// (after the last change point found) starts.
pub fn why_no_more(
    series: &[f64],
    last_start: usize,
    rejected: Option<&ChangePoint>,
    opts: Options,
) -> String {
    let m = opts.min_size.max(2);
    let n = series.len();
    if n < 2 * m {
        return format!(
            "only {n} run(s); a change point needs at least {} ({m} on either side)",
            2 * m
        );
    }
    let seg = &series[last_start.min(n)..];
    // The longest tail (shorter than `m`) whose every point is beyond the range of the points
    // before it in the segment.
    let tail = (1..m).rev().filter(|&t| seg.len() >= t + m).find(|&t| {
        let (head, tail) = seg.split_at(seg.len() - t);
        let lo = head.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = head.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        tail.iter().all(|&x| x > hi) || tail.iter().all(|&x| x < lo)
    });
    if let Some(t) = tail {
        let before = seg.len() - t;
        return if t == 1 {
            format!(
                "only 1 run after a possible step (the last run is outside the range of the {before} before it); at least {m} are needed to test it"
            )
        } else {
            format!(
                "only {t} runs after a possible step (the last {t} are all outside the range of the {before} before them); at least {m} are needed to test it"
            )
        };
    }
    match rejected {
        Some(c) => format!(
            "the likeliest step, before run {} of {n}, is not significant (p = {} ≥ α = {}){}",
            c.index + 1,
            crate::units::sig(c.p),
            opts.alpha,
            if n - c.index < 2 * m || c.index < 2 * m {
                format!(
                    "; with {} run(s) before it and {} after, more runs on the shorter side would tell",
                    c.index,
                    n - c.index
                )
            } else {
                String::new()
            }
        ),
        None => format!("no segment is long enough to split ({m} runs on either side)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values around `level` with uniform noise of ±`spread` (a fraction), seeded.
    fn noisy(rng: &mut ChaCha8Rng, n: usize, level: f64, spread: f64) -> Vec<f64> {
        (0..n)
            .map(|_| level * (1.0 + rng.random_range(-spread..spread)))
            .collect()
    }

    /// Q̂ by the formula, summing every pair (for checking the running sums).
    fn q_direct(z: &[f64], tau: usize) -> f64 {
        let (x, y) = z.split_at(tau);
        let (nx, ny) = (x.len() as f64, y.len() as f64);
        let mut across = 0.0;
        for a in x {
            for b in y {
                across += (a - b).abs();
            }
        }
        let within = |v: &[f64]| {
            let mut s = 0.0;
            for i in 0..v.len() {
                for k in i + 1..v.len() {
                    s += (v[i] - v[k]).abs();
                }
            }
            s / (v.len() as f64 * (v.len() as f64 - 1.0) / 2.0)
        };
        nx * ny / z.len() as f64 * (2.0 * across / (nx * ny) - within(x) - within(y))
    }

    #[test]
    fn running_sums_match_the_formula() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let z = noisy(&mut rng, 17, 10.0, 0.3);
        let (tau, q) = best_split(&z, 3).unwrap();
        let direct: Vec<(usize, f64)> = (3..=14).map(|t| (t, q_direct(&z, t))).collect();
        let (dt, dq) = direct
            .iter()
            .copied()
            .fold((0, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
        assert_eq!(tau, dt);
        assert!((q - dq).abs() < 1e-9 * dq.abs().max(1.0), "{q} vs {dq}");
    }

    #[test]
    fn a_step_is_found_where_it_is() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut z = noisy(&mut rng, 15, 100.0, 0.05);
        z.extend(noisy(&mut rng, 15, 130.0, 0.05));
        let cps = e_divisive(&z, Options::default());
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].index, 15);
        assert!(cps[0].p < 0.01);
    }

    #[test]
    fn two_steps_are_both_found() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut z = noisy(&mut rng, 12, 100.0, 0.05);
        z.extend(noisy(&mut rng, 12, 140.0, 0.05));
        z.extend(noisy(&mut rng, 12, 90.0, 0.05));
        let idx: Vec<usize> = e_divisive(&z, Options::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(idx, [12, 24]);
    }

    #[test]
    fn flat_noise_of_5_to_15_percent_gives_no_change_point() {
        // One seeded series per noise level: none at the default significance.
        for (seed, spread) in [(11, 0.05), (12, 0.10), (13, 0.15)] {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let z = noisy(&mut rng, 30, 100.0, spread);
            assert_eq!(e_divisive(&z, Options::default()), [], "±{spread}");
        }
        // And over many flat series the false alarms stay near α (0.01): 40 series of ±15 %
        // noise, expected 0.4 false alarms; 3 or more would be a broken test.
        let mut rng = ChaCha8Rng::seed_from_u64(99);
        let alarms: usize = (0..40)
            .map(|_| e_divisive(&noisy(&mut rng, 25, 100.0, 0.15), Options::default()).len())
            .sum();
        assert!(alarms <= 2, "{alarms} false alarms in 40 flat series");
    }

    /// The false-alarm rate on flat series, and the detection rate of a +10 % step, with
    /// ±10 % noise (printed with --nocapture; the closing note quotes it).
    #[test]
    fn false_alarm_and_detection_rates() {
        let mut rng = ChaCha8Rng::seed_from_u64(2026);
        let n = 120;
        let flat: usize = (0..n)
            .filter(|_| {
                !e_divisive(&noisy(&mut rng, 20, 100.0, 0.10), Options::default()).is_empty()
            })
            .count();
        let mut found = |step: f64| -> usize {
            (0..n)
                .filter(|_| {
                    let mut z = noisy(&mut rng, 10, 100.0, 0.10);
                    z.extend(noisy(&mut rng, 10, 100.0 * step, 0.10));
                    e_divisive(&z, Options::default())
                        .iter()
                        .any(|c| (8..=12).contains(&c.index))
                })
                .count()
        };
        let (f10, f20) = (found(1.1), found(1.2));
        println!(
            "20 runs, ±10 % uniform noise: false alarms in {flat}/{n} flat series; a step at run 10 found (±2 runs) in {f10}/{n} for +10 %, {f20}/{n} for +20 %"
        );
        // α = 0.01 per series: 1.2 expected of 120; 6 or more would mean the test is not at α.
        assert!(flat <= 5, "{flat} false alarms in {n}");
        assert!(f20 > n / 2, "a +20 % step found in {f20} of {n}");
    }

    #[test]
    fn why_there_is_no_change_point_is_said() {
        let o = Options::default();
        assert_eq!(
            why_no_more(&[1.0, 2.0, 3.0], 0, None, o),
            "only 3 run(s); a change point needs at least 6 (3 on either side)"
        );
        // A step two runs before the end: too recent to test.
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut z = noisy(&mut rng, 12, 100.0, 0.02);
        z.extend([150.0, 151.0]);
        let (found, rejected) = search(&z, o);
        assert!(found.is_empty());
        let why = why_no_more(&z, 0, rejected.as_ref(), o);
        assert!(
            why.starts_with("only 2 runs after a possible step"),
            "{why}"
        );
        assert!(why.contains("at least 3 are needed"), "{why}");
        // Flat noise: the likeliest split and its p.
        let z = noisy(&mut rng, 20, 100.0, 0.10);
        let (found, rejected) = search(&z, o);
        assert!(found.is_empty());
        let why = why_no_more(&z, 0, rejected.as_ref(), o);
        assert!(why.contains("is not significant (p = "), "{why}");
    }

    #[test]
    fn deterministic_with_a_seed() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut z = noisy(&mut rng, 10, 50.0, 0.1);
        z.extend(noisy(&mut rng, 10, 58.0, 0.1));
        let a = e_divisive(&z, Options::default());
        let b = e_divisive(&z, Options::default());
        assert_eq!(a, b);
    }

    #[test]
    fn short_series_and_min_size() {
        // Fewer than two segments' worth of points: nothing to split.
        assert_eq!(
            e_divisive(&[1.0, 2.0, 3.0, 50.0, 51.0], Options::default()),
            []
        );
        // A step at index 2 cannot be reported with min_size 3 (a side would have 2 points).
        let z = [1.0, 1.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0];
        assert!(
            e_divisive(&z, Options::default())
                .iter()
                .all(|c| c.index >= 3 && z.len() - c.index >= 3)
        );
        assert_eq!(e_divisive(&[1.0, f64::NAN, 3.0], Options::default()), []);
    }
}
