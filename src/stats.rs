//! Pure statistics (no I/O): per-run summaries, across-run summaries, bootstrap confidence
//! intervals and the tests used to compare two sets of runs.
//!
//! Conventions (chosen to match numpy / scipy / R so results can be cross-checked):
//!
//! * Standard deviation is the *sample* SD (denominator `n - 1`, numpy `ddof=1`, R `sd`).
//! * Percentiles use linear interpolation between closest ranks: numpy's default
//!   `method="linear"`, R's `quantile(type = 7)`, Excel's `PERCENTILE.INC`.
//! * Bootstrap intervals are *percentile* intervals: the `(1 - level) / 2` and
//!   `1 - (1 - level) / 2` percentiles (same interpolation as above) of the bootstrap
//!   distribution. The generator is `ChaCha8Rng::seed_from_u64(seed)` and resample indices are
//!   drawn with `random_range(0..n)`, so a fixed seed gives identical intervals on every
//!   platform (for a given `rand` version, pinned by `Cargo.lock`).
//! * The Mann-Whitney U test is exact for small samples, with or without ties (the permutation
//!   distribution of the rank sum; scipy `mannwhitneyu(a, b, method="exact")` where there are no
//!   ties), and `scipy.stats.mannwhitneyu(a, b)`'s normal approximation (`use_continuity=True`,
//!   `alternative="two-sided"`) above [`MWU_EXACT_MAX_TOTAL`] values; see [`mann_whitney`].
//! * Benjamini–Hochberg matches R's `p.adjust(p, "BH")` and
//!   `scipy.stats.false_discovery_control(p)`.
//!
//! Inputs are expected to be finite; [`summarize`] is the gate that rejects NaN / infinity.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Seed for the across-run bootstrap in [`across_runs`]. The value is arbitrary (0x056a = 1386);
/// it is fixed so the same per-run results always produce the same reported interval. Changing
/// it changes reported CIs slightly (within bootstrap noise), so treat it as part of the
/// result format.
pub const BOOTSTRAP_SEED: u64 = 0x05_6a_u64;

/// Number of bootstrap resamples used by [`across_runs`].
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;

/// One run's distribution of samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (`n - 1` denominator); 0 when `count == 1`.
    pub sd: f64,
    /// Smallest sample.
    pub min: f64,
    /// Median (type-7 percentile 0.5).
    pub p50: f64,
    /// 90th percentile (type 7).
    pub p90: f64,
    /// 99th percentile (type 7).
    pub p99: f64,
    /// 99.9th percentile (type 7).
    pub p999: f64,
    /// Largest sample.
    pub max: f64,
    /// Coefficient of variation `sd / |mean|`; 0 when `mean == 0`.
    pub cv: f64,
}

/// Summary over independent runs (the unit of comparison).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcrossRuns {
    /// Number of runs.
    pub runs: u64,
    /// Median of the per-run medians (`p50`).
    pub center: f64,
    /// 95% percentile-bootstrap CI of `center` (seed [`BOOTSTRAP_SEED`],
    /// [`BOOTSTRAP_RESAMPLES`] resamples).
    pub ci95: [f64; 2],
    /// Median of the per-run `p99`; only present when every run has `count > 1` (a one-sample
    /// run has no tail to speak of).
    pub p99: Option<f64>,
    /// Smallest per-run median.
    pub min: f64,
    /// Largest per-run median.
    pub max: f64,
    /// Coefficient of variation of the per-run medians (run-to-run variability); 0 for a single
    /// run or when their mean is 0.
    pub cv: f64,
}

/// Summarizes one run's samples. Returns `None` when `samples` is empty or any sample is NaN or
/// infinite. Percentiles are type 7 (see module docs); `sd` is the sample SD (0 for one sample).
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let mean = mean(&sorted);
    let sd = std_dev(&sorted);
    Some(Summary {
        count: sorted.len() as u64,
        mean,
        sd,
        min: sorted[0],
        p50: percentile(&sorted, 0.5),
        p90: percentile(&sorted, 0.9),
        p99: percentile(&sorted, 0.99),
        p999: percentile(&sorted, 0.999),
        max: sorted[sorted.len() - 1],
        cv: coefficient_of_variation(sd, mean),
    })
}

/// `sd / |mean|`, defined as 0 when `mean == 0`.
fn coefficient_of_variation(sd: f64, mean: f64) -> f64 {
    if mean == 0.0 { 0.0 } else { sd / mean.abs() }
}

/// Arithmetic mean; NaN for an empty slice (as numpy). Uses a second correction pass, so it is
/// accurate even when the values share a large offset.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    // One refinement step: the mean of the residuals is the rounding error of `m`.
    m + xs.iter().map(|x| x - m).sum::<f64>() / n
}

/// Sample standard deviation (denominator `n - 1`, numpy `ddof=1`, R `sd`); 0.0 for `n < 2`.
/// Two-pass algorithm (deviations from the mean) for numerical stability.
pub fn std_dev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    (ss / (xs.len() - 1) as f64).sqrt()
}

/// Percentile `q` (in `[0, 1]`, clamped) of `sorted`, which must be sorted ascending.
///
/// Linear interpolation between closest ranks: with `h = (n - 1) * q`, the result is
/// `x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)])` (0-based). This is numpy's
/// default (`method="linear"`) and R's `quantile(type = 7)`. E.g. for `1..=10`, `q = 0.9`
/// gives 9.1. Returns NaN for an empty slice or a NaN `q`.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    debug_assert!(
        sorted
            .windows(2)
            .all(|w| w[0] <= w[1] || w.iter().any(|x| x.is_nan())),
        "percentile() input must be sorted ascending"
    );
    let n = sorted.len();
    if n == 0 || q.is_nan() {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor();
    let i = lo as usize;
    if i + 1 >= n {
        return sorted[n - 1];
    }
    let t = h - lo;
    let (a, b) = (sorted[i], sorted[i + 1]);
    // Same lerp as numpy: exact at both ends, monotone in t.
    if t < 0.5 {
        a + (b - a) * t
    } else {
        b - (b - a) * (1.0 - t)
    }
}

/// Percentile `p` (in percent, 0–100) of `sorted` (ascending) by the nearest rank: the element
/// at index `round(p/100 · (n − 1))`, never an interpolation, so the result is always a measured
/// sample (the network suite's per-run p50/p99, as sockperf reports them). NaN for an empty slice.
pub fn percentile_nearest_rank(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Median of `xs` (sorts a copy; the mean of the two middle values for even `n`).
/// NaN for an empty slice.
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    median_in_place(&mut v)
}

/// Median that reorders `buf` (selection, O(n)); NaN for an empty slice.
fn median_in_place(buf: &mut [f64]) -> f64 {
    let n = buf.len();
    if n == 0 {
        return f64::NAN;
    }
    let k = n / 2;
    let (left, upper, _) = buf.select_nth_unstable_by(k, f64::total_cmp);
    let upper = *upper;
    if n % 2 == 1 {
        upper
    } else {
        // The lower middle value is the largest element left of position k.
        let lower = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        lower + (upper - lower) / 2.0
    }
}

/// Fills `out` with a bootstrap resample (with replacement) of `values`.
fn resample_into(rng: &mut ChaCha8Rng, values: &[f64], out: &mut Vec<f64>) {
    let n = values.len();
    out.clear();
    out.extend((0..n).map(|_| values[rng.random_range(0..n)]));
}

/// Percentile interval `[(1 - level) / 2, 1 - (1 - level) / 2]` of an unsorted bootstrap
/// distribution.
fn percentile_interval(mut stats: Vec<f64>, level: f64) -> (f64, f64) {
    stats.sort_unstable_by(f64::total_cmp);
    let alpha = (1.0 - level.clamp(0.0, 1.0)) / 2.0;
    (percentile(&stats, alpha), percentile(&stats, 1.0 - alpha))
}

/// Percentile bootstrap CI of the median, fixed seed ⇒ reproducible. `level` e.g. 0.95.
///
/// Draws `resamples` resamples of `values` (with replacement, same size) using
/// `ChaCha8Rng::seed_from_u64(seed)`, takes each resample's median and returns the
/// `(1 - level) / 2` and `1 - (1 - level) / 2` type-7 percentiles of those medians, so
/// `lo <= hi`. A single value gives `(v, v)`; an empty slice gives `(NaN, NaN)`;
/// `resamples == 0` gives the degenerate interval `(median, median)`.
pub fn bootstrap_median_ci(values: &[f64], level: f64, resamples: usize, seed: u64) -> (f64, f64) {
    if values.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    if values.len() == 1 || resamples == 0 {
        let m = median(values);
        return (m, m);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut buf = Vec::with_capacity(values.len());
    let meds = (0..resamples)
        .map(|_| {
            resample_into(&mut rng, values, &mut buf);
            median_in_place(&mut buf)
        })
        .collect();
    percentile_interval(meds, level)
}

/// Summarizes independent runs: the median of the per-run medians, its 95% bootstrap CI
/// ([`bootstrap_median_ci`] with [`BOOTSTRAP_RESAMPLES`] and [`BOOTSTRAP_SEED`]), the median of
/// per-run p99 (only when every run has `count > 1`), the range of the per-run medians and their
/// CV (sample SD / |mean|). Returns `None` when `per_run` is empty.
pub fn across_runs(per_run: &[Summary]) -> Option<AcrossRuns> {
    if per_run.is_empty() {
        return None;
    }
    let medians: Vec<f64> = per_run.iter().map(|s| s.p50).collect();
    let (lo, hi) = bootstrap_median_ci(&medians, 0.95, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED);
    let p99 = if per_run.iter().all(|s| s.count > 1) {
        let p99s: Vec<f64> = per_run.iter().map(|s| s.p99).collect();
        Some(median(&p99s))
    } else {
        None
    };
    Some(AcrossRuns {
        runs: per_run.len() as u64,
        center: median(&medians),
        ci95: [lo, hi],
        p99,
        min: medians.iter().copied().fold(f64::INFINITY, f64::min),
        max: medians.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        cv: coefficient_of_variation(std_dev(&medians), mean(&medians)),
    })
}

/// Largest size of the smaller sample for which [`mann_whitney_u`] uses the exact no-ties
/// distribution (scipy's `method="auto"` rule).
const MWU_EXACT_MAX_SMALL: usize = 8;
/// Cap on the larger sample for the exact distribution (keeps the exact counts within `u128`
/// and the work small); beyond it the normal approximation is used.
const MWU_EXACT_MAX_LARGE: usize = 10_000;
/// Largest total sample size `n_a + n_b` for which the exact permutation distribution is used
/// whatever the ties (counts stay below `C(40, 20) < 2^38`, the work below ~10^6 steps). Above
/// it the normal approximation with tie and continuity correction is within a few 10^-3 of the
/// exact value.
pub const MWU_EXACT_MAX_TOTAL: usize = 40;

/// Result of a two-sided Mann-Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// `U_a = R_a - n_a (n_a + 1) / 2` (scipy's statistic, of the first sample).
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// True when `p` comes from the exact permutation distribution, false when from the normal
    /// approximation.
    pub exact: bool,
}

/// Two-sided Mann-Whitney U test. Returns `(U, p_value)`; see [`mann_whitney`].
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> (f64, f64) {
    let r = mann_whitney(a, b);
    (r.u, r.p)
}

/// Two-sided Mann-Whitney U test: exact for small samples (with or without ties), normal
/// approximation with tie and continuity correction above.
///
/// `U` is the statistic of `a` (`U_a = R_a - n_a (n_a + 1) / 2`, with `R_a` the sum of the
/// average ranks of `a` in the pooled sample), as returned by scipy; `U_b = n_a n_b - U_a`.
///
/// * **Exact, no ties**, when the smaller sample has at most 8 values (and the larger at most
///   10 000) — scipy's `method="auto"` rule: `p = 2 P(U >= max(U_a, U_b))` under the null
///   permutation distribution, clipped to 1 (same as `scipy.stats.mannwhitneyu(a, b,
///   method="exact")`).
/// * **Exact, with or without ties**, when `n_a + n_b <= 40` ([`MWU_EXACT_MAX_TOTAL`]): the
///   permutation distribution of the rank sum `R_a` given the tie structure (every one of the
///   `C(n, n_a)` ways to split the pooled midranks into the two groups is equally likely), counted
///   with a dynamic programme over the (doubled, hence integer) midranks;
///   `p = min(1, 2 min(P(R <= R_a), P(R >= R_a)))`. Without ties this is scipy's exact p-value;
///   with ties it is the exact conditional test (R `coin::wilcox_test(distribution = "exact")`
///   up to its two-sided convention; scipy's "exact" ignores ties and its "auto" switches to the
///   normal approximation, which with 3 vs 3 tied values gives p ≈ 0.047 where the exact
///   p is 0.1).
/// * **Asymptotic** otherwise (identical to scipy's defaults `use_continuity=True`,
///   `method="asymptotic"`): with `U = max(U_a, U_b)`, `mu = n_a n_b / 2`,
///   `sigma² = n_a n_b / 12 · ((n + 1) - Σ(t³ - t) / (n (n - 1)))` (t = tie-group sizes),
///   `z = (U - mu - 0.5) / sigma`, `p = 2 (1 - Φ(z))`, clipped to 1. When every value is tied
///   (`sigma = 0`) the p-value is 1.
///
/// If either sample is empty there is no test: returns `U = 0, p = 1`.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> MannWhitney {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return MannWhitney {
            u: 0.0,
            p: 1.0,
            exact: true,
        };
    }
    let n = n1 + n2;
    let ranks = pooled_ranks(a, b);
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let u1 = ranks.rank_sum2_a as f64 / 2.0 - n1f * (n1f + 1.0) / 2.0;
    let u2 = n1f * n2f - u1;
    let u = u1.max(u2);

    let small = n1.min(n2);
    let large = n1.max(n2);
    let (p, exact) =
        if !ranks.has_ties && small <= MWU_EXACT_MAX_SMALL && large <= MWU_EXACT_MAX_LARGE {
            // Without ties U is an integer.
            (2.0 * mwu_exact_sf(u.round() as usize, small, large), true)
        } else if n <= MWU_EXACT_MAX_TOTAL {
            (mwu_exact_tied_p(&ranks, n1), true)
        } else {
            (mwu_asymptotic_p(u1, n1, n2, ranks.tie_term), false)
        };
    MannWhitney {
        u: u1,
        p: p.clamp(0.0, 1.0),
        exact,
    }
}

/// The pooled sample's midranks, doubled so they are integers.
struct PooledRanks {
    /// `2 ×` midrank of every pooled value, in sorted order.
    doubled: Vec<u64>,
    /// `2 × R_a`.
    rank_sum2_a: u64,
    /// `Σ (t³ - t)` over tie groups.
    tie_term: f64,
    has_ties: bool,
}

fn pooled_ranks(a: &[f64], b: &[f64]) -> PooledRanks {
    let n = a.len() + b.len();
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
    let mut doubled = Vec::with_capacity(n);
    let mut rank_sum2_a = 0;
    let mut tie_term = 0.0;
    let mut has_ties = false;
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        let t = (j - i) as f64;
        if j - i > 1 {
            has_ties = true;
            tie_term += t * t * t - t;
        }
        // Ranks i+1 ..= j share their average (i + 1 + j) / 2.
        let r2 = (i + 1 + j) as u64;
        let in_a = pooled[i..j].iter().filter(|p| p.1).count() as u64;
        rank_sum2_a += r2 * in_a;
        doubled.extend(std::iter::repeat_n(r2, j - i));
        i = j;
    }
    PooledRanks {
        doubled,
        rank_sum2_a,
        tie_term,
        has_ties,
    }
}

/// Exact two-sided p of the rank sum of a group of `n1` values under the permutation
/// distribution given the pooled (doubled) midranks: `min(1, 2 min(P(R <= r), P(R >= r)))`.
///
/// `count[k][s]` = number of `k`-subsets of the values seen so far whose doubled ranks sum to
/// `s`; every value is added once (0/1 knapsack over subsets), so tied values are distinct
/// items and the counts are the permutation counts.
fn mwu_exact_tied_p(r: &PooledRanks, n1: usize) -> f64 {
    let max_sum: u64 = {
        let mut d = r.doubled.clone();
        d.sort_unstable_by(|x, y| y.cmp(x));
        d.iter().take(n1).sum()
    };
    let width = max_sum as usize + 1;
    let mut count = vec![vec![0u128; width]; n1 + 1];
    count[0][0] = 1;
    let mut seen = 0usize;
    for &v in &r.doubled {
        seen += 1;
        let v = v as usize;
        for k in (1..=n1.min(seen)).rev() {
            let (lo, hi) = count.split_at_mut(k);
            let (prev, cur) = (&lo[k - 1], &mut hi[0]);
            for s in (v..width).rev() {
                cur[s] += prev[s - v];
            }
        }
    }
    let dist = &count[n1];
    let total: u128 = dist.iter().sum();
    let obs = r.rank_sum2_a as usize;
    let le: u128 = dist[..=obs.min(width - 1)].iter().sum();
    let ge: u128 = dist[obs.min(width)..].iter().sum();
    let one_sided = le.min(ge) as f64 / total as f64;
    (2.0 * one_sided).min(1.0)
}

/// Normal approximation with tie and continuity correction (scipy `method="asymptotic"`).
fn mwu_asymptotic_p(u1: f64, n1: usize, n2: usize, tie_term: f64) -> f64 {
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let nf = n1f + n2f;
    let u = u1.max(n1f * n2f - u1);
    let mu = n1f * n2f / 2.0;
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    let sigma = var.max(0.0).sqrt();
    if sigma == 0.0 {
        1.0
    } else {
        let z = (u - mu - 0.5) / sigma;
        // 2 * (1 - Φ(z)) = erfc(z / √2)
        erfc(z / std::f64::consts::SQRT_2).clamp(0.0, 1.0)
    }
}

/// `P(U >= u)` for the Mann-Whitney U statistic of samples of sizes `m` and `n` (no ties) under
/// the null hypothesis, computed from exact counts.
///
/// The number of arrangements with `U = k` is the coefficient of `q^k` in the Gaussian binomial
/// `[m + n choose m]_q = Π_{i=1..m} (1 - q^(n+i)) / (1 - q^i)`, evaluated with exact integer
/// polynomial arithmetic (truncation at degree `m n` is exact because every divisor is an
/// invertible power series).
fn mwu_exact_sf(u: usize, m: usize, n: usize) -> f64 {
    let len = m * n + 1;
    if u >= len {
        return 0.0;
    }
    let mut c = vec![0i128; len];
    c[0] = 1;
    for i in 1..=m {
        // Multiply by (1 - q^(n+i)).
        let d = n + i;
        for k in (d..len).rev() {
            c[k] -= c[k - d];
        }
        // Divide by (1 - q^i): multiply by 1 + q^i + q^2i + ...
        for k in i..len {
            c[k] += c[k - i];
        }
    }
    let total: i128 = c.iter().sum();
    let tail: i128 = c[u..].iter().sum();
    tail as f64 / total as f64
}

/// Complementary error function `erfc(x) = 1 - erf(x)`; relative error below 1e-14 for
/// `0 <= x < 26.5` (checked against `scipy.special.erfc` on a 0.01 grid), 0 beyond ~27.3.
///
/// For `|x| < 1.5`, the positive-term series `erf(x) = 2/√π · e^(-x²) · Σ 2^k x^(2k+1) /
/// (2k+1)!!` (no cancellation); above, the continued fraction
/// `erfc(x) = e^(-x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))` evaluated with the
/// modified Lentz method. Negative arguments use `erfc(-x) = 2 - erfc(x)`.
fn erfc(x: f64) -> f64 {
    const FRAC_1_SQRT_PI: f64 = 0.564_189_583_547_756_3; // 1/√π
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x > 27.3 {
        // erfc(27.3) < 1e-325: below the smallest subnormal.
        return 0.0;
    }
    let x2 = x * x;
    if x < 1.5 {
        let mut term = x;
        let mut sum = x;
        let mut k = 0.0;
        while term > sum * 1e-17 {
            k += 1.0;
            term *= 2.0 * x2 / (2.0 * k + 1.0);
            sum += term;
        }
        1.0 - 2.0 * FRAC_1_SQRT_PI * (-x2).exp() * sum
    } else {
        // f = x + a1/(x + a2/(x + ...)), a_k = k/2; modified Lentz.
        const TINY: f64 = 1e-300;
        let mut f = x;
        let mut c = x;
        let mut d = 0.0;
        for k in 1..500 {
            let a = k as f64 / 2.0;
            d = x + a * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = x + a / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        FRAC_1_SQRT_PI * (-x2).exp() / f
    }
}

/// Benjamini–Hochberg adjusted p-values (same order as input), monotone, clipped to 1.
///
/// With the `m` p-values sorted ascending, `adj_(i) = min_{j >= i} min(1, m p_(j) / j)` — the
/// same as R's `p.adjust(p, "BH")` and `scipy.stats.false_discovery_control(p)`. NaN entries
/// stay NaN and are not counted in `m` (as R does with `NA`). Empty input gives an empty vector.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let mut out = vec![f64::NAN; p.len()];
    let mut order: Vec<usize> = (0..p.len()).filter(|&i| !p[i].is_nan()).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let m = order.len() as f64;
    let mut running_min = 1.0_f64;
    for (rank0, &idx) in order.iter().enumerate().rev() {
        // `m / rank` first, as R and scipy do (keeps `adj == p` exact for the largest p).
        let adj = p[idx] * (m / (rank0 + 1) as f64);
        running_min = running_min.min(adj);
        out[idx] = running_min;
    }
    out
}

/// Geometric mean `exp(mean(ln x))` of positive values; `None` if empty or any value is `<= 0`
/// or not finite.
pub fn geometric_mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|&x| !(x > 0.0 && x.is_finite())) {
        return None;
    }
    let logs: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    Some(mean(&logs).exp())
}

/// Bootstrap CI (percentile method) of the ratio `median(b) / median(a)`, resampling each group
/// independently, fixed seed. `level` e.g. 0.95.
///
/// Each of the `resamples` iterations draws a resample of `a` and then one of `b` (with
/// replacement, original sizes) from a single `ChaCha8Rng::seed_from_u64(seed)` stream and
/// records `median(b*) / median(a*)`; the result is the `(1 - level) / 2` and
/// `1 - (1 - level) / 2` type-7 percentiles of those ratios. `a` should be positive (e.g.
/// timings): a zero resampled median gives an infinite or NaN ratio. Empty `a` or `b` gives
/// `(NaN, NaN)`; `resamples == 0` gives `(r, r)` with `r = median(b) / median(a)`.
pub fn bootstrap_ratio_ci(
    a: &[f64],
    b: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> (f64, f64) {
    bootstrap_medians_ci(a, b, level, resamples, seed, |mb, ma| mb / ma)
}

/// Bootstrap CI (percentile method) of the difference `median(b) - median(a)`, resampling each
/// group independently, fixed seed; the same resampling scheme as [`bootstrap_ratio_ci`] (same
/// seed ⇒ the same resamples), for values where a ratio is undefined (zero or negative).
/// Empty `a` or `b` gives `(NaN, NaN)`; `resamples == 0` gives `(d, d)`.
pub fn bootstrap_diff_ci(
    a: &[f64],
    b: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> (f64, f64) {
    bootstrap_medians_ci(a, b, level, resamples, seed, |mb, ma| mb - ma)
}

/// The resampling both bootstrap CIs share: percentile interval of `f(median(b*), median(a*))`
/// over `resamples` draws (a's resample then b's, one seeded stream).
fn bootstrap_medians_ci(
    a: &[f64],
    b: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
    f: impl Fn(f64, f64) -> f64,
) -> (f64, f64) {
    if a.is_empty() || b.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    if resamples == 0 {
        let r = f(median(b), median(a));
        return (r, r);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut buf_a = Vec::with_capacity(a.len());
    let mut buf_b = Vec::with_capacity(b.len());
    let stats = (0..resamples)
        .map(|_| {
            resample_into(&mut rng, a, &mut buf_a);
            resample_into(&mut rng, b, &mut buf_b);
            let mb = median_in_place(&mut buf_b);
            f(mb, median_in_place(&mut buf_a))
        })
        .collect();
    percentile_interval(stats, level)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relative-or-absolute closeness.
    fn close(actual: f64, expected: f64, tol: f64) -> bool {
        (actual - expected).abs() <= tol * expected.abs().max(1.0)
    }

    macro_rules! assert_close {
        ($actual:expr, $expected:expr) => {
            assert_close!($actual, $expected, 1e-12)
        };
        ($actual:expr, $expected:expr, $tol:expr) => {{
            let (a, e): (f64, f64) = ($actual, $expected);
            assert!(
                close(a, e, $tol),
                "{} = {a:e}, expected {e:e} (tol {:e})",
                stringify!($actual),
                $tol
            );
        }};
    }

    // ---- mean / sd -------------------------------------------------------------------------

    #[test]
    fn mean_and_sd_known_values() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_close!(mean(&xs), 5.0);
        // numpy: np.std(xs, ddof=1) = sqrt(32/7)
        assert_close!(std_dev(&xs), 2.138089935299395);
        assert_close!(std_dev(&xs), (32.0_f64 / 7.0).sqrt());
    }

    #[test]
    fn mean_and_sd_unsorted_values() {
        let y = [3.5, 0.2, 7.7, 1.9, 4.4, 12.0, 2.2];
        assert_close!(mean(&y), 4.557142857142858); // np.mean
        assert_close!(std_dev(&y), 4.041805348627081); // np.std(ddof=1)
    }

    #[test]
    fn mean_and_sd_edge_cases() {
        assert!(mean(&[]).is_nan());
        assert_eq!(std_dev(&[]), 0.0);
        assert_eq!(std_dev(&[42.0]), 0.0);
        assert_eq!(mean(&[42.0]), 42.0);
        assert_eq!(std_dev(&[3.0, 3.0, 3.0]), 0.0);
    }

    #[test]
    fn sd_is_stable_with_large_offset() {
        // Naive sum-of-squares formula loses everything here.
        let xs = [1e9 + 4.0, 1e9 + 7.0, 1e9 + 13.0, 1e9 + 16.0];
        assert_close!(mean(&xs), 1e9 + 10.0);
        assert_close!(std_dev(&xs), 30.0_f64.sqrt());
    }

    // ---- percentiles / median --------------------------------------------------------------

    #[test]
    fn percentile_matches_numpy_linear() {
        let x: Vec<f64> = (1..=10).map(f64::from).collect();
        // np.percentile(np.arange(1, 11), q * 100)
        for (q, expected) in [
            (0.0, 1.0),
            (0.1, 1.9),
            (0.25, 3.25),
            (0.5, 5.5),
            (0.9, 9.1),
            (0.99, 9.91),
            (0.999, 9.991),
            (1.0, 10.0),
        ] {
            assert_close!(percentile(&x, q), expected);
        }
        let y = [0.2, 1.9, 2.2, 3.5, 4.4, 7.7, 12.0];
        // np.quantile(y, q)
        for (q, expected) in [
            (0.33, 2.194),
            (0.5, 3.5),
            (0.9, 9.42),
            (0.99, 11.742),
            (0.999, 11.9742),
        ] {
            assert_close!(percentile(&y, q), expected);
        }
    }

    #[test]
    fn percentile_edge_cases() {
        assert!(percentile(&[], 0.5).is_nan());
        assert!(percentile(&[1.0, 2.0], f64::NAN).is_nan());
        assert_eq!(percentile(&[7.0], 0.0), 7.0);
        assert_eq!(percentile(&[7.0], 0.999), 7.0);
        // q outside [0, 1] is clamped.
        assert_eq!(percentile(&[1.0, 2.0, 3.0], -0.5), 1.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0], 1.5), 3.0);
        // Exact at the endpoints and monotone.
        let s = [0.1, 0.7, 0.7, 3.3];
        let mut prev = f64::NEG_INFINITY;
        for i in 0..=1000 {
            let v = percentile(&s, f64::from(i) / 1000.0);
            assert!(v >= prev);
            prev = v;
        }
        assert_eq!(percentile(&s, 1.0), 3.3);
    }

    #[test]
    fn median_odd_even_and_unsorted() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[5.0]), 5.0);
        assert_eq!(median(&[1.0, 1.0, 9.0, 9.0]), 5.0);
        assert_eq!(median(&[-3.0, 10.0]), 3.5);
        assert!(median(&[]).is_nan());
        // Agrees with percentile(.., 0.5) on random-ish data of both parities.
        for n in 1..40 {
            let xs: Vec<f64> = (0..n).map(|i| f64::from((i * 37 + 11) % 23)).collect();
            let mut s = xs.clone();
            s.sort_by(f64::total_cmp);
            assert_close!(median(&xs), percentile(&s, 0.5));
        }
    }

    // ---- summarize -------------------------------------------------------------------------

    #[test]
    fn summarize_known_values() {
        let xs: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let s = summarize(&xs).unwrap();
        assert_eq!(s.count, 10);
        assert_close!(s.mean, 5.5);
        assert_close!(s.sd, 3.0276503540974917); // np.std(1..=10, ddof=1)
        assert_eq!(s.min, 1.0);
        assert_close!(s.p50, 5.5);
        assert_close!(s.p90, 9.1);
        assert_close!(s.p99, 9.91);
        assert_close!(s.p999, 9.991);
        assert_eq!(s.max, 10.0);
        assert_close!(s.cv, 3.0276503540974917 / 5.5);
    }

    #[test]
    fn summarize_edge_cases() {
        assert_eq!(summarize(&[]), None);
        assert_eq!(summarize(&[1.0, f64::NAN]), None);
        assert_eq!(summarize(&[1.0, f64::INFINITY]), None);
        assert_eq!(summarize(&[f64::NEG_INFINITY]), None);

        let one = summarize(&[4.25]).unwrap();
        assert_eq!(
            one,
            Summary {
                count: 1,
                mean: 4.25,
                sd: 0.0,
                min: 4.25,
                p50: 4.25,
                p90: 4.25,
                p99: 4.25,
                p999: 4.25,
                max: 4.25,
                cv: 0.0,
            }
        );

        // Zero mean => cv defined as 0.
        let z = summarize(&[-1.0, 1.0]).unwrap();
        assert_eq!(z.mean, 0.0);
        assert_eq!(z.cv, 0.0);
        assert_close!(z.sd, 2.0_f64.sqrt());

        // Negative mean => cv uses |mean|.
        let neg = summarize(&[-2.0, -4.0]).unwrap();
        assert!(neg.cv > 0.0);
    }

    #[test]
    fn summary_serde_roundtrip() {
        let s = summarize(&[1.0, 2.0, 3.5]).unwrap();
        let json = serde_json::to_string(&s).unwrap();
        let back: Summary = serde_json::from_str(&json).unwrap();
        assert_eq!(back.count, s.count);
        // serde_json without its `float_roundtrip` feature may parse floats 1 ulp off.
        for (x, y) in [
            (back.mean, s.mean),
            (back.sd, s.sd),
            (back.min, s.min),
            (back.p50, s.p50),
            (back.p90, s.p90),
            (back.p99, s.p99),
            (back.p999, s.p999),
            (back.max, s.max),
            (back.cv, s.cv),
        ] {
            assert_close!(x, y, 1e-15);
        }
    }

    // ---- bootstrap -------------------------------------------------------------------------

    fn lcg_data(n: usize, seed: u64) -> Vec<f64> {
        // Deterministic pseudo-data in [10, 20) without depending on the RNG under test.
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                10.0 + (state >> 11) as f64 / (1u64 << 53) as f64 * 10.0
            })
            .collect()
    }

    #[test]
    fn bootstrap_median_ci_contains_median_and_is_ordered() {
        let xs = lcg_data(50, 1);
        let m = median(&xs);
        let (lo, hi) = bootstrap_median_ci(&xs, 0.95, 2000, 7);
        assert!(lo <= m && m <= hi, "{lo} <= {m} <= {hi}");
        assert!(lo < hi);
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert!(min <= lo && hi <= max);
        // A wider level gives a wider (or equal) interval with the same seed.
        let (lo99, hi99) = bootstrap_median_ci(&xs, 0.99, 2000, 7);
        assert!(lo99 <= lo && hi <= hi99);
    }

    #[test]
    fn bootstrap_median_ci_is_reproducible() {
        let xs = lcg_data(31, 2);
        let a = bootstrap_median_ci(&xs, 0.95, 1000, 42);
        let b = bootstrap_median_ci(&xs, 0.95, 1000, 42);
        assert_eq!(a, b);
        // A different seed is allowed to (and here does) give a different interval.
        let c = bootstrap_median_ci(&xs, 0.95, 1000, 43);
        assert_ne!(a, c);
    }

    #[test]
    fn bootstrap_median_ci_shrinks_with_more_data() {
        let small = lcg_data(20, 3);
        let large = lcg_data(2000, 3);
        let (l1, h1) = bootstrap_median_ci(&small, 0.95, 1000, 5);
        let (l2, h2) = bootstrap_median_ci(&large, 0.95, 1000, 5);
        assert!(h2 - l2 < (h1 - l1) / 3.0, "{} vs {}", h2 - l2, h1 - l1);
    }

    #[test]
    fn bootstrap_median_ci_edge_cases() {
        assert_eq!(bootstrap_median_ci(&[3.5], 0.95, 1000, 1), (3.5, 3.5));
        assert_eq!(bootstrap_median_ci(&[2.0; 9], 0.95, 1000, 1), (2.0, 2.0));
        assert_eq!(bootstrap_median_ci(&[1.0, 3.0], 0.95, 0, 1), (2.0, 2.0));
        let (lo, hi) = bootstrap_median_ci(&[], 0.95, 1000, 1);
        assert!(lo.is_nan() && hi.is_nan());
        // Two values: resample medians are 1, 2 or 3; the 95% interval spans them.
        assert_eq!(bootstrap_median_ci(&[1.0, 3.0], 0.95, 1000, 1), (1.0, 3.0));
    }

    #[test]
    fn bootstrap_ratio_ci_behaviour() {
        let a = lcg_data(40, 10);
        let b: Vec<f64> = lcg_data(40, 11).iter().map(|x| x * 2.0).collect();
        let r = median(&b) / median(&a);
        let (lo, hi) = bootstrap_ratio_ci(&a, &b, 0.95, 2000, 9);
        assert!(lo <= r && r <= hi, "{lo} <= {r} <= {hi}");
        assert!(lo > 1.5 && hi < 2.5, "({lo}, {hi})");
        assert_eq!(bootstrap_ratio_ci(&a, &b, 0.95, 2000, 9), (lo, hi));
        // Constant groups: every resampled ratio is exactly 6 / 4.
        assert_eq!(
            bootstrap_ratio_ci(&[4.0; 5], &[6.0; 7], 0.95, 500, 1),
            (1.5, 1.5)
        );
        // Single values.
        assert_eq!(bootstrap_ratio_ci(&[4.0], &[6.0], 0.95, 100, 1), (1.5, 1.5));
        assert_eq!(
            bootstrap_ratio_ci(&[4.0, 8.0], &[6.0], 0.95, 0, 1),
            (1.0, 1.0)
        );
        let (l, h) = bootstrap_ratio_ci(&[], &[1.0], 0.95, 100, 1);
        assert!(l.is_nan() && h.is_nan());
        // More data => narrower.
        let a_big = lcg_data(2000, 10);
        let b_big: Vec<f64> = lcg_data(2000, 11).iter().map(|x| x * 2.0).collect();
        let (lb, hb) = bootstrap_ratio_ci(&a_big, &b_big, 0.95, 500, 9);
        assert!(hb - lb < (hi - lo) / 3.0);
    }

    #[test]
    fn bootstrap_diff_ci_behaviour() {
        let a = lcg_data(40, 10);
        let b: Vec<f64> = lcg_data(40, 11).iter().map(|x| x - 20.0).collect();
        let d = median(&b) - median(&a);
        let (lo, hi) = bootstrap_diff_ci(&a, &b, 0.95, 2000, 9);
        assert!(lo <= d && d <= hi, "{lo} <= {d} <= {hi}");
        assert!(lo > -25.0 && hi < -15.0 && hi - lo < 6.0, "({lo}, {hi})");
        assert_eq!(bootstrap_diff_ci(&a, &b, 0.95, 2000, 9), (lo, hi));
        // Zero baseline: a ratio is undefined, the difference is not.
        assert_eq!(
            bootstrap_diff_ci(&[0.0; 3], &[5.0; 3], 0.95, 500, 1),
            (5.0, 5.0)
        );
        assert_eq!(
            bootstrap_diff_ci(&[0.0, 0.0], &[5.0], 0.95, 0, 1),
            (5.0, 5.0)
        );
        let (l, h) = bootstrap_diff_ci(&[], &[1.0], 0.95, 100, 1);
        assert!(l.is_nan() && h.is_nan());
    }

    // ---- across_runs -----------------------------------------------------------------------

    fn run_with(p50: f64, p99: f64, count: u64) -> Summary {
        Summary {
            count,
            mean: p50,
            sd: 0.0,
            min: p50,
            p50,
            p90: p50,
            p99,
            p999: p99,
            max: p99,
            cv: 0.0,
        }
    }

    #[test]
    fn across_runs_median_of_medians() {
        let runs = [
            run_with(10.0, 50.0, 100),
            run_with(30.0, 70.0, 100),
            run_with(12.0, 40.0, 100),
            run_with(11.0, 90.0, 100),
            run_with(100.0, 60.0, 100),
        ];
        let r = across_runs(&runs).unwrap();
        assert_eq!(r.runs, 5);
        assert_eq!(r.center, 12.0);
        assert_eq!(r.p99, Some(60.0));
        assert_eq!(r.min, 10.0);
        assert_eq!(r.max, 100.0);
        let meds = [10.0, 30.0, 12.0, 11.0, 100.0];
        assert_close!(r.cv, std_dev(&meds) / mean(&meds));
        assert!(r.ci95[0] <= r.center && r.center <= r.ci95[1]);
        assert_eq!(r.ci95, {
            let (lo, hi) = bootstrap_median_ci(&meds, 0.95, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED);
            [lo, hi]
        });
        // Deterministic.
        assert_eq!(across_runs(&runs), Some(r));
    }

    #[test]
    fn across_runs_edge_cases() {
        assert_eq!(across_runs(&[]), None);

        let single = across_runs(&[run_with(7.0, 9.0, 10)]).unwrap();
        assert_eq!(single.runs, 1);
        assert_eq!(single.center, 7.0);
        assert_eq!(single.ci95, [7.0, 7.0]);
        assert_eq!(single.p99, Some(9.0));
        assert_eq!(single.cv, 0.0);

        // Any single-sample run => no p99.
        let mixed = across_runs(&[run_with(1.0, 1.0, 1), run_with(2.0, 3.0, 10)]).unwrap();
        assert_eq!(mixed.p99, None);
        assert_eq!(mixed.center, 1.5);

        // Works on real summaries too.
        let s1 = summarize(&[1.0, 2.0, 3.0]).unwrap();
        let s2 = summarize(&[2.0, 3.0, 4.0]).unwrap();
        let s3 = summarize(&[3.0, 4.0, 5.0, 6.0]).unwrap();
        let r = across_runs(&[s1, s2, s3]).unwrap();
        assert_eq!(r.center, 3.0);
        assert_eq!((r.min, r.max), (2.0, 4.5));
    }

    // ---- Mann-Whitney U --------------------------------------------------------------------
    // Reference values: scipy 1.17.1, `scipy.stats.mannwhitneyu(a, b)` (defaults:
    // use_continuity=True, alternative='two-sided', method='auto'); "asymptotic" cases are those
    // where scipy's auto picks the normal approximation (ties, or both samples > 8).

    #[test]
    fn mwu_exact_small_samples() {
        // Completely separated 5 vs 5: p = 2 / C(10, 5).
        let a = [1.1, 2.2, 3.3, 4.4, 5.5];
        let b = [6.6, 7.7, 8.8, 9.9, 11.0];
        both_ways(mann_whitney_u, &a, &b, (0.0, 25.0), 2.0 / 252.0);
        // scipy's figure.
        assert_close!(2.0 / 252.0, 0.007936507936507936);

        let (u, p) = mann_whitney_u(&[19.0, 22.0, 16.0, 29.0, 24.0], &[20.0, 11.0, 17.0, 12.0]);
        assert_eq!(u, 17.0);
        assert_close!(p, 0.1111111111111111);

        // Unbalanced (3 vs 12): scipy still uses the exact distribution.
        let a = [3.1, 7.4, 1.2];
        let b = [
            2.0, 5.5, 6.1, 8.8, 9.3, 10.2, 4.4, 0.5, 11.9, 12.5, 13.0, 3.3,
        ];
        both_ways(mann_whitney_u, &a, &b, (9.0, 27.0), 0.232967032967033);

        // One value each: p = 1.
        assert_eq!(mann_whitney_u(&[1.0], &[2.0]), (0.0, 1.0));
    }

    /// `f(a, b)` gives U = `u.0` and p-value `p`, and `f(b, a)` gives U = `u.1` and the same p.
    fn both_ways(f: fn(&[f64], &[f64]) -> (f64, f64), a: &[f64], b: &[f64], u: (f64, f64), p: f64) {
        for ((x, y), want) in [((a, b), u.0), ((b, a), u.1)] {
            let (got, q) = f(x, y);
            assert_eq!(got, want);
            assert_close!(q, p);
        }
    }

    /// The normal approximation on its own (what [`mann_whitney`] uses above 40 values).
    fn mwu_asymptotic(a: &[f64], b: &[f64]) -> (f64, f64) {
        let r = pooled_ranks(a, b);
        let n1 = a.len() as f64;
        let u1 = r.rank_sum2_a as f64 / 2.0 - n1 * (n1 + 1.0) / 2.0;
        (u1, mwu_asymptotic_p(u1, a.len(), b.len(), r.tie_term))
    }

    // Reference values of the exact test: the exact permutation distribution of the rank sum
    // (midranks) enumerated by brute force over all C(n, n_a) splits, in Python with exact
    // fractions (itertools.combinations + fractions.Fraction: tests/fixtures/mwu_exact.py),
    // p = min(1, 2 min(P(R <= r), P(R >= r))). Without ties these equal
    // scipy.stats.mannwhitneyu(a, b, method="exact").

    #[test]
    fn mwu_asymptotic_no_ties() {
        let a = [0.8, 1.9, 2.7, 3.6, 4.4, 5.3, 6.1, 7.9, 8.2, 9.5];
        let b = [
            2.2, 3.1, 4.9, 5.8, 6.6, 7.3, 8.8, 9.9, 10.4, 11.7, 12.1, 13.6,
        ];
        // scipy.stats.mannwhitneyu(a, b) (auto => asymptotic for 10 vs 12).
        both_ways(mwu_asymptotic, &a, &b, (31.0, 89.0), 0.06021250140377914);
        // 22 values: the public test is exact. Brute force: p = 19120 / 323323.
        let r = mann_whitney(&a, &b);
        assert!(r.exact);
        assert_eq!(r.u, 31.0);
        assert_close!(r.p, 19120.0 / 323323.0);
        assert_close!(mann_whitney(&b, &a).p, 19120.0 / 323323.0);
    }

    #[test]
    fn mwu_asymptotic_with_ties() {
        // scipy.stats.mannwhitneyu (ties => tie-corrected normal approximation in scipy).
        let (a, b) = ([1.0, 2.0, 2.0, 3.0, 4.0], [2.0, 3.0, 3.0, 5.0, 6.0, 6.0]);
        let (u, p) = mwu_asymptotic(&a, &b);
        assert_eq!(u, 6.0);
        assert_close!(p, 0.1130499788563229);
        // Exact (brute force): 4 / 33.
        let r = mann_whitney(&a, &b);
        assert!(r.exact);
        assert_eq!(r.u, 6.0);
        assert_close!(r.p, 4.0 / 33.0);

        let a = [1.0, 2.0, 2.0, 3.0, 4.0, 5.0, 5.0, 6.0, 6.0, 7.0];
        let b = [3.0, 4.0, 4.0, 5.0, 7.0, 8.0, 9.0, 9.0, 10.0, 10.0, 11.0];
        both_ways(mwu_asymptotic, &a, &b, (22.0, 88.0), 0.02150180624552059);
        // Exact (brute force): 3221 / 176358.
        both_ways(mann_whitney_u, &a, &b, (22.0, 88.0), 3221.0 / 176358.0);
    }

    #[test]
    fn mwu_exact_with_ties_small_samples() {
        // 3 vs 3, all tied within each group (e.g. 0 vs 5 dropped frames): the normal
        // approximation says p = 0.0466 (< 0.05) although only 1 of the C(6, 3) = 20 splits is
        // as extreme on each side: exact p = 2 / 20 = 0.1 (brute force).
        let (a, b) = ([0.0, 0.0, 0.0], [5.0, 5.0, 5.0]);
        let (_, approx) = mwu_asymptotic(&a, &b);
        assert!((approx - 0.0466).abs() < 1e-3 && approx < 0.05, "{approx}");
        let r = mann_whitney(&a, &b);
        assert!(r.exact);
        assert_eq!(r.u, 0.0);
        assert_close!(r.p, 0.1);
        // 3 vs 3 fully separated, no ties: scipy method="exact" gives 0.1 too.
        assert_eq!(
            mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]),
            (0.0, 0.1)
        );
        // Partly tied groups (brute force).
        assert_close!(mann_whitney_u(&[0.0, 0.0, 1.0], &[5.0, 5.0, 6.0]).1, 0.1);
        let (u, p) = mann_whitney_u(&[1.0, 2.0, 2.0], &[2.0, 3.0, 3.0]);
        assert_eq!(u, 1.0);
        assert_close!(p, 0.3);
        let (u, p) = mann_whitney_u(&[1.0, 1.0, 2.0, 2.0], &[2.0, 3.0, 3.0, 3.0]);
        assert_eq!(u, 1.0);
        assert_close!(p, 3.0 / 35.0);
        // No 3 vs 3 split can reach p < 0.05, tied or not.
        for a in [[0.0, 0.0, 0.0], [1.0, 1.0, 2.0], [1.0, 2.0, 3.0]] {
            for b in [[5.0, 5.0, 5.0], [5.0, 6.0, 6.0], [-1.0, -1.0, -1.0]] {
                assert!(mann_whitney_u(&a, &b).1 >= 0.1, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn mwu_exact_tied_path_agrees_with_the_no_ties_distribution() {
        // Without ties the rank-sum DP and the Gaussian-binomial counts are the same distribution.
        let a = [3.1, 7.4, 1.2];
        let b = [
            2.0, 5.5, 6.1, 8.8, 9.3, 10.2, 4.4, 0.5, 11.9, 12.5, 13.0, 3.3,
        ];
        let r = pooled_ranks(&a, &b);
        assert!(!r.has_ties);
        assert_close!(mwu_exact_tied_p(&r, a.len()), 0.232967032967033);
        let a = [1.1, 2.2, 3.3, 4.4, 5.5];
        let b = [6.6, 7.7, 8.8, 9.9, 11.0];
        assert_close!(mwu_exact_tied_p(&pooled_ranks(&a, &b), 5), 2.0 / 252.0);
        assert_close!(mwu_exact_tied_p(&pooled_ranks(&b, &a), 5), 2.0 / 252.0);
    }

    #[test]
    fn mwu_switches_to_the_normal_approximation_above_40_values() {
        let a: Vec<f64> = (0..21).map(|i| (i % 7) as f64).collect();
        let b: Vec<f64> = (0..20).map(|i| (i % 5) as f64 + 1.5).collect();
        let r = mann_whitney(&a, &b);
        assert!(!r.exact);
        assert_eq!((r.u, r.p), mwu_asymptotic(&a, &b));
        // At 40 values it is still exact, and close to the approximation.
        let r = mann_whitney(&a[..20], &b);
        assert!(r.exact);
        let (_, approx) = mwu_asymptotic(&a[..20], &b);
        assert!((r.p - approx).abs() < 0.01, "{} vs {approx}", r.p);
    }

    #[test]
    fn mwu_degenerate_inputs() {
        // All values identical: sigma = 0 => p = 1 (scipy also returns 1.0).
        assert_eq!(mann_whitney_u(&[3.0, 3.0, 3.0], &[3.0, 3.0]), (3.0, 1.0));
        assert_eq!(mann_whitney_u(&[], &[1.0]), (0.0, 1.0));
        assert_eq!(mann_whitney_u(&[1.0], &[]), (0.0, 1.0));
        // Identical samples: U = n_a n_b / 2, p = 1.
        let x = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(mann_whitney_u(&x, &x), (8.0, 1.0));
    }

    #[test]
    fn mwu_exact_distribution_counts() {
        // P(U >= 0) = 1; P(U >= mn) = 1 / C(m+n, m).
        assert_eq!(mwu_exact_sf(0, 3, 4), 1.0);
        assert_close!(mwu_exact_sf(12, 3, 4), 1.0 / 35.0);
        // m = 2, n = 2: U in {0,1,2,2,3,4} over the 6 arrangements.
        assert_close!(mwu_exact_sf(2, 2, 2), 4.0 / 6.0);
        assert_close!(mwu_exact_sf(3, 2, 2), 2.0 / 6.0);
        assert_eq!(mwu_exact_sf(5, 2, 2), 0.0);
        // Symmetry: P(U >= k) = P(U <= mn - k) = 1 - P(U >= mn - k + 1).
        for k in 0..=64 {
            let s = mwu_exact_sf(k, 8, 8) + mwu_exact_sf(64 - k + 1, 8, 8);
            assert_close!(s, 1.0);
        }
        // Large second sample still fits.
        let p = mwu_exact_sf(4000, 8, 1000);
        assert!(p > 0.0 && p < 1.0);
    }

    #[test]
    fn erfc_matches_scipy() {
        // scipy.special.erfc
        for (x, expected) in [
            (0.0, 1.0),
            (0.1, 0.8875370839817152),
            (0.5, 0.4795001221869535),
            (1.0, 0.15729920705028516),
            (1.5, 0.03389485352468927),
            (2.0, 0.004677734981047266),
            (2.4, 0.0006885138966450789),
            (2.6, 0.000236034416529349),
            (3.0, 2.2090496998585445e-05),
            (4.0, 1.541725790028002e-08),
            (6.0, 2.1519736712498913e-17),
            (10.0, 2.0884875837625446e-45),
            (20.0, 5.395865611607901e-176),
            (-0.7, 1.6778011938374182),
            (-3.0, 1.9999779095030015),
        ] {
            let got = erfc(x);
            assert!(
                (got - expected).abs() <= 2e-14 * expected.abs(),
                "erfc({x}) = {got:e}, expected {expected:e}"
            );
        }
        assert_eq!(erfc(40.0), 0.0);
        assert_eq!(erfc(-40.0), 2.0);
        assert!(erfc(f64::NAN).is_nan());
    }

    // ---- Benjamini–Hochberg ----------------------------------------------------------------

    #[test]
    fn bh_small_example() {
        let adj = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005]);
        for (got, expected) in adj.iter().zip([0.02, 0.04, 0.04, 0.02]) {
            assert_close!(*got, expected);
        }
    }

    #[test]
    fn bh_matches_scipy_false_discovery_control() {
        let p = [
            0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216, 0.222, 0.251,
            0.269, 0.275, 0.34, 0.341, 0.384, 0.569, 0.594, 0.696, 0.762, 0.94, 0.942, 0.975,
            0.986,
        ];
        let expected = [
            0.025,
            0.1,
            0.21000000000000002,
            0.21000000000000002,
            0.21000000000000002,
            0.25,
            0.2642857142857143,
            0.49107142857142866,
            0.49107142857142866,
            0.49107142857142866,
            0.49107142857142866,
            0.49107142857142866,
            0.49107142857142866,
            0.49107142857142866,
            0.5328125,
            0.5328125,
            0.5647058823529413,
            0.781578947368421,
            0.781578947368421,
            0.8699999999999999,
            0.9071428571428571,
            0.986,
            0.986,
            0.986,
            0.986,
        ];
        // Shuffle the input order deterministically: output must follow input order.
        let perm: Vec<usize> = (0..p.len()).map(|i| (i * 7 + 3) % p.len()).collect();
        let shuffled: Vec<f64> = perm.iter().map(|&i| p[i]).collect();
        let adj = benjamini_hochberg(&shuffled);
        for (k, &i) in perm.iter().enumerate() {
            assert_close!(adj[k], expected[i]);
        }
    }

    #[test]
    fn bh_edge_cases() {
        assert!(benjamini_hochberg(&[]).is_empty());
        assert_eq!(benjamini_hochberg(&[0.3]), vec![0.3]);
        // Clipped to 1, never below the raw p-value.
        let adj = benjamini_hochberg(&[0.9, 0.8, 0.95]);
        assert!(adj.iter().all(|&x| x <= 1.0));
        assert!(adj.iter().zip([0.9, 0.8, 0.95]).all(|(a, p)| *a >= p));
        // Monotone in the raw p-values.
        let p = [0.02, 0.5, 0.001, 0.03, 0.2];
        let adj = benjamini_hochberg(&p);
        for i in 0..p.len() {
            for j in 0..p.len() {
                if p[i] <= p[j] {
                    assert!(adj[i] <= adj[j]);
                }
            }
        }
        // NaN entries stay NaN and are not counted (R's p.adjust semantics).
        let adj = benjamini_hochberg(&[0.01, f64::NAN, 0.04]);
        assert!(adj[1].is_nan());
        assert_close!(adj[0], 0.02);
        assert_close!(adj[2], 0.04);
        // Ties share the adjusted value.
        assert_eq!(benjamini_hochberg(&[0.02, 0.02]), vec![0.02, 0.02]);
    }

    // ---- geometric mean --------------------------------------------------------------------

    #[test]
    fn geometric_mean_known_values() {
        assert_close!(
            geometric_mean(&[1.0, 2.0, 4.0, 8.0]).unwrap(),
            8.0_f64.sqrt()
        );
        assert_close!(geometric_mean(&[2.0, 8.0]).unwrap(), 4.0);
        assert_close!(geometric_mean(&[5.0]).unwrap(), 5.0);
        // scipy.stats.gmean([1.5, 2.5, 10.0, 0.3])
        assert_close!(
            geometric_mean(&[1.5, 2.5, 10.0, 0.3]).unwrap(),
            1.8314207507423534
        );
    }

    #[test]
    fn geometric_mean_rejects_bad_input() {
        assert_eq!(geometric_mean(&[]), None);
        assert_eq!(geometric_mean(&[1.0, 0.0]), None);
        assert_eq!(geometric_mean(&[1.0, -2.0]), None);
        assert_eq!(geometric_mean(&[1.0, f64::NAN]), None);
        assert_eq!(geometric_mean(&[1.0, f64::INFINITY]), None);
    }
}
