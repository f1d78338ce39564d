//! Counts of what can interrupt a busy loop on a CPU, for the noise benchmark to set its gap count
//! against: the interrupts a CPU handled (Linux `/proc/interrupts`, every line's column of that
//! CPU) and the calling thread's involuntary context switches (Linux `getrusage(RUSAGE_THREAD)`).
//! None elsewhere (not read, never guessed).

/// Interrupts handled so far by `cpu`, all sources summed (None where not readable).
pub fn cpu_interrupts(cpu: usize) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let text = std::fs::read_to_string("/proc/interrupts").ok()?;
        interrupts_of(&text, cpu)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        None
    }
}

/// The sum of `cpu`'s column of a `/proc/interrupts` text: the header names the columns
/// (`CPU0 CPU1 …`); a line counts where it has a number in every column (ERR/MIS, one total, do
/// not).
pub fn interrupts_of(text: &str, cpu: usize) -> Option<u64> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next()?.split_whitespace().collect();
    let col = header.iter().position(|h| *h == format!("CPU{cpu}"))?;
    let ncols = header.len();
    let mut sum = 0u64;
    for line in lines {
        let Some((_, rest)) = line.split_once(':') else {
            continue;
        };
        let nums: Vec<u64> = rest
            .split_whitespace()
            .take(ncols)
            .map_while(|t| t.parse().ok())
            .collect();
        if nums.len() == ncols {
            sum += nums[col];
        }
    }
    Some(sum)
}

/// Involuntary context switches of the calling thread so far (None where not readable).
pub fn thread_involuntary_switches() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: zeroed rusage is valid; valid out pointer.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: RUSAGE_THREAD with a valid out pointer.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
            return None;
        }
        Some(ru.ru_nivcsw as u64)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpus_column_is_summed_over_lines_with_every_column() {
        let t = "           CPU0       CPU1       \n\
                 \x20 0:         40          0   IO-APIC   2-edge      timer\n\
                 LOC:     123456      20681   Local timer interrupts\n\
                 RES:         10          5   Rescheduling interrupts\n\
                 ERR:          0\n\
                 MIS:          0\n";
        assert_eq!(interrupts_of(t, 0), Some(40 + 123_456 + 10));
        assert_eq!(interrupts_of(t, 1), Some(20_681 + 5));
        assert_eq!(interrupts_of(t, 2), None);
        assert_eq!(interrupts_of("", 0), None);
    }

    #[test]
    #[cfg_attr(
        not(target_os = "linux"),
        ignore = "interrupt and switch counts are read on Linux only"
    )]
    fn this_machines_counts_only_grow() {
        // Linux always has both (/proc/interrupts, getrusage RUSAGE_THREAD): missing is a bug.
        let a = cpu_interrupts(0).expect("no interrupt count of CPU 0");
        let s = thread_involuntary_switches().expect("no involuntary switch count");
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(cpu_interrupts(0).unwrap() >= a);
        assert!(thread_involuntary_switches().unwrap() >= s);
    }
}
