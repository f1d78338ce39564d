//! The last-level cache (LLC) size, for working sets that must not fit in it (`model validate`).
//! Read from the machine facts each OS back end already collects (Linux sysfs
//! `cpu0/cache/index*/{level,size}`, macOS sysctl `hw.l3cachesize` / `hw.l2cachesize`, Windows
//! GetLogicalProcessorInformationEx): the highest-level data or unified cache CPU 0 sees.

use crate::system::{Cache, CacheKind};

/// The size used when the OS does not say (stated, never presented as measured).
pub const STATED_LLC_BYTES: u64 = 32 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq)]
pub struct Llc {
    pub bytes: u64,
    /// The cache level, None when the size is the stated fallback.
    pub level: Option<u8>,
    /// Where the size comes from.
    pub source: String,
}

/// The highest-level data or unified cache with a known size: (level, bytes).
pub fn last_level(caches: &[Cache]) -> Option<(u8, u64)> {
    caches
        .iter()
        .filter(|c| c.kind != CacheKind::Instruction)
        .filter_map(|c| c.size_bytes.filter(|&b| b > 0).map(|b| (c.level, b)))
        .max_by_key(|&(level, b)| (level, b))
}

/// This machine's LLC, or the stated size (and why) when the OS does not report one.
pub fn llc() -> Llc {
    llc_from(&crate::platform::sysinfo::machine().caches)
}

pub fn llc_from(caches: &[Cache]) -> Llc {
    match last_level(caches) {
        Some((level, bytes)) => Llc {
            bytes,
            level: Some(level),
            source: format!("L{level}, as the OS reports it for CPU 0 ({})", os_source()),
        },
        None => Llc {
            bytes: STATED_LLC_BYTES,
            level: None,
            source: format!(
                "UNKNOWN: the OS reported no data/unified cache size ({}); a stated 32 MiB is used",
                os_source()
            ),
        },
    }
}

fn os_source() -> &'static str {
    if cfg!(target_os = "linux") {
        "sysfs cpu0/cache/index*/level + size"
    } else if cfg!(target_os = "macos") {
        "sysctl hw.l3cachesize / hw.l2cachesize"
    } else {
        "GetLogicalProcessorInformationEx"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(level: u8, kind: CacheKind, kib: Option<u64>) -> Cache {
        Cache {
            level,
            kind,
            size_bytes: kib.map(|k| k * 1024),
            ..Default::default()
        }
    }

    #[test]
    fn the_last_level_is_the_highest_data_or_unified_cache() {
        let caches = [
            c(1, CacheKind::Data, Some(48)),
            c(1, CacheKind::Instruction, Some(32)),
            c(2, CacheKind::Unified, Some(2048)),
            c(3, CacheKind::Unified, Some(32768)),
        ];
        assert_eq!(last_level(&caches), Some((3, 32 * 1024 * 1024)));
        let l = llc_from(&caches);
        assert_eq!((l.bytes, l.level), (32 * 1024 * 1024, Some(3)));
        // An instruction cache never counts, nor a size the OS did not give.
        let caches = [
            c(2, CacheKind::Data, Some(1024)),
            c(3, CacheKind::Unified, None),
            c(4, CacheKind::Instruction, Some(1 << 20)),
        ];
        assert_eq!(last_level(&caches), Some((2, 1024 * 1024)));
    }

    #[test]
    fn an_unknown_cache_uses_the_stated_size_and_says_so() {
        let l = llc_from(&[c(1, CacheKind::Instruction, Some(32))]);
        assert_eq!(l.bytes, STATED_LLC_BYTES);
        assert_eq!(l.level, None);
        assert!(l.source.starts_with("UNKNOWN"), "{}", l.source);
    }

    #[test]
    fn this_machine_reports_a_plausible_llc() {
        let l = llc();
        assert!(l.bytes >= 64 * 1024, "{l:?}");
    }
}
