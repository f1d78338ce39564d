//! The command line's duration, size, CPU-list and percentage parsers.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    if let Ok(d) = osgauge::units::parse_duration(s) {
        assert!(d.as_secs_f64() <= 86_400.0 + 1e-6);
    }
    if let Ok(b) = osgauge::units::parse_size(s) {
        assert!((1..=1u64 << 50).contains(&b));
    }
    if let Ok(v) = osgauge::cli::cpu_list(s) {
        assert!(!v.is_empty() && v.windows(2).all(|w| w[0] < w[1]));
    }
    if let Ok(v) = osgauge::cli::parse_percent(s) {
        assert!((0.0..10.0).contains(&v));
    }
});
