//! `results import`: JSON records, arrays of records, HTML reports with embedded records.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = osgauge::embedded::extract_embedded(s);
        if let Ok(docs) = osgauge::store::parse_documents(s) {
            for d in docs {
                // What parsed is a record whose own text parses to it again.
                let again = osgauge::store::parse_documents(&d.text).expect("re-parse");
                assert_eq!(again[0].record, d.record);
            }
        }
    }
});
