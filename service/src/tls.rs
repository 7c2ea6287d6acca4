//! TLS for the API (rustls, with the ring provider): the certificate chain and the
//! private key from the PEM files of `[tls]`, loaded at start and again on SIGHUP.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;

use crate::config::{ConfigError, Tls};

fn err(field: &str, path: &Path, message: impl std::fmt::Display) -> ConfigError {
    ConfigError { file: path.display().to_string(), message: format!("{field}: {message}") }
}

/// The server's TLS configuration from `tls`'s files. A key readable by others is
/// refused; so is a certificate file with no certificate, or a key that does not fit it.
pub fn load(tls: &Tls) -> Result<Arc<ServerConfig>, ConfigError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&tls.cert)
        .map_err(|e| err("tls.cert", &tls.cert, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| err("tls.cert", &tls.cert, e))?;
    if certs.is_empty() {
        return Err(err("tls.cert", &tls.cert, "no PEM certificate in the file"));
    }
    let mode = std::fs::metadata(&tls.key).map_err(|e| err("tls.key", &tls.key, e))?.permissions().mode() & 0o777;
    if mode & 0o007 != 0 {
        return Err(err(
            "tls.key",
            &tls.key,
            format!("the private key is readable by others (mode {mode:04o}); `chmod 600` it (or 640 for a group)"),
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&tls.key).map_err(|e| err("tls.key", &tls.key, e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| err("tls", &tls.cert, e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| err("tls.key", &tls.key, format!("does not fit the certificate: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
