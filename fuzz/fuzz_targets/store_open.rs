//! Opening a file of arbitrary bytes as the result store: an error or a store, never a panic;
//! a read-only open never changes the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use osgauge::store::Store;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.db");
    std::fs::write(&p, data).unwrap();
    if let Ok(Some(s)) = Store::open_read_only(&p)
        && let Ok(rows) = s.list()
    {
        for r in rows {
            let _ = s.export_json(&r.run_id);
        }
    }
    assert_eq!(std::fs::read(&p).unwrap(), data, "a read-only open changed the file");
    if let Ok(s) = Store::open(&p) {
        let _ = s.list();
    }
});
