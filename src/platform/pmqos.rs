//! CPU power-management latency requests: while a [`DmaLatency`] is held, the OS keeps the CPUs
//! out of idle states whose exit takes longer than asked (Linux `/dev/cpu_dma_latency`, a PM QoS
//! request that lasts as long as the file is open — cyclictest holds one at 0 µs by default).
//! Other OSes: unsupported, with the reason.

/// A held request; dropping it ends it.
#[derive(Debug)]
pub struct DmaLatency {
    #[cfg(target_os = "linux")]
    _file: std::fs::File,
    /// The value the OS reports in force while held, µs.
    pub in_force_us: Option<i32>,
}

#[cfg(target_os = "linux")]
impl DmaLatency {
    /// Ask that no idle state with an exit latency above `us` be used while held.
    pub fn hold(us: u32) -> Result<DmaLatency, String> {
        use std::io::{Read, Write};
        let path = "/dev/cpu_dma_latency";
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| format!("{path}: {e}"))?;
        f.write_all(&(us as i32).to_ne_bytes())
            .map_err(|e| format!("writing {path}: {e}"))?;
        // Reading gives the aggregate request in force (the smallest of every holder's).
        let mut b = [0u8; 4];
        let in_force_us = f.read_exact(&mut b).ok().map(|_| i32::from_ne_bytes(b));
        Ok(DmaLatency {
            _file: f,
            in_force_us,
        })
    }
}

#[cfg(not(target_os = "linux"))]
impl DmaLatency {
    pub fn hold(_us: u32) -> Result<DmaLatency, String> {
        Err(format!(
            "unsupported on {}: no CPU DMA-latency (PM QoS) request is built here",
            crate::platform::OS_NAME
        ))
    }
}
