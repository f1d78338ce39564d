//! Labels with characters two terminal columns wide (CJK, emoji) keep every table aligned: tables
//! pad by display width (`output::width`), not by counting characters.

use crate::common;

use common::{fixture, osgauge_on};
use osgauge::store::{Origin, Store};

const WIDE: &str = "内核-6.18 🚀";

/// Display column at which `needle` starts in `line`, or None. Counted independently of
/// `output::width`: the three wide characters of [`WIDE`] take two columns, everything else here
/// (ASCII) one.
fn column_of(line: &str, needle: &str) -> Option<usize> {
    line.find(needle).map(|i| {
        line[..i]
            .chars()
            .map(|c| if "内核🚀".contains(c) { 2 } else { 1 })
            .sum()
    })
}

fn display_width_counts_wide_characters_twice() {
    assert_eq!(osgauge::output::width("abc"), 3);
    assert_eq!(osgauge::output::width("内核"), 4);
    assert_eq!(osgauge::output::width("🚀"), 2);
    assert_eq!(osgauge::output::pad_right("内核", 6), "内核  ");
    assert_eq!(osgauge::output::pad_left("🚀", 4), "  🚀");
    // Wider than asked: never cut.
    assert_eq!(osgauge::output::pad_right("内核内核", 2), "内核内核");
}
crate::register!(display_width_counts_wide_characters_twice);

fn results_list_columns_stay_aligned_with_a_wide_label() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let s = Store::open(&path).unwrap();
    for label in [WIDE, "plain"] {
        let mut r = fixture("cpu-a.json");
        r.run_id = uuid::Uuid::now_v7();
        r.label = Some(label.into());
        s.save(&r, Origin::Measured).unwrap();
    }
    drop(s);
    let out = osgauge_on(&path)
        .args(["results", "list"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let wide = lines.iter().find(|l| l.contains(WIDE)).expect(&text);
    let plain = lines.iter().find(|l| l.contains("plain")).expect(&text);
    // The column after the label (os) starts at the same display column in both rows: find the
    // os text, which is the same in both (the same fixture).
    let os = fixture("cpu-a.json").machine.os.clone();
    let (a, b) = (column_of(wide, &os), column_of(plain, &os));
    assert!(
        a.is_some() && a == b,
        "os column at {a:?} vs {b:?}:\n{text}"
    );
}
crate::register!(results_list_columns_stay_aligned_with_a_wide_label);
