//! Every OS-specific call lives under this module (hyperfine's `timer/` split).
