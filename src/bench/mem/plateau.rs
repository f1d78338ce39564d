//! Finding the cache levels in a latency curve (working-set size → ns per load), without being told
//! the cache sizes.
//!
//! Method: walk the curve from the smallest size. A point joins the current plateau while it is at
//! most `step_tolerance` above the previous point AND at most `level_tolerance` above the
//! plateau's first point (so a slow creep cannot hide a level change). Otherwise the plateau ends
//! at the previous point, and the points that keep climbing by more than `step_tolerance` per step
//! form a transition; the next plateau starts where the climb slows down. Plateaus shorter than
//! `min_points` are dropped as noise. A plateau's latency is the median of its points; its end is
//! the size of its last point (the largest working set still served at that level).

use crate::stats;

/// One curve point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub size_bytes: u64,
    pub ns: f64,
}

/// A detected plateau: indices into the curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Plateau {
    pub first: usize,
    pub last: usize,
    /// Median ns per load over the plateau's points.
    pub ns: f64,
}

#[derive(Debug, Clone, Copy)]
pub struct Tolerances {
    pub step_tolerance: f64,
    pub level_tolerance: f64,
    pub min_points: usize,
    /// Neighbouring plateaus closer than this (relative) are one level.
    pub merge_tolerance: f64,
}

impl Tolerances {
    /// Tolerances for a curve whose sizes grow by `ratio` per point (a coarser grid lets
    /// latency climb more between points).
    pub fn for_grid(ratio: f64) -> Tolerances {
        let octaves = ratio.log2().max(0.25);
        Tolerances {
            step_tolerance: 0.30 * octaves.max(1.0),
            level_tolerance: 0.8,
            min_points: 3,
            merge_tolerance: 0.35,
        }
    }
}

/// Detect plateaus (in increasing size order). `curve` must be sorted by size.
pub fn detect(curve: &[Point], tol: Tolerances) -> Vec<Plateau> {
    let mut out = Vec::new();
    let n = curve.len();
    let mut start = 0;
    while start < n {
        // Grow a plateau from `start`.
        let mut end = start;
        while end + 1 < n {
            let prev = curve[end].ns;
            let next = curve[end + 1].ns;
            let first = curve[start].ns;
            if next <= prev * (1.0 + tol.step_tolerance)
                && next <= first * (1.0 + tol.level_tolerance)
            {
                end += 1;
            } else {
                break;
            }
        }
        if end + 1 - start >= tol.min_points {
            let vals: Vec<f64> = curve[start..=end].iter().map(|p| p.ns).collect();
            out.push(Plateau {
                first: start,
                last: end,
                ns: stats::median(&vals),
            });
        }
        // Skip the transition: keep going while the curve climbs steeply.
        let mut next = end + 1;
        while next + 1 < n && curve[next + 1].ns > curve[next].ns * (1.0 + tol.step_tolerance) {
            next += 1;
        }
        start = next;
    }
    merge_close(curve, out, tol.merge_tolerance)
}

/// Merge neighbouring plateaus (at most one point apart) whose latencies differ by at most
/// `merge` (a level split by a slow rise as the previous level's hits fade).
fn merge_close(curve: &[Point], plats: Vec<Plateau>, merge: f64) -> Vec<Plateau> {
    let mut out: Vec<Plateau> = Vec::new();
    for p in plats {
        if let Some(q) = out.last_mut()
            && p.first <= q.last + 2
            && p.ns <= q.ns * (1.0 + merge)
        {
            q.last = p.last;
            let vals: Vec<f64> = curve[q.first..=q.last].iter().map(|x| x.ns).collect();
            q.ns = stats::median(&vals);
            continue;
        }
        out.push(p);
    }
    out
}

/// What the detected plateaus mean: cache levels, and main memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Levels {
    /// Cache plateaus, L1 first.
    pub caches: Vec<Plateau>,
    /// The first plateau past the caches (main memory), if the curve flattens there.
    pub memory: Option<Plateau>,
    /// Further plateaus past the first memory plateau (e.g. TLB-reach steps), if any.
    pub beyond_memory: Vec<Plateau>,
}

/// A cache level is at most this fraction of memory latency (real L3s are ≤ ~0.4×).
pub const MEMORY_LIKE: f64 = 0.6;

/// Split plateaus into caches and main memory. With the largest reported cache size known
/// (`llc_bytes`), a plateau that starts above it, or is still flat at 2× it, cannot be a cache: it
/// is memory. Without it, the
/// plateau reaching the last point is memory when it is not the only plateau.
pub fn classify(curve: &[Point], plateaus: &[Plateau], llc_bytes: Option<u64>) -> Levels {
    let is_memory = |p: &Plateau| match llc_bytes {
        // Starts past the largest cache, or stays flat at twice its size: no cache holds that.
        Some(l) => curve[p.first].size_bytes > l || curve[p.last].size_bytes >= 2 * l,
        None => plateaus.len() > 1 && p.last + 1 == curve.len() && p.first > 0,
    };
    let mut caches = Vec::new();
    let mut mem = Vec::new();
    for p in plateaus {
        if is_memory(p) {
            mem.push(p.clone());
        } else {
            caches.push(p.clone());
        }
    }
    // A "cache" plateau that is more than MEMORY_LIKE × as slow as memory is memory seen
    // through a cache someone else is using (a shared, contended LLC): call it memory.
    // Memory's latency: its first plateau, or else the largest working set if it is past the
    // largest cache.
    let past_llc = curve
        .last()
        .filter(|p| llc_bytes.is_some_and(|l| p.size_bytes > l))
        .map(|p| p.ns);
    let m0 = mem.first().map(|p| p.ns).or(past_llc);
    if let Some(m0) = m0 {
        while caches
            .last()
            .is_some_and(|c: &Plateau| c.ns > MEMORY_LIKE * m0)
        {
            if let Some(c) = caches.pop() {
                mem.insert(0, c);
            }
        }
    }
    let mut mem = mem.into_iter();
    Levels {
        caches,
        memory: mem.next(),
        beyond_memory: mem.collect(),
    }
}

/// Index of the grid point nearest (in log size) to `bytes`.
pub fn nearest_index(curve: &[Point], bytes: u64) -> Option<usize> {
    let lb = (bytes as f64).ln();
    curve
        .iter()
        .enumerate()
        .min_by(|a, b| {
            let da = ((a.1.size_bytes as f64).ln() - lb).abs();
            let db = ((b.1.size_bytes as f64).ln() - lb).abs();
            da.total_cmp(&db)
        })
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic curve on a √2-ish grid (2^k and 1.5·2^k) from 1 KiB to 512 MiB with
    /// caches of `sizes` bytes and latencies `lat` (last = memory). Between levels the latency
    /// mixes by the fraction of the working set that fits (a random chase over an LRU cache).
    fn synth(sizes: &[u64], lat: &[f64], noise: f64) -> Vec<Point> {
        let mut pts = Vec::new();
        let mut s: u64 = 1024;
        let mut k = 0u64;
        while s <= 512 << 20 {
            for size in [s, s + s / 2] {
                if size > 512 << 20 {
                    break;
                }
                // Fraction served by each level: level i serves min(1, C_i/size) - previous.
                let mut ns = 0.0;
                let mut covered = 0.0;
                for (i, &c) in sizes.iter().enumerate() {
                    let f = (c as f64 / size as f64).min(1.0);
                    ns += (f - covered).max(0.0) * lat[i];
                    covered = covered.max(f);
                }
                ns += (1.0 - covered) * lat[sizes.len()];
                // Deterministic ±noise wiggle.
                k += 1;
                let wiggle = if k.is_multiple_of(2) {
                    1.0 + noise
                } else {
                    1.0 - noise
                };
                pts.push(Point {
                    size_bytes: size,
                    ns: ns * wiggle,
                });
            }
            s *= 2;
        }
        pts
    }

    fn tol() -> Tolerances {
        Tolerances::for_grid(1.5f64.sqrt() * (4.0f64 / 3.0).sqrt())
    }

    #[test]
    fn finds_three_caches_and_memory() {
        let sizes = [32 << 10, 1 << 20, 32 << 20];
        let lat = [1.0, 4.0, 15.0, 120.0];
        for noise in [0.0, 0.03] {
            let c = synth(&sizes, &lat, noise);
            let p = detect(&c, tol());
            let l = classify(&c, &p, Some(32 << 20));
            assert_eq!(l.caches.len(), 3, "noise {noise}: {p:?}");
            let m = l.memory.as_ref().expect("memory plateau");
            // Past the LLC the latency only approaches memory's as the hit share falls (1/size),
            // so the plateau's median sits somewhat below the true 120 ns.
            assert!(c[m.first].size_bytes > 32 << 20, "{m:?}");
            assert!(m.ns > 0.8 * 120.0 && m.ns <= 120.0 * 1.05, "{m:?}");
            for (i, cache) in l.caches.iter().enumerate() {
                assert!(
                    (cache.ns - lat[i]).abs() / lat[i] < 0.2,
                    "level {i}: {} vs {}",
                    cache.ns,
                    lat[i]
                );
                // The level ends within one grid step of the true size.
                let true_i = nearest_index(&c, sizes[i]).unwrap();
                assert!(
                    cache.last.abs_diff(true_i) <= 1,
                    "level {i} ends at {} (index {}), cache {} (index {true_i})",
                    c[cache.last].size_bytes,
                    cache.last,
                    sizes[i]
                );
            }
        }
    }

    #[test]
    fn two_levels_and_a_rising_tail_keep_memory_flat_part() {
        // No L3; memory latency keeps rising (TLB misses) so there is no memory plateau.
        let mut c = synth(&[64 << 10, 2 << 20], &[1.5, 6.0, 90.0], 0.0);
        let n = c.len();
        for (i, p) in c.iter_mut().enumerate().skip(n - 6) {
            p.ns *= 1.0 + 0.5 * (i + 6 - n) as f64;
        }
        let p = detect(&c, tol());
        let l = classify(&c, &p, Some(2 << 20));
        assert_eq!(l.caches.len(), 2, "{p:?}");
        // Memory flattens before the tail rises: it is a plateau that does not reach the end.
        let m = l.memory.expect("memory plateau");
        assert!(m.last < n - 5, "{m:?}");
        assert!((m.ns - 90.0).abs() / 90.0 < 0.15, "{m:?}");
    }

    #[test]
    fn a_contended_llc_is_not_reported_as_a_cache() {
        // "L3" plateau at 140 ns next to memory at 170 ns: memory seen through a busy LLC.
        let mut c = synth(
            &[32 << 10, 1 << 20, 8 << 20],
            &[1.0, 4.0, 140.0, 170.0],
            0.0,
        );
        c.truncate(c.len() - 2);
        let p = detect(&c, tol());
        let l = classify(&c, &p, Some(32 << 20));
        assert_eq!(l.caches.len(), 2, "{l:?}");
        assert!(l.memory.is_some());
    }

    #[test]
    fn a_curve_measured_on_the_project_vm() {
        // mem/latency_random on the 2-vCPU AMD EPYC VM (L1d 32 KiB, L2 1 MiB, L3 32 MiB
        // reported; the L3 was shared with busy neighbours), KiB → ns.
        let raw: [(u64, f64); 39] = [
            (1, 1.1),
            (1, 1.1),
            (2, 1.1),
            (3, 1.1),
            (4, 1.1),
            (6, 1.1),
            (8, 1.1),
            (12, 1.1),
            (16, 1.1),
            (24, 1.1),
            (32, 1.1),
            (48, 3.8),
            (64, 3.8),
            (96, 3.8),
            (128, 3.8),
            (192, 3.8),
            (256, 3.8),
            (384, 4.4),
            (512, 5.0),
            (768, 6.7),
            (1024, 8.8),
            (1536, 11.8),
            (2048, 13.3),
            (3072, 16.7),
            (4096, 15.6),
            (6144, 66.1),
            (8192, 129.1),
            (12288, 137.1),
            (16384, 143.7),
            (24576, 155.2),
            (32768, 156.6),
            (49152, 174.7),
            (65536, 186.9),
            (98304, 213.7),
            (131072, 220.4),
            (196608, 236.2),
            (262144, 250.3),
            (393216, 305.5),
            (524288, 309.1),
        ];
        let c: Vec<Point> = raw
            .iter()
            .enumerate()
            .map(|(i, &(k, ns))| Point {
                // The second "1 KiB" is 1.5 KiB (printed rounded down).
                size_bytes: if i == 1 { 1536 } else { k * 1024 },
                ns,
            })
            .collect();
        let p = detect(&c, tol());
        let l = classify(&c, &p, Some(32 << 20));
        assert_eq!(l.caches.len(), 3, "{l:?}");
        assert_eq!(c[l.caches[0].last].size_bytes, 32 << 10);
        assert!((l.caches[1].ns - 3.8).abs() < 0.5, "{l:?}");
        assert!(l.caches[2].ns > 10.0 && l.caches[2].ns < 20.0, "{l:?}");
        let m = l.memory.expect("memory");
        assert!(c[m.first].size_bytes > 4 << 20 && m.ns > 100.0, "{m:?}");
    }

    #[test]
    fn flat_curve_is_one_plateau_not_memory() {
        let c: Vec<Point> = (0..10)
            .map(|i| Point {
                size_bytes: 1024 << i,
                ns: 1.0,
            })
            .collect();
        let p = detect(&c, tol());
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].first, p[0].last), (0, 9));
        // Without a known cache size, a lone plateau is not called memory.
        let l = classify(&c, &p, None);
        assert_eq!(l.caches.len(), 1);
        assert!(l.memory.is_none());
        assert!(detect(&[], tol()).is_empty());
    }
}
