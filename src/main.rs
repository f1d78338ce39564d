fn main() {
    std::process::exit(osgauge::cli::main());
}

// Before Rust's runtime replaces a closed standard output with /dev/null, note that it was closed
// (so `osgauge results export RUN >&-` is an error, not a silent success).
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static PROBE_STDIO: extern "C" fn() = osgauge::platform::probe_stdio_at_start;

#[cfg(target_os = "macos")]
#[used]
#[unsafe(link_section = "__DATA,__mod_init_func")]
static PROBE_STDIO: extern "C" fn() = osgauge::platform::probe_stdio_at_start;
