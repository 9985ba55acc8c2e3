//! Mutual TLS: only holders of a certificate from the cluster's CA get in.
//!
//! Every connection — node to node, client to node — is TLS 1.2/1.3 (rustls) in which
//! **both** sides present a certificate signed by the cluster's CA. A node's listener
//! completes the handshake before it reads a single frame: a peer or client without a
//! valid certificate is refused there (and the refusal is logged with its address), so
//! no Raft message or write of it is ever read. [`make_certs`] makes a throwaway CA and
//! certificates for tests and local use (`sluice cluster certs`).

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::net::TcpStream;

/// A node's or client's TLS identity: the cluster's CA, and its own certificate and key.
#[derive(Clone)]
pub struct Tls {
    server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
}

fn bad(what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("{what}: {e}"))
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Tls {
    /// From PEM text: the CA certificate(s), this side's certificate chain, its key.
    pub fn from_pem(ca: &[u8], cert: &[u8], key: &[u8]) -> io::Result<Tls> {
        let mut roots = RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(ca) {
            roots
                .add(c.map_err(|e| bad("CA certificate", e))?)
                .map_err(|e| bad("CA certificate", e))?;
        }
        if roots.is_empty() {
            return Err(bad("CA certificate", "no certificate in it"));
        }
        let roots = Arc::new(roots);
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
            .collect::<Result<_, _>>()
            .map_err(|e| bad("certificate", e))?;
        if chain.is_empty() {
            return Err(bad("certificate", "no certificate in it"));
        }
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| bad("key", e))?;
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider())
            .build()
            .map_err(|e| bad("CA certificate", e))?;
        let server = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| bad("TLS", e))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(|e| bad("certificate and key", e))?;
        let client = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| bad("TLS", e))?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .map_err(|e| bad("certificate and key", e))?;
        Ok(Tls {
            server: Arc::new(server),
            client: Arc::new(client),
        })
    }

    /// From PEM files.
    pub fn from_files(ca: &Path, cert: &Path, key: &Path) -> io::Result<Tls> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
        };
        Tls::from_pem(&read(ca)?, &read(cert)?, &read(key)?)
    }

    /// Completes the server side of a handshake on an accepted connection.
    pub(crate) async fn accept(
        &self,
        stream: TcpStream,
    ) -> io::Result<tokio_rustls::server::TlsStream<TcpStream>> {
        tokio_rustls::TlsAcceptor::from(self.server.clone())
            .accept(stream)
            .await
    }

    /// Completes the client side of a handshake with the node at `addr`.
    pub(crate) async fn connect(
        &self,
        addr: &str,
        stream: TcpStream,
    ) -> io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let name = match addr.parse::<SocketAddr>() {
            Ok(a) => ServerName::IpAddress(a.ip().into()),
            Err(_) => {
                let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
                ServerName::try_from(host.to_string()).map_err(|e| bad("address", e))?
            }
        };
        tokio_rustls::TlsConnector::from(self.client.clone())
            .connect(name, stream)
            .await
    }
}

/// What [`make_certs`] wrote.
#[derive(Debug, Clone)]
pub struct CertFiles {
    /// The CA's certificate (`ca.pem`).
    pub ca: std::path::PathBuf,
    /// Each name's certificate and key (`NAME.pem`, `NAME.key`), in the order given.
    pub identities: Vec<(String, std::path::PathBuf, std::path::PathBuf)>,
}

/// Makes a throwaway CA in `dir` (`ca.pem`; its key is not kept) and, for each of
/// `names`, a certificate and key signed by it, valid for `localhost` and 127.0.0.1
/// (`NAME.pem`, `NAME.key`). For tests and local clusters only: a real deployment uses
/// its own CA.
pub fn make_certs(dir: &Path, names: &[&str]) -> io::Result<CertFiles> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let e = |e: rcgen::Error| io::Error::other(format!("making certificates: {e}"));
    std::fs::create_dir_all(dir)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(e)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "sluice throwaway cluster CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().map_err(e)?;
    let ca_cert = ca_params.self_signed(&ca_key).map_err(e)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, ca_cert.pem())?;
    let mut identities = Vec::new();
    for name in names {
        let mut p = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .map_err(e)?;
        p.distinguished_name.push(DnType::CommonName, *name);
        p.use_authority_key_identifier_extension = true;
        p.extended_key_usages = vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let key = KeyPair::generate().map_err(e)?;
        let cert = p.signed_by(&key, &issuer).map_err(e)?;
        let (cp, kp) = (
            dir.join(format!("{name}.pem")),
            dir.join(format!("{name}.key")),
        );
        std::fs::write(&cp, cert.pem())?;
        std::fs::write(&kp, key.serialize_pem())?;
        identities.push((name.to_string(), cp, kp));
    }
    Ok(CertFiles { ca, identities })
}
