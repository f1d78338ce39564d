//! Property tests (proptest) of the parsers that take outside input: the record import parser
//! (JSON and the record embedded in an HTML report), opening a store file of arbitrary bytes,
//! and the duration / size / CPU-list / percentage parsers of the command line. The property
//! everywhere: an error or a value, never a panic; and where it applies, the value is right
//! (round trips) and a read-only open never changes the file.
//!
//! Case counts are fixed so the file runs in a few seconds; `PROPTEST_CASES=N` raises them for
//! a longer search (the `fuzz/` cargo-fuzz crate does the same with coverage guidance).

use crate::common;

use std::path::Path;

use osgauge::store::{self, Store};
use proptest::prelude::*;
use proptest::test_runner::Config;

fn cases(n: u32) -> Config {
    let n = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n);
    // A fixed seed unless PROPTEST_RNG_SEED names another: the default `cargo test` (and CI) runs
    // the same inputs every time, so it cannot turn red by chance; explore with other seeds, more
    // PROPTEST_CASES, or the cargo-fuzz targets in fuzz/.
    let seed = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x6f73_6761);
    Config {
        cases: n,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(seed),
        ..Config::default()
    }
}

fn fixture_text() -> &'static str {
    static T: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    T.get_or_init(|| std::fs::read_to_string(common::fixture_path("cpu-a.json")).unwrap())
}

/// A mutation of valid record text: cut, a byte range replaced, a fragment inserted.
fn mutated() -> impl Strategy<Value = String> {
    let len = fixture_text().len();
    (
        0..len,
        0..len,
        prop::sample::select(vec![
            "",
            "{",
            "}",
            "[",
            "]",
            "\"",
            ",",
            ":",
            "null",
            "1e999",
            "-0",
            "\\u0000",
            "\u{feff}",
            "<",
            "</script>",
            "\"schema\":\"osgauge.run/1\"",
            "[[[[[[[[",
            "\u{10ffff}",
        ]),
        any::<bool>(),
    )
        .prop_map(|(a, b, frag, cut)| {
            let t = fixture_text();
            let (a, b) = (a.min(b), a.max(b));
            let (a, b) = (floor_char(t, a), floor_char(t, b));
            if cut {
                t[..a].to_string()
            } else {
                format!("{}{frag}{}", &t[..a], &t[b..])
            }
        })
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

const EMBED_OPEN: &str = "<script type=\"application/json\" id=\"osgauge-runs\">";

proptest! {
    #![proptest_config(cases(400))]

    fn import_parser_never_panics_on_arbitrary_text(s in any::<String>()) {
        let _ = store::parse_documents(&s);
    }

    fn import_parser_never_panics_on_json_like_text(s in "[\\[\\]{}\",:0-9a-z \\\\\u{feff}<>/.-]{0,200}") {
        let _ = store::parse_documents(&s);
        let _ = store::parse_documents(&format!("[{s}]"));
    }

    fn import_parser_never_panics_on_damaged_records(s in mutated(), bom in any::<bool>()) {
        let s = if bom { format!("\u{feff}{s}") } else { s };
        if let Ok(docs) = store::parse_documents(&s) {
            // Whatever parses is a real record whose text parses to it again.
            for d in docs {
                let again = store::parse_documents(&d.text).unwrap();
                prop_assert_eq!(&again[0].record, &d.record);
            }
        }
    }

    fn html_extraction_never_panics(
        before in any::<String>(),
        body in prop_oneof![any::<String>(), mutated()],
        after in prop::sample::select(vec!["", "</script>", "</script></body>", "<\u{e9}"]),
        with_marker in any::<bool>(),
    ) {
        let html = if with_marker {
            format!("<!DOCTYPE html>{before}{EMBED_OPEN}{body}{after}")
        } else {
            format!("<html>{before}{body}{after}")
        };
        let _ = osgauge::embedded::extract_embedded(&html);
        let _ = store::parse_documents(&html);
    }

    fn durations_parse_or_fail_cleanly(s in "[0-9.]{0,12}[a-zµ ]{0,4}|\\PC{0,16}") {
        if let Ok(d) = osgauge::units::parse_duration(&s) {
            prop_assert!(d.as_secs_f64() <= 86_400.0 + 1e-6);
        }
    }

    fn sizes_parse_or_fail_cleanly(s in "[0-9.]{0,20}[a-zA-Z ]{0,4}|\\PC{0,16}") {
        if let Ok(b) = osgauge::units::parse_size(&s) {
            prop_assert!((1..=1u64 << 50).contains(&b));
        }
    }

    fn cpu_lists_parse_or_fail_cleanly(s in "[0-9,\\- ]{0,24}|\\PC{0,16}") {
        if let Ok(v) = osgauge::cli::cpu_list(&s) {
            prop_assert!(!v.is_empty() && v.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(*v.last().unwrap() <= 4095);
        }
    }

    fn percentages_parse_or_fail_cleanly(s in "[0-9.%e+\\- ]{0,12}|\\PC{0,12}") {
        if let Ok(v) = osgauge::cli::parse_percent(&s) {
            prop_assert!((0.0..=10.0).contains(&v));
        }
    }

    /// The range the message names is the range accepted: both ends in, just past them out.
    fn percentages_accept_exactly_the_range_they_name(x in 0.0f64..1000.0) {
        let s = format!("{x}%");
        prop_assert!(osgauge::cli::parse_percent(&s).is_ok());
        prop_assert!(osgauge::cli::parse_percent("1000%").is_ok());
        prop_assert!(osgauge::cli::parse_percent("0%").is_ok());
        let e = osgauge::cli::parse_percent("1000.5%").unwrap_err();
        prop_assert!(e.contains("0% to 1000%"), "{}", e);
    }
}
crate::register!(import_parser_never_panics_on_arbitrary_text);
crate::register!(import_parser_never_panics_on_json_like_text);
crate::register!(import_parser_never_panics_on_damaged_records);
crate::register!(html_extraction_never_panics);
crate::register!(durations_parse_or_fail_cleanly);
crate::register!(sizes_parse_or_fail_cleanly);
crate::register!(cpu_lists_parse_or_fail_cleanly);
crate::register!(percentages_parse_or_fail_cleanly);
crate::register!(percentages_accept_exactly_the_range_they_name);

/// Bytes for a store file: random, random after a SQLite header, or a real store with damage.
fn store_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..9000),
        prop::collection::vec(any::<u8>(), 0..9000).prop_map(|mut v| {
            let head = b"SQLite format 3\0";
            let mut out = head.to_vec();
            if v.len() > head.len() {
                v.drain(..head.len());
            }
            out.extend(v);
            out
        }),
        (
            prop::collection::vec((0usize..1 << 20, any::<u8>()), 1..64),
            any::<bool>()
        )
            .prop_map(|(pokes, whole_page)| {
                let mut v = real_store().to_vec();
                for (at, b) in pokes {
                    let i = at % v.len();
                    if whole_page {
                        let p = i / 4096 * 4096;
                        let end = (p + 4096).min(v.len());
                        v[p..end].fill(b);
                    } else {
                        v[i] = b;
                    }
                }
                v
            }),
    ]
}

/// The bytes of a real store holding the fixtures.
fn real_store() -> &'static [u8] {
    static B: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    B.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db");
        let s = Store::open(&p).unwrap();
        for f in ["cpu-a.json", "cpu-b.json"] {
            s.save(&common::fixture(f), store::Origin::Measured)
                .unwrap();
        }
        drop(s);
        std::fs::read(&p).unwrap()
    })
}

fn exercise(s: &Store) {
    if let Ok(rows) = s.list() {
        for r in rows {
            let _ = s.get(&r.run_id);
            let _ = s.export_json(&r.run_id);
        }
    }
    let _ = s.resolve("fixture-a");
}

proptest! {
    #![proptest_config(cases(150))]

    fn opening_arbitrary_bytes_as_a_store_never_panics(bytes in store_bytes()) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db");
        std::fs::write(&p, &bytes).unwrap();
        // Read-only: an error or a store, and the file is left exactly as it was.
        match Store::open_read_only(&p) {
            Ok(Some(s)) => exercise(&s),
            Ok(None) => prop_assert!(false, "an existing file reads as no store"),
            Err(e) => {
                let msg = format!("{e:#}");
                prop_assert!(!msg.is_empty());
            }
        }
        prop_assert_eq!(std::fs::read(&p).unwrap(), bytes.clone());
        // For writing: an error or a store that passed its check; never a panic.
        if let Ok(s) = Store::open(&p) {
            exercise(&s);
            let _ = s.save(&common::fixture("cpu-a.json"), store::Origin::Measured);
        }
        let _ = Path::new(&p).exists();
    }
}
crate::register!(opening_arbitrary_bytes_as_a_store_never_panics);
