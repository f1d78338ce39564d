//! UDP receive statistics (pure): from the datagrams a receiver timestamped, the deviation of
//! each inter-arrival time from the sending period, RFC 3550's smoothed jitter, loss by sequence
//! number, stalls and whether they recur periodically, and a coarse series for the report. The
//! receiving peer computes them (serve/data.rs) and sends the summary in the protocol
//! (serve/proto.rs); the UDP benchmarks (bench/net) read it there.

use serde::{Deserialize, Serialize};

/// One datagram as received: its sequence number, the sender's send time and the arrival time
/// (each in ns on its own side's monotonic clock; only differences are used).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    pub seq: u64,
    pub sent_ns: u64,
    pub recv_ns: u64,
}

/// A stall: an inter-arrival gap far over the period.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    /// Arrival time of the datagram ending the gap, seconds since the first arrival.
    pub at_s: f64,
    /// How much longer than the period the gap was, µs.
    pub excess_us: f64,
    /// True when the sender's own send times show the same gap (the sender stalled, not the path).
    pub sender: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpSummary {
    pub sent: u64,
    pub received: u64,
    /// Distinct sequence numbers received.
    pub unique: u64,
    pub duplicates: u64,
    /// Datagrams that arrived after a higher sequence number.
    pub reordered: u64,
    pub lost: u64,
    pub loss_pct: f64,
    /// Payload bytes received.
    pub bytes: u64,
    /// First to last arrival, seconds.
    pub active_s: f64,
    pub period_us: f64,
    /// |inter-arrival − period × sequence step| over consecutive arrivals, µs.
    pub dev_p50_us: f64,
    pub dev_p99_us: f64,
    pub dev_p999_us: f64,
    pub dev_max_us: f64,
    /// RFC 3550's J += (|D| − J)/16 at the end of the stream, µs.
    pub rfc3550_jitter_us: f64,
    /// Stall threshold used: an inter-arrival this much over the period, µs.
    pub stall_threshold_us: f64,
    pub stalls: Vec<Stall>,
    /// Stalls not caused by the sender (the path or the receiver).
    pub path_stalls: u64,
    /// Median interval between path stalls when they recur regularly (CV < 10 %, ≥ 3 stalls).
    pub stall_period_s: Option<f64>,
    /// For the report: (seconds since first arrival, largest deviation in that bin µs).
    pub series: Vec<(f64, f64)>,
}

/// Most stalls listed (the count is complete).
pub const MAX_STALLS: usize = 100;
/// Bins of the report series.
pub const SERIES_BINS: usize = 400;

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Summarise a stream: `sent` datagrams of `size` bytes were sent every `period_ns`.
pub fn summarize(arrivals: &[Arrival], sent: u64, size: u64, period_ns: f64) -> UdpSummary {
    let mut s = UdpSummary {
        sent,
        received: arrivals.len() as u64,
        period_us: period_ns / 1e3,
        bytes: arrivals.len() as u64 * size,
        ..Default::default()
    };
    let mut seen = std::collections::HashSet::new();
    let mut highest: Option<u64> = None;
    for a in arrivals {
        if !seen.insert(a.seq) {
            s.duplicates += 1;
        }
        match highest {
            Some(h) if a.seq < h => s.reordered += 1,
            _ => highest = Some(a.seq),
        }
    }
    s.unique = seen.len() as u64;
    s.lost = sent.saturating_sub(s.unique);
    s.loss_pct = if sent > 0 {
        100.0 * s.lost as f64 / sent as f64
    } else {
        0.0
    };
    let (Some(first), Some(last)) = (arrivals.first(), arrivals.last()) else {
        return s;
    };
    s.active_s = last.recv_ns.saturating_sub(first.recv_ns) as f64 / 1e9;
    s.stall_threshold_us = (3.0 * period_ns / 1e3).max(1000.0);
    let mut devs = Vec::with_capacity(arrivals.len());
    let mut jitter = 0.0f64;
    let bin_s = (s.active_s / SERIES_BINS as f64).max(1e-3);
    let mut series: Vec<(f64, f64)> = Vec::new();
    for w in arrivals.windows(2) {
        let (p, c) = (w[0], w[1]);
        let gap = c.recv_ns as f64 - p.recv_ns as f64;
        let step = c.seq.saturating_sub(p.seq).max(1) as f64;
        let expected = step * period_ns;
        let dev_us = (gap - expected).abs() / 1e3;
        devs.push(dev_us);
        let send_gap = c.sent_ns as f64 - p.sent_ns as f64;
        let d = gap - send_gap;
        jitter += (d.abs() / 1e3 - jitter) / 16.0;
        let excess_us = (gap - expected) / 1e3;
        let at_s = c.recv_ns.saturating_sub(first.recv_ns) as f64 / 1e9;
        if excess_us > s.stall_threshold_us {
            let sender = (send_gap - expected) / 1e3 > s.stall_threshold_us / 2.0;
            if !sender {
                s.path_stalls += 1;
            }
            if s.stalls.len() < MAX_STALLS {
                s.stalls.push(Stall {
                    at_s,
                    excess_us,
                    sender,
                });
            }
        }
        let bin = ((at_s / bin_s) as usize).min(SERIES_BINS);
        let t = bin as f64 * bin_s;
        match series.last_mut() {
            Some(last) if last.0 == t => last.1 = last.1.max(dev_us),
            _ => series.push((t, dev_us)),
        }
    }
    s.rfc3550_jitter_us = jitter;
    s.series = series;
    devs.sort_by(|a, b| a.total_cmp(b));
    s.dev_p50_us = pct(&devs, 50.0);
    s.dev_p99_us = pct(&devs, 99.0);
    s.dev_p999_us = pct(&devs, 99.9);
    s.dev_max_us = devs.last().copied().unwrap_or(0.0);
    s.stall_period_s = stall_period(&s.stalls);
    s
}

/// The median interval between path stalls if they recur regularly (≥ 3 stalls, CV < 10 %).
pub fn stall_period(stalls: &[Stall]) -> Option<f64> {
    let t: Vec<f64> = stalls
        .iter()
        .filter(|s| !s.sender)
        .map(|s| s.at_s)
        .collect();
    if t.len() < 3 {
        return None;
    }
    let mut iv: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = iv.iter().sum::<f64>() / iv.len() as f64;
    if mean <= 0.0 {
        return None;
    }
    let var = iv.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / iv.len() as f64;
    if var.sqrt() / mean >= 0.10 {
        return None;
    }
    iv.sort_by(|a, b| a.total_cmp(b));
    Some(iv[iv.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(n: u64, period: u64, skip: &[u64], stall_every: Option<(u64, u64)>) -> Vec<Arrival> {
        let mut v = Vec::new();
        let mut delay = 0;
        for i in 0..n {
            if let Some((every, by)) = stall_every
                && i > 0
                && i % every == 0
            {
                delay += by;
            }
            if skip.contains(&i) {
                continue;
            }
            v.push(Arrival {
                seq: i,
                sent_ns: i * period,
                recv_ns: 1_000 + i * period + delay,
            });
        }
        v
    }

    #[test]
    fn perfect_stream_has_no_jitter_loss_or_stalls() {
        let s = summarize(&stream(1000, 100_000, &[], None), 1000, 8192, 100_000.0);
        assert_eq!(s.lost, 0);
        assert_eq!(s.dev_max_us, 0.0);
        assert_eq!(s.rfc3550_jitter_us, 0.0);
        assert!(s.stalls.is_empty());
        assert_eq!(s.bytes, 1000 * 8192);
    }

    #[test]
    fn loss_is_counted_by_sequence_and_gaps_are_not_jitter() {
        let s = summarize(
            &stream(100, 100_000, &[10, 11, 50], None),
            100,
            100,
            100_000.0,
        );
        assert_eq!(s.lost, 3);
        assert!((s.loss_pct - 3.0).abs() < 1e-9);
        // The gap over lost datagrams is expected from the sequence step: no deviation.
        assert_eq!(s.dev_max_us, 0.0);
    }

    #[test]
    fn periodic_stalls_are_found() {
        // 100 µs period, a 4 ms delay added every 1000 datagrams (every 0.1 s).
        let s = summarize(
            &stream(10_000, 100_000, &[], Some((1000, 4_000_000))),
            10_000,
            100,
            100_000.0,
        );
        assert_eq!(s.path_stalls, 9);
        assert!((s.stalls[0].excess_us - 4000.0).abs() < 1e-6);
        let p = s.stall_period_s.unwrap();
        assert!((p - 0.1).abs() < 0.01, "{p}");
        assert!(s.dev_max_us >= 4000.0 && s.dev_p50_us == 0.0);
        assert!(s.rfc3550_jitter_us > 0.0);
    }

    #[test]
    fn sender_stalls_are_told_apart() {
        let mut v = stream(100, 100_000, &[], None);
        for a in v.iter_mut().skip(50) {
            a.sent_ns += 5_000_000;
            a.recv_ns += 5_000_000;
        }
        let s = summarize(&v, 100, 100, 100_000.0);
        assert_eq!(s.stalls.len(), 1);
        assert!(s.stalls[0].sender);
        assert_eq!(s.path_stalls, 0);
        assert_eq!(s.rfc3550_jitter_us, 0.0);
    }

    #[test]
    fn duplicates_and_reordering() {
        let mut v = stream(10, 100, &[], None);
        v.swap(3, 4);
        v.push(v[0]);
        let s = summarize(&v, 10, 1, 100.0);
        assert_eq!(s.duplicates, 1);
        assert_eq!(s.lost, 0);
        assert!(s.reordered >= 1);
    }
}
