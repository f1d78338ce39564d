//! Machine and environment record. Filled in by the system work.
