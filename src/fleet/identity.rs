//! Which machine a run is of, and what to call it.
//!
//! A machine is its recorded `machine_id` (a stable id, see `system::Machine::machine_id`), not
//! its hostname: containers and clones share hostnames, and a renamed host keeps its id. A run
//! without one (recorded before machine ids, or where the OS's id could not be read) is of the
//! machine with an id that its hostname belongs to, when exactly one such machine is known;
//! otherwise it stays a machine of its own, known by hostname alone and shown as such.
//!
//! A machine is shown by the hostname of its newest run; when two machines would be shown alike
//! (two containers named `ci`), each name carries the start of its id (`ci [3f2a9c01]`), or
//! `[no id]` for the one known by hostname alone.
//!
//! Pure: built from (run id, machine id, hostname, start time) of the runs in view.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::machine_name;

/// How many hex digits of a machine id a shown name carries.
pub const ID_SHOWN: usize = 8;

/// One machine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineInfo {
    /// Its stable id; None for a machine known by hostname only.
    pub id: Option<String>,
    /// What it is shown as (unique among the machines in view).
    pub name: String,
    /// Every hostname its runs were recorded with, newest last.
    pub hostnames: Vec<String>,
}

impl MachineInfo {
    /// Whether the user's `--machine` word names this machine: one of its hostnames, its shown
    /// name, or (4 or more hex digits) the start of its id.
    pub fn is_named(&self, word: &str) -> bool {
        let w = word.trim();
        if self.name == w || self.hostnames.iter().any(|h| h == w) {
            return true;
        }
        let hex = w.len() >= 4 && w.chars().all(|c| c.is_ascii_hexdigit());
        hex && self
            .id
            .as_deref()
            .is_some_and(|id| id.starts_with(&w.to_ascii_lowercase()))
    }
}

/// The machines of a set of runs.
#[derive(Debug, Clone, Default)]
pub struct Machines {
    pub list: Vec<MachineInfo>,
    /// Run id → index in `list`.
    of_run: HashMap<String, usize>,
}

/// What [`Machines::new`] needs of a run.
pub struct Seen<'a> {
    pub run_id: &'a str,
    pub machine_id: Option<&'a str>,
    pub hostname: Option<&'a str>,
    /// RFC 3339 (or anything that sorts in time order).
    pub started: &'a str,
}

impl Machines {
    pub fn new<'a>(runs: impl IntoIterator<Item = Seen<'a>>) -> Machines {
        let mut runs: Vec<Seen> = runs.into_iter().collect();
        runs.sort_by(|a, b| (a.started, a.run_id).cmp(&(b.started, b.run_id)));
        let id_of = |s: &Seen| s.machine_id.filter(|i| !i.is_empty()).map(str::to_string);
        // Hostname → the ids recorded with it.
        let mut ids_of_host: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for s in &runs {
            if let Some(id) = id_of(s) {
                let v = ids_of_host.entry(machine_name(s.hostname)).or_default();
                if !v.contains(&id) {
                    v.push(id);
                }
            }
        }
        // Key: Ok(id) or Err(hostname).
        let mut keys: Vec<Result<String, String>> = Vec::new();
        let mut hostnames: Vec<Vec<String>> = Vec::new();
        let mut of_run = HashMap::new();
        for s in &runs {
            let host = machine_name(s.hostname);
            let key = match id_of(s) {
                Some(id) => Ok(id),
                None => match ids_of_host.get(&host).map(Vec::as_slice) {
                    Some([only]) => Ok(only.clone()),
                    _ => Err(host.clone()),
                },
            };
            let i = match keys.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    keys.push(key);
                    hostnames.push(Vec::new());
                    keys.len() - 1
                }
            };
            let hs = &mut hostnames[i];
            hs.retain(|h| *h != host);
            hs.push(host);
            of_run.insert(s.run_id.to_string(), i);
        }
        let newest = |i: usize| hostnames[i].last().cloned().unwrap_or_default();
        let list = keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let name = newest(i);
                let alike = (0..keys.len()).filter(|&j| newest(j) == name).count() > 1;
                let name = match (k, alike) {
                    (_, false) => name,
                    (Ok(id), true) => {
                        format!("{name} [{}]", id.get(..ID_SHOWN).unwrap_or(id))
                    }
                    (Err(_), true) => format!("{name} [no id]"),
                };
                MachineInfo {
                    id: k.as_ref().ok().cloned(),
                    name,
                    hostnames: hostnames[i].clone(),
                }
            })
            .collect();
        Machines { list, of_run }
    }

    /// The machines of store rows.
    pub fn of_rows(rows: &[crate::store::RunRow]) -> Machines {
        Machines::new(rows.iter().map(|r| Seen {
            run_id: &r.run_id,
            machine_id: r.machine_id.as_deref(),
            hostname: r.hostname.as_deref(),
            started: &r.started,
        }))
    }

    /// The machines of records.
    pub fn of_records(recs: &[crate::record::RunRecord]) -> Machines {
        let ids: Vec<(String, String)> = recs
            .iter()
            .map(|r| (r.run_id.to_string(), r.started.to_rfc3339()))
            .collect();
        Machines::new(recs.iter().zip(&ids).map(|(r, (id, started))| Seen {
            run_id: id,
            machine_id: r.machine.machine_id.as_deref(),
            hostname: r.machine.hostname.as_deref(),
            started,
        }))
    }

    /// The index of a run's machine in `list`.
    pub fn index(&self, run_id: &str) -> Option<usize> {
        self.of_run.get(run_id).copied()
    }

    /// A run's machine.
    pub fn of(&self, run_id: &str) -> Option<&MachineInfo> {
        self.index(run_id).map(|i| &self.list[i])
    }

    /// A run's machine as shown (its hostname when the run is not among those it was built of).
    pub fn name(&self, run_id: &str, hostname: Option<&str>) -> String {
        self.of(run_id)
            .map(|m| m.name.clone())
            .unwrap_or_else(|| machine_name(hostname))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen<'a>(run: &'a str, id: Option<&'a str>, host: &'a str, t: &'a str) -> Seen<'a> {
        Seen {
            run_id: run,
            machine_id: id,
            hostname: Some(host),
            started: t,
        }
    }

    #[test]
    fn shared_hostnames_split_renamed_hosts_join_and_old_runs_follow_their_host() {
        let a = "aaaaaaaa11111111aaaaaaaa11111111";
        let b = "bbbbbbbb22222222bbbbbbbb22222222";
        let m = Machines::new([
            // Two containers named "ci", one machine renamed from "old" to "new".
            seen("1", Some(a), "ci", "2026-11-01"),
            seen("2", Some(b), "ci", "2026-11-02"),
            seen("3", Some("cccc"), "old", "2026-11-03"),
            seen("4", Some("cccc"), "new", "2026-11-04"),
            // A run from before machine ids on the renamed host's old name: that machine.
            seen("5", None, "old", "2026-10-01"),
            // One without id on "ci", which two machines share: a machine of its own.
            seen("6", None, "ci", "2026-10-02"),
            // A lone host without id.
            seen("7", None, "solo", "2026-10-03"),
        ]);
        let name = |r: &str| m.of(r).unwrap().name.clone();
        assert_eq!(name("1"), "ci [aaaaaaaa]");
        assert_eq!(name("2"), "ci [bbbbbbbb]");
        assert_eq!(name("3"), "new");
        assert_eq!(m.index("3"), m.index("4"));
        assert_eq!(m.index("5"), m.index("4"));
        assert_eq!(m.of("4").unwrap().hostnames, ["old", "new"]);
        assert_eq!(name("6"), "ci [no id]");
        assert_eq!(name("7"), "solo");
        assert_eq!(m.list.len(), 5);
        // Named by any hostname, the shown name, or an id prefix.
        let four = m.of("4").unwrap();
        assert!(four.is_named("old") && four.is_named("new") && four.is_named("cccc"));
        assert!(m.of("1").unwrap().is_named("aaaa"));
        assert!(m.of("1").unwrap().is_named("ci [aaaaaaaa]"));
        assert!(!m.of("1").unwrap().is_named("aaa"));
    }
}
