//! The cryptography under TLS to a PostgreSQL store: rustls with ring on Linux and Windows, with
//! graviola (pure Rust) on macOS, where ring's C would need a cross-compiler to type-check from
//! Linux. Everything above the provider (certificate checks, sslmode) is the same everywhere.

use rustls::crypto::CryptoProvider;

/// The crypto provider for rustls on this OS.
pub fn provider() -> CryptoProvider {
    #[cfg(not(target_os = "macos"))]
    {
        rustls::crypto::ring::default_provider()
    }
    #[cfg(target_os = "macos")]
    {
        rustls_graviola::default_provider()
    }
}
