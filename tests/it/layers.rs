//! The floors of the library, pinned: every top-level module of `src/` stands on one floor, and
//! its code names (`crate::module…`, in a `use` line or inline) only modules on lower floors. An
//! import that climbs back up (a store that reads the report's HTML, a server that computes with
//! a benchmark's statistics) fails here with the file and line, so the shared piece is moved down
//! instead. Test code (`#[cfg(test)]` modules) may reach anywhere.

use std::path::{Path, PathBuf};

/// Floor 1 is the ground. A new top-level module is added on the floor its imports allow; moving a
/// module up or down is a design decision, made here in the open.
const FLOORS: &[&[&str]] = &[
    &["embedded", "stats", "units"],
    &["system"],
    &["platform", "record"],
    &[
        "attribution",
        "cpucost",
        "timing",
        "output",
        "tempfiles",
        "testing",
    ],
    &["appmodel", "export", "serve"],
    &["compare", "store", "workload"],
    &["bench", "fleet"],
    &["report", "runner"],
    &["cli"],
];

/// The crate root's macros (`#[macro_export]` puts them at `crate::`) and the module that
/// defines them.
const MACROS: &[(&str, &str)] = &[("out", "output"), ("outln", "output"), ("errln", "output")];

fn floor_of(module: &str) -> Option<usize> {
    FLOORS
        .iter()
        .position(|f| f.contains(&module))
        .map(|i| i + 1)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Files that are test code as a whole: `#[cfg(test)] mod name;` in their parent.
fn test_only_files(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let dir = match f.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs") => f.parent().unwrap().to_path_buf(),
            _ => f.with_extension(""),
        };
        for w in lines.windows(2) {
            if w[0] != "#[cfg(test)]" {
                continue;
            }
            let decl = w[1]
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ");
            if let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                v.push(dir.join(format!("{name}.rs")));
                v.push(dir.join(name).join("mod.rs"));
            }
        }
    }
    v
}

/// The top-level modules one line names through `crate::` (outside a `//` comment).
fn named_modules(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        // `$crate::` (a macro's own path) and `osgauge_crate::`-like names are not this crate's
        // modules named from here.
        let before = &rest[..i];
        rest = &rest[i + "crate::".len()..];
        if before.ends_with(|c: char| c == '$' || c == '_' || c.is_alphanumeric()) {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c}`: the first name of every item (on this line).
            let inner = group.split('}').next().unwrap_or("");
            for item in inner.split(',') {
                let n: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !n.is_empty() && n != "self" {
                    names.push(n);
                }
            }
        } else {
            let n: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let n = MACROS
                .iter()
                .find(|(m, _)| rest[n.len()..].starts_with('!') && *m == n)
                .map_or(n.clone(), |(_, owner)| owner.to_string());
            if !n.is_empty() {
                names.push(n);
            }
        }
    }
    names
}

fn imports_only_go_down_the_floors() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    if !src.is_dir() {
        let why = format!("the sources are not here ({})", src.display());
        return osgauge::testing::not_run("layers::imports_only_go_down_the_floors", &why);
    }
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let skip = test_only_files(&files);
    let mut offenders = Vec::new();
    let mut unplaced = std::collections::BTreeSet::new();
    for f in files.iter().filter(|f| !skip.contains(f)) {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let Some(floor) = floor_of(&module) else {
            unplaced.insert(module);
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (n, &line) in lines.iter().enumerate() {
            // Test modules sit at the end of a file and may reach anywhere.
            if line.trim() == "#[cfg(test)]"
                && lines
                    .get(n + 1)
                    .is_some_and(|l| l.trim_start().contains("mod ") && l.trim_end().ends_with('{'))
            {
                break;
            }
            // A `crate::{…}` group that rustfmt spread over several lines is read whole.
            let mut line = line.to_string();
            if line.contains("crate::{") && !line.contains('}') {
                let more = lines[n + 1..].iter().take_while(|l| !l.contains('}'));
                let end = lines[n + 1..].iter().find(|l| l.contains('}'));
                for l in more.chain(end) {
                    line.push(' ');
                    line.push_str(l.trim());
                }
            }
            for named in named_modules(&line) {
                if named == module {
                    continue;
                }
                match floor_of(&named) {
                    None => {
                        unplaced.insert(named);
                    }
                    Some(g) if g >= floor => offenders.push(format!(
                        "src/{}:{}: {module} (floor {floor}) names {named} (floor {g}): {}",
                        rel.display(),
                        n + 1,
                        line.trim()
                    )),
                    Some(_) => {}
                }
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "modules on no floor of tests/it/layers.rs (add each where its imports allow): {unplaced:?}"
    );
    assert!(
        offenders.is_empty(),
        "imports that climb back up (move the shared piece down a floor instead):\n{}",
        offenders.join("\n")
    );
}
crate::register!(imports_only_go_down_the_floors);

/// The scanner sees what it must: inline paths, groups, macros; not comments nor `$crate`.
fn the_scanner_reads_paths_groups_and_macros() {
    assert_eq!(named_modules("use crate::record::RunRecord;"), ["record"]);
    assert_eq!(
        named_modules("    let x = crate::report::extract(t); // crate::cli"),
        ["report"]
    );
    assert_eq!(
        named_modules("use crate::{self, units::Unit, stats};"),
        ["units", "stats"]
    );
    assert_eq!(named_modules("crate::errln!(\"x\")"), ["output"]);
    assert!(named_modules("$crate::harness::Test::new").is_empty());
    assert!(named_modules("/// see crate::cli").is_empty());
    assert_eq!(floor_of("units"), Some(1));
    assert!(floor_of("cli") > floor_of("runner"));
}
crate::register!(the_scanner_reads_paths_groups_and_macros);
