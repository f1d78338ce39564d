//! The CPUID instruction (x86_64): vendor, brand, family/model/stepping, the hypervisor flag and
//! signature, invariant TSC. The one reader of it for every OS; other architectures get no facts.

/// CPUID facts (x86_64).
#[derive(Default)]
pub struct CpuId {
    pub vendor: Option<String>,
    pub brand: Option<String>,
    pub family: Option<u32>,
    pub model: Option<u32>,
    pub stepping: Option<u32>,
    pub hypervisor_flag: Option<bool>,
    pub hypervisor: Option<String>,
    pub invariant_tsc: Option<bool>,
}

#[cfg(target_arch = "x86_64")]
#[allow(unused_unsafe)]
pub fn cpuid() -> CpuId {
    use core::arch::x86_64::__cpuid;
    let regs = |leaf: u32| {
        // SAFETY: CPUID is available on every x86_64 CPU; unsupported leaves return zeros or the
        // highest basic leaf, and are only read after the maximum leaf was checked.
        let r = unsafe { __cpuid(leaf) };
        [r.eax, r.ebx, r.ecx, r.edx]
    };
    let text = |words: &[u32]| {
        let b: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let s = String::from_utf8_lossy(&b)
            .trim_matches(char::from(0))
            .trim()
            .to_string();
        (!s.is_empty()).then_some(s)
    };
    let l0 = regs(0);
    let vendor = text(&[l0[1], l0[3], l0[2]]);
    let mut c = CpuId {
        vendor,
        ..Default::default()
    };
    if l0[0] >= 1 {
        let l1 = regs(1);
        let eax = l1[0];
        let base_family = (eax >> 8) & 0xf;
        let base_model = (eax >> 4) & 0xf;
        let family = if base_family == 0xf {
            base_family + ((eax >> 20) & 0xff)
        } else {
            base_family
        };
        let model = if base_family == 0x6 || base_family == 0xf {
            base_model | (((eax >> 16) & 0xf) << 4)
        } else {
            base_model
        };
        c.family = Some(family);
        c.model = Some(model);
        c.stepping = Some(eax & 0xf);
        let hv = l1[2] & (1 << 31) != 0;
        c.hypervisor_flag = Some(hv);
        if hv {
            let h = regs(0x4000_0000);
            let mut sig = [0u8; 12];
            sig[0..4].copy_from_slice(&h[1].to_le_bytes());
            sig[4..8].copy_from_slice(&h[2].to_le_bytes());
            sig[8..12].copy_from_slice(&h[3].to_le_bytes());
            c.hypervisor = crate::system::parse::hypervisor_from_signature(&sig);
        }
    }
    let max_ext = regs(0x8000_0000)[0];
    if max_ext >= 0x8000_0004 {
        let mut words = Vec::new();
        for leaf in 0x8000_0002..=0x8000_0004 {
            words.extend(regs(leaf));
        }
        c.brand = text(&words);
    }
    if max_ext >= 0x8000_0007 {
        c.invariant_tsc = Some(regs(0x8000_0007)[3] & (1 << 8) != 0);
    }
    c
}

#[cfg(not(target_arch = "x86_64"))]
pub fn cpuid() -> CpuId {
    CpuId::default()
}
