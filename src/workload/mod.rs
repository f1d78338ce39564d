//! Emulated work shared by the suites that need it: the calibrated work loop ([`work`]), the
//! periodic interactive tasks ([`task`], with their per-period rules in [`accounting`]), and the
//! background loads ([`load`]: their child process, folder and verification), run beside a
//! measurement the one way every suite does ([`background`]). The interactivity suite measures the
//! tasks under these loads; the latency suite runs its wake-up and noise tests beside them. No
//! suite imports another: both use this module.

pub mod accounting;
pub mod background;
pub mod load;
pub mod task;
pub mod work;
