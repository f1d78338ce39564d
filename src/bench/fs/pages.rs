//! Read passes shared by the file-system benchmarks that read pages back (read latency,
//! contention): the order of the pages and one timed pass over them.

use std::time::Instant;

use super::Pattern;
use crate::platform::fs::{self as pfs, AlignedBuf, Uncached};

/// One pass over `order` (page indices) reading `len` bytes at each `page`-sized page; returns
/// ns per read.
pub fn timed_pass(
    u: &Uncached,
    buf: &mut AlignedBuf,
    order: &[u64],
    page: u64,
    len: usize,
) -> std::io::Result<Vec<f64>> {
    let mut lat = Vec::with_capacity(order.len());
    let b = &mut buf.bytes_mut()[..len];
    for &i in order {
        let t0 = Instant::now();
        let n = pfs::read_at(&u.file, b, i * page)?;
        let t = t0.elapsed().as_nanos() as f64;
        if n != len {
            return Err(std::io::Error::other(format!(
                "short read: {n} of {len} bytes at page {i}"
            )));
        }
        lat.push(t);
    }
    Ok(lat)
}

/// Page order for a pass: backwards from the last page, or random, at most `cap` pages.
pub fn page_order(p: Pattern, pages: u64, cap: usize, seed: u64) -> Vec<u64> {
    match p {
        Pattern::Seq => (0..pages).rev().take(cap).collect(),
        Pattern::Random => {
            let mut v: Vec<u64> = (0..pages).collect();
            super::Rng::new(seed).shuffle(&mut v);
            v.truncate(cap);
            v
        }
    }
}
