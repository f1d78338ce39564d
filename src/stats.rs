//! Pure statistics (no I/O). Filled in by the stats work.
