//! TLS to a PostgreSQL store, as libpq's `sslmode` defines it (rustls; the crypto provider per OS
//! comes from [`crate::platform::tls`]):
//!
//! - `disable`: plain.
//! - `prefer` (the default): TLS when the server offers it, else plain.
//! - `require`: TLS or no connection; the certificate is not checked — except, as libpq does,
//!   when a root CA file exists (`sslrootcert=`, `PGSSLROOTCERT`, or `~/.postgresql/root.crt`):
//!   then its chain is checked as for `verify-ca` (the same holds for `prefer`).
//! - `verify-ca`: TLS, and the server's certificate must chain to the root CA file (which must
//!   exist); the host name is not checked.
//! - `verify-full`: as `verify-ca`, and the certificate must be valid for the host name in the URL.
//!
//! As libpq, a Unix-socket connection never uses TLS (sslmode is ignored for it). Client
//! certificates (`sslcert`/`sslkey`) are not supported (refused as unknown parameters).
//!
//! Whether a connection is encrypted is read back from the server (`pg_stat_ssl` of the
//! session), not inferred from the URL: [`read_back`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// libpq's `sslmode` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub fn parse(v: &str) -> Option<SslMode> {
        Some(match v {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// The mode the client library negotiates with (it knows no certificate checks: those are
    /// the verifier's).
    pub fn negotiate(self) -> postgres::config::SslMode {
        match self {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                postgres::config::SslMode::Require
            }
        }
    }
}

/// The TLS settings of a store URL.
#[derive(Clone, Debug)]
pub struct Settings {
    pub mode: SslMode,
    /// The root CA file given (`sslrootcert=` or `PGSSLROOTCERT`).
    pub root: Option<PathBuf>,
}

impl Settings {
    /// The root CA file to check the server against: the one given, else libpq's default
    /// `~/.postgresql/root.crt`.
    pub fn root_file(&self) -> Option<PathBuf> {
        self.root
            .clone()
            .or_else(|| Some(dirs::home_dir()?.join(".postgresql").join("root.crt")))
    }
}

/// What checks the server's certificate, as [`Settings`] say.
#[derive(Debug)]
enum Check {
    /// Any certificate (`require`/`prefer` without a root CA file). The handshake's signatures
    /// are still verified: the session is encrypted, only the peer is not authenticated.
    Nothing(Arc<CryptoProvider>),
    /// The chain to the root CA file, not the host name (`verify-ca`).
    Chain(Arc<WebPkiServerVerifier>),
}

impl ServerCertVerifier for Check {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self {
            Check::Nothing(_) => Ok(ServerCertVerified::assertion()),
            // The chain is checked before the name: a name error means the chain is good.
            Check::Chain(v) => {
                match v.verify_server_cert(
                    end_entity,
                    intermediates,
                    server_name,
                    ocsp_response,
                    now,
                ) {
                    Err(rustls::Error::InvalidCertificate(
                        CertificateError::NotValidForName
                        | CertificateError::NotValidForNameContext { .. },
                    )) => Ok(ServerCertVerified::assertion()),
                    other => other,
                }
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        match self {
            Check::Nothing(p) => rustls::crypto::verify_tls12_signature(
                message,
                cert,
                dss,
                &p.signature_verification_algorithms,
            ),
            Check::Chain(v) => v.verify_tls12_signature(message, cert, dss),
        }
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        match self {
            Check::Nothing(p) => rustls::crypto::verify_tls13_signature(
                message,
                cert,
                dss,
                &p.signature_verification_algorithms,
            ),
            Check::Chain(v) => v.verify_tls13_signature(message, cert, dss),
        }
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        match self {
            Check::Nothing(p) => p.signature_verification_algorithms.supported_schemes(),
            Check::Chain(v) => v.supported_verify_schemes(),
        }
    }
}

/// The root CA certificates in `file` (PEM).
fn roots(file: &Path) -> Result<RootCertStore, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(file)
        .map_err(|e| format!("cannot read the root CA file {}: {e}", file.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("the root CA file {} is not PEM: {e}", file.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "the root CA file {} holds no certificate",
            file.display()
        ));
    }
    let mut store = RootCertStore::empty();
    let (_, bad) = store.add_parsable_certificates(certs);
    if store.is_empty() {
        return Err(format!(
            "the root CA file {} holds no usable CA certificate ({bad} refused)",
            file.display()
        ));
    }
    Ok(store)
}

/// The rustls client configuration for `s` (not for `disable`). Errors are one line.
pub fn client_config(s: &Settings) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(crate::platform::tls::provider());
    let root = s.root_file().filter(|f| f.exists());
    let verifier: Arc<dyn ServerCertVerifier> = match (s.mode, root) {
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            let file = s.root_file().map_or_else(
                || "~/.postgresql/root.crt".into(),
                |f| f.display().to_string(),
            );
            return Err(format!(
                "sslmode={} checks the server's certificate against a root CA file, and {file} does not exist (give one with sslrootcert=FILE)",
                s.mode.as_str()
            ));
        }
        (_, None) => Arc::new(Check::Nothing(provider.clone())),
        (mode, Some(file)) => {
            let webpki = WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots(&file)?),
                provider.clone(),
            )
            .build()
            .map_err(|e| format!("the root CA file {}: {e}", file.display()))?;
            if mode == SslMode::VerifyFull {
                webpki
            } else {
                Arc::new(Check::Chain(webpki))
            }
        }
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(config)
}

/// The TLS failure in a connection error, said for a user: the certificate's fault (wrong CA,
/// wrong host name, expired), or a server that offers no TLS. `None` when `e` is not about TLS.
pub fn explain(e: &postgres::Error, s: &Settings, host: &str) -> Option<String> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut any_tls = e.to_string().contains("TLS");
    while let Some(err) = cur {
        let rustls_err = err.downcast_ref::<rustls::Error>().or_else(|| {
            err.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(r) = rustls_err {
            return Some(certificate_text(r, s, host));
        }
        let text = err.to_string();
        if text.contains("server does not support TLS") {
            return Some(format!(
                "the server does not offer TLS (its ssl setting is off) and sslmode={} needs it",
                s.mode.as_str()
            ));
        }
        any_tls |= text.contains("TLS");
        cur = err.source();
    }
    any_tls.then(|| {
        let why = std::error::Error::source(e).map_or_else(|| e.to_string(), |s| s.to_string());
        format!("the TLS handshake failed ({why})")
    })
}

fn certificate_text(r: &rustls::Error, s: &Settings, host: &str) -> String {
    let root = s
        .root_file()
        .map_or_else(|| "the root CA file".into(), |f| f.display().to_string());
    match r {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => format!(
            "the server's certificate is not signed by a CA in {root} (sslmode={}): the wrong CA file, or not the server meant",
            s.mode.as_str()
        ),
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => format!(
            "the server's certificate is not valid for the host name \"{host}\" (sslmode=verify-full checks it; {r})"
        ),
        rustls::Error::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. },
        ) => format!("the server's certificate has expired ({r})"),
        rustls::Error::InvalidCertificate(_) => {
            format!("the server's certificate is refused ({r})")
        }
        other => format!("the TLS handshake failed ({other})"),
    }
}

/// Whether the session is encrypted, as the server reports it (`pg_stat_ssl`): e.g.
/// `TLSv1.3 (TLS_AES_256_GCM_SHA384)`, or `not encrypted`.
pub fn read_back(client: &mut postgres::Client) -> Result<String, postgres::Error> {
    let row = client.query_opt(
        "SELECT ssl, version, cipher FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
        &[],
    )?;
    Ok(match row {
        Some(r) if r.get::<_, bool>(0) => format!(
            "encrypted, {} ({})",
            r.get::<_, Option<String>>(1).unwrap_or_default(),
            r.get::<_, Option<String>>(2).unwrap_or_default()
        ),
        Some(_) => "not encrypted".into(),
        None => "not known (the server does not report it)".into(),
    })
}
