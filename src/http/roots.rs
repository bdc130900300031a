//! The certificates a `https://` request is verified against: the system's, found as OpenSSL
//! finds them (`SSL_CERT_FILE` and `SSL_CERT_DIR` when set, else the system's bundle, by
//! `rustls-native-certs`), or those of one PEM file a caller names.

use std::path::{Path, PathBuf};

use ureq::tls::{Certificate, PemItem};

/// Which certificates to trust.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Roots {
    /// None: for plain `http://`, which never verifies one.
    None,
    /// The system's (contract §19).
    System,
    /// Those of this PEM file only (the export's `OTEL_EXPORTER_OTLP_CERTIFICATE`).
    File(PathBuf),
}

impl Roots {
    /// The certificates, read now; an error when there are none to trust.
    pub(super) fn load(&self) -> Result<Vec<Certificate<'static>>, String> {
        match self {
            Roots::None => Ok(Vec::new()),
            Roots::File(path) => {
                let certs = pem(path)?;
                if certs.is_empty() {
                    return Err(format!("{} holds no PEM certificate", path.display()));
                }
                Ok(certs)
            }
            Roots::System => {
                let (file, dir) = crate::environment::ssl_cert_paths();
                if file.is_some() || dir.is_some() {
                    return named(file, dir);
                }
                let found = rustls_native_certs::load_native_certs();
                let certs: Vec<Certificate<'static>> = found
                    .certs
                    .iter()
                    .map(|der| Certificate::from_der(der.as_ref()).to_owned())
                    .collect();
                if certs.is_empty() {
                    let why = found
                        .errors
                        .first()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default();
                    return Err(format!(
                        "no system certificates were found{why}; set SSL_CERT_FILE to a PEM bundle"
                    ));
                }
                Ok(certs)
            }
        }
    }
}

/// The certificates `SSL_CERT_FILE` and `SSL_CERT_DIR` name, as OpenSSL reads them: one PEM
/// file, and a folder of PEM files.
fn named(file: Option<&Path>, dir: Option<&Path>) -> Result<Vec<Certificate<'static>>, String> {
    let mut certs = Vec::new();
    if let Some(file) = file {
        certs.extend(pem(file).map_err(|e| format!("SSL_CERT_FILE: {e}"))?);
    }
    if let Some(dir) = dir {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| format!("SSL_CERT_DIR: cannot read {}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            // A file that is not PEM (an index, say) is passed over, as OpenSSL does.
            if let Ok(found) = pem(&entry.path()) {
                certs.extend(found);
            }
        }
    }
    if certs.is_empty() {
        return Err(
            "SSL_CERT_FILE and SSL_CERT_DIR name no PEM certificate; no https:// request can be verified"
                .into(),
        );
    }
    Ok(certs)
}

/// The certificates of one PEM file.
fn pem(path: &Path) -> Result<Vec<Certificate<'static>>, String> {
    let bytes = crate::fs::read_regular(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(bytes.as_bytes()) {
        match item {
            Ok(PemItem::Certificate(cert)) => certs.push(cert),
            Ok(_) => {}
            Err(e) => return Err(format!("{} is not PEM: {e}", path.display())),
        }
    }
    Ok(certs)
}
