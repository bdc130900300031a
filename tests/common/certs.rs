//! A certificate authority made for one test, and a server certificate it signed for
//! `localhost` and 127.0.0.1, by the `openssl` command: what an HTTPS receiver on loopback
//! presents, and what `SSL_CERT_FILE` (or the export's `OTEL_EXPORTER_OTLP_CERTIFICATE`) names
//! for the dispatcher to trust it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{require, runs};

/// The files of a test's authority.
pub struct Certs {
    /// The authority's certificate: what the client trusts.
    pub ca: PathBuf,
    /// The server's certificate chain and key.
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("openssl starts");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Certs {
    /// Makes them in `dir`; `None` when there is no `openssl` and the machine says to skip.
    pub fn make(dir: &Path) -> Option<Certs> {
        if !require(
            "openssl",
            runs("openssl", &["version"]),
            "the openssl command, which makes the tests' certificate authority",
        ) {
            return None;
        }
        std::fs::create_dir_all(dir).unwrap();
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        let mut ca = vec!["req", "-x509"];
        ca.extend(ec);
        ca.extend([
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=levelcode test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
        openssl(dir, &ca);
        let mut csr = vec!["req"];
        csr.extend(ec);
        csr.extend([
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ]);
        openssl(dir, &csr);
        std::fs::write(
            dir.join("server.ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.pem",
                "-days",
                "2",
                "-extfile",
                "server.ext",
            ],
        );
        Some(Certs {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
        })
    }
}
