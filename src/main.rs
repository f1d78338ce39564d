fn main() {
    std::process::exit(osgauge::cli::main());
}
