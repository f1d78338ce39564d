//! Units and better-direction of metrics, and human formatting (units chosen per value).

use serde::{Deserialize, Serialize};

/// The unit a metric's values are stored in. Values are always stored in the base unit named here;
/// display scales them (ns → µs → ms, B/s → MB/s …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    /// nanoseconds
    #[serde(rename = "ns")]
    Nanoseconds,
    /// percent (0–100)
    #[serde(rename = "%")]
    Percent,
    /// bytes per second
    #[serde(rename = "B/s")]
    BytesPerSecond,
    /// bytes
    #[serde(rename = "B")]
    Bytes,
    /// a plain count
    #[serde(rename = "count")]
    Count,
    /// operations per second
    #[serde(rename = "op/s")]
    OpsPerSecond,
    /// microseconds (figures named `…_us`, e.g. network round trips)
    #[serde(rename = "µs")]
    Microseconds,
    /// megabytes (10^6 bytes) per second
    #[serde(rename = "MB/s")]
    MegabytesPerSecond,
    /// gigabits (10^9 bits) per second
    #[serde(rename = "Gbit/s")]
    GigabitsPerSecond,
    /// gigabytes (10^9 bytes) per second
    #[serde(rename = "GB/s")]
    GigabytesPerSecond,
    /// microseconds of CPU time per KiB (1024 bytes) moved: netperf's service demand
    #[serde(rename = "µs/KiB")]
    MicrosecondsPerKib,
    /// CPU-seconds per GB (10^9 bytes) moved
    #[serde(rename = "CPU·s/GB")]
    CpuSecondsPerGb,
}

impl Unit {
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Nanoseconds => "ns",
            Unit::Percent => "%",
            Unit::BytesPerSecond => "B/s",
            Unit::Bytes => "B",
            Unit::Count => "count",
            Unit::OpsPerSecond => "op/s",
            Unit::Microseconds => "µs",
            Unit::MegabytesPerSecond => "MB/s",
            Unit::GigabitsPerSecond => "Gbit/s",
            Unit::GigabytesPerSecond => "GB/s",
            Unit::MicrosecondsPerKib => "µs/KiB",
            Unit::CpuSecondsPerGb => "CPU·s/GB",
        }
    }
}

/// The unit a metric name's suffix promises (`rtt_p50_us` → µs, `mb_per_s` → MB/s): suites that
/// name figures in their unit use it, and a test holds every metric to its suffix.
pub fn unit_of_suffix(name: &str) -> Option<Unit> {
    const SUFFIXES: &[(&str, Unit)] = &[
        ("_us_per_kib", Unit::MicrosecondsPerKib),
        ("_cpu_s_per_gb", Unit::CpuSecondsPerGb),
        ("cpu_s_per_gb", Unit::CpuSecondsPerGb),
        ("_us", Unit::Microseconds),
        ("_gbit_s", Unit::GigabitsPerSecond),
        ("_gbyte_s", Unit::GigabytesPerSecond),
        ("mb_per_s", Unit::MegabytesPerSecond),
        ("_pct", Unit::Percent),
    ];
    // A suffix followed by a variant tag (`mb_per_s_buffered`) still names the unit.
    let base = name.strip_suffix("_buffered").unwrap_or(name);
    SUFFIXES
        .iter()
        .find(|(suffix, _)| base.ends_with(suffix))
        .map(|&(_, u)| u)
}

/// Whether a larger or a smaller value of a metric is better, or neither.
///
/// Serialised as `"lower"`, `"higher"` or `"neutral"`; records written before `neutral` existed
/// still load (they only hold the first two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
    /// A verification figure (achieved vs a target, e.g. the CPU a task or a load really used):
    /// closer to its target is right, so a change is reported but never called better or worse,
    /// and it counts in no summary, geometric mean or regression check.
    Neutral,
}

impl Better {
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
            Better::Neutral => "neutral",
        }
    }

    /// The direction in words, as tables and exports show it.
    pub fn describe(self) -> &'static str {
        match self {
            Better::Lower => "lower is better",
            Better::Higher => "higher is better",
            Better::Neutral => "neutral: not judged",
        }
    }
}

/// Format a value with a unit prefix chosen for that value, with 3–4 significant digits.
pub fn format_value(v: f64, unit: Unit) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    match unit {
        Unit::Nanoseconds => format_time_ns(v),
        Unit::Percent => format!("{} %", sig(v)),
        Unit::BytesPerSecond => format_scaled(v, 1000.0, &["B/s", "kB/s", "MB/s", "GB/s", "TB/s"]),
        Unit::Bytes => format_scaled(v, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB"]),
        Unit::Count => sig(v),
        Unit::OpsPerSecond => format_scaled(v, 1000.0, &["op/s", "kop/s", "Mop/s", "Gop/s"]),
        Unit::Microseconds => format_time_ns(v * 1e3),
        Unit::MegabytesPerSecond => {
            format_scaled(v * 1e6, 1000.0, &["B/s", "kB/s", "MB/s", "GB/s", "TB/s"])
        }
        Unit::GigabytesPerSecond => {
            format_scaled(v * 1e9, 1000.0, &["B/s", "kB/s", "MB/s", "GB/s", "TB/s"])
        }
        Unit::GigabitsPerSecond => format_scaled(
            v * 1e9,
            1000.0,
            &["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"],
        ),
        u @ (Unit::MicrosecondsPerKib | Unit::CpuSecondsPerGb) => {
            format!("{} {}", sig(v), u.symbol())
        }
    }
}

/// Terminal columns `s` takes (Unicode East Asian Width: a CJK character or most emoji take two,
/// a combining mark none) — what every table in osgauge pads by, so a label such as `内核-6.18 🚀`
/// keeps the columns aligned. `chars().count()` would count such a label short.
pub fn width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// Time in nanoseconds shown as ns, µs, ms or s.
pub fn format_time_ns(ns: f64) -> String {
    let a = ns.abs();
    if a < 1e3 {
        format!("{} ns", sig(ns))
    } else if a < 1e6 {
        format!("{} µs", sig(ns / 1e3))
    } else if a < 1e9 {
        format!("{} ms", sig(ns / 1e6))
    } else {
        format!("{} s", sig(ns / 1e9))
    }
}

fn format_scaled(v: f64, base: f64, names: &[&str]) -> String {
    let mut x = v;
    let mut i = 0;
    while x.abs() >= base && i + 1 < names.len() {
        x /= base;
        i += 1;
    }
    format!("{} {}", sig(x), names[i])
}

/// Up to 4 significant digits without trailing noise: 1234, 123.4, 12.34, 1.234, 0.1234.
pub fn sig(v: f64) -> String {
    let a = v.abs();
    let decimals = if a == 0.0 || a >= 1000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else if a >= 1.0 {
        3
    } else {
        4
    };
    format!("{v:.decimals$}")
}

/// Parse a duration like `250ms`, `2s`, `1.5s`, `100us`, `500000ns`, `1m`, `90min`, `2h`. A bare
/// number is refused (`--run-time 100` silently meant 100 s, not 100 ms): the unit is always
/// written. At most 24 h.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration '{s}': expected e.g. 250ms, 2s, 1m, 2h"))?;
    let mult = match suffix.trim() {
        "" => {
            return Err(format!(
                "duration '{s}' has no unit: write e.g. {s}ms or {s}s (units: ns, us, ms, s, m, h)"
            ));
        }
        "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "invalid duration unit '{other}' in '{s}': use ns, us, ms, s, m or h"
            ));
        }
    };
    let secs = n * mult;
    if !secs.is_finite() || secs <= 0.0 || secs > 86_400.0 {
        return Err(format!(
            "duration '{s}' out of range (must be > 0 and ≤ 24 h)"
        ));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// Binary size text: 1536 -> "1.5KiB", 4194304 -> "4MiB".
pub fn format_size(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if (v - v.round()).abs() < 1e-9 {
        format!("{}{}", v.round() as u64, UNITS[i])
    } else {
        format!("{v:.1}{}", UNITS[i])
    }
}

/// Parse a size like `256MiB`, `1GiB`, `64KiB`, `512M`, `4096` (bytes; K/M/G are binary too,
/// as memory sizes usually are).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 64KiB, 256MiB, 1GiB)"))?;
    let Some(mult) = size_unit(unit) else {
        return Err(format!(
            "'{s}': unknown size unit '{}' (use KiB, MiB, GiB)",
            unit.trim().to_ascii_lowercase()
        ));
    };
    let bytes = v * mult as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > (1u64 << 50) as f64 {
        return Err(format!("'{s}' is out of range"));
    }
    Ok(bytes as u64)
}

/// The multiplier of a size unit: B, K/KB/KiB, M/MB/MiB, G…, T… (binary, as memory and the
/// kernel use them; any case); None for anything else.
pub fn size_unit(unit: &str) -> Option<u64> {
    Some(match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_format() {
        assert_eq!(parse_size("256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("64k").unwrap(), 64 << 10);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1.5MiB").unwrap(), 3 << 19);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("12parsecs").is_err());
        assert!(parse_size("0").is_err());
        assert_eq!(format_size(4 << 20), "4MiB");
        assert_eq!(format_size(1536), "1.5KiB");
        assert_eq!(size_unit(" KiB"), Some(1024));
        assert_eq!(size_unit("kB"), Some(1024));
        assert_eq!(size_unit("parsecs"), None);
    }

    #[test]
    fn time_units_chosen_per_value() {
        assert_eq!(format_time_ns(52.34), "52.34 ns");
        assert_eq!(format_time_ns(1534.0), "1.534 µs");
        assert_eq!(format_time_ns(2_500_000.0), "2.500 ms");
        assert_eq!(format_time_ns(3.2e9), "3.200 s");
        assert_eq!(format_time_ns(0.91), "0.9100 ns");
    }

    #[test]
    fn suffixes_name_their_unit() {
        assert_eq!(unit_of_suffix("rtt_p50_us"), Some(Unit::Microseconds));
        assert_eq!(
            unit_of_suffix("rx_service_demand_us_per_kib"),
            Some(Unit::MicrosecondsPerKib)
        );
        assert_eq!(
            unit_of_suffix("throughput_gbit_s"),
            Some(Unit::GigabitsPerSecond)
        );
        assert_eq!(
            unit_of_suffix("mb_per_s_buffered"),
            Some(Unit::MegabytesPerSecond)
        );
        assert_eq!(unit_of_suffix("cpu_s_per_gb"), Some(Unit::CpuSecondsPerGb));
        assert_eq!(unit_of_suffix("loss_pct"), Some(Unit::Percent));
        assert_eq!(unit_of_suffix("stalls"), None);
        assert_eq!(unit_of_suffix("switch"), None);
    }

    #[test]
    fn scaled_units() {
        assert_eq!(format_value(35e9, Unit::BytesPerSecond), "35.00 GB/s");
        assert_eq!(format_value(2048.0, Unit::Bytes), "2.000 KiB");
        assert_eq!(format_value(99.5, Unit::Percent), "99.50 %");
        assert_eq!(format_value(65.5, Unit::Microseconds), "65.50 µs");
        assert_eq!(format_value(1500.0, Unit::Microseconds), "1.500 ms");
        assert_eq!(format_value(917.0, Unit::MegabytesPerSecond), "917.0 MB/s");
        assert_eq!(format_value(2310.0, Unit::MegabytesPerSecond), "2.310 GB/s");
        assert_eq!(format_value(0.5, Unit::GigabitsPerSecond), "500.0 Mbit/s");
        assert_eq!(format_value(1.25, Unit::GigabytesPerSecond), "1.250 GB/s");
        assert_eq!(
            format_value(0.25, Unit::MicrosecondsPerKib),
            "0.2500 µs/KiB"
        );
    }

    #[test]
    fn serde_names_are_the_unit_symbols() {
        for u in [
            Unit::Nanoseconds,
            Unit::Percent,
            Unit::BytesPerSecond,
            Unit::Bytes,
            Unit::Count,
            Unit::OpsPerSecond,
            Unit::Microseconds,
            Unit::MegabytesPerSecond,
            Unit::GigabitsPerSecond,
            Unit::GigabytesPerSecond,
            Unit::MicrosecondsPerKib,
            Unit::CpuSecondsPerGb,
        ] {
            assert_eq!(
                serde_json::to_string(&u).unwrap(),
                format!("\"{}\"", u.symbol())
            );
        }
        for b in [Better::Lower, Better::Higher, Better::Neutral] {
            let json = serde_json::to_string(&b).unwrap();
            assert_eq!(json, format!("\"{}\"", b.as_str()));
            assert_eq!(serde_json::from_str::<Better>(&json).unwrap(), b);
        }
        // Records written before `neutral` existed still load.
        assert_eq!(
            serde_json::from_str::<Better>("\"higher\"").unwrap(),
            Better::Higher
        );
    }

    #[test]
    fn durations_parse_and_reject() {
        use std::time::Duration;
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        // A bare number is refused, naming the units (it silently meant seconds).
        let e = parse_duration("100").unwrap_err();
        assert!(e.contains("no unit") && e.contains("100ms"), "{e}");
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        // Every unit the README names, up to the 24 h bound.
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("24h").unwrap(), Duration::from_secs(86_400));
        assert_eq!(
            parse_duration("1440m").unwrap(),
            Duration::from_secs(86_400)
        );
        assert_eq!(parse_duration("90min").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("100us").unwrap(), Duration::from_micros(100));
        assert_eq!(parse_duration("100µs").unwrap(), Duration::from_micros(100));
        assert_eq!(parse_duration("500ns").unwrap(), Duration::from_nanos(500));
        assert!(parse_duration("25h").is_err());
        assert!(parse_duration("1d").is_err());
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("5parsecs").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
