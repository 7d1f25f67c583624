//! Mutual TLS for the link: each side presents its certificate and accepts the peer only if
//! its certificate chains to the configured CA or is exactly the pinned certificate, and, when
//! an expected peer name is configured, carries that name: the client checks the server's
//! certificate against `server_name` (rustls' standard server name check), the server checks
//! the client's DNS subject alternative names against `peer`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use thiserror::Error;

use crate::config::TlsConfig;
use crate::names::without_trailing_dot;

/// Application protocol negotiated by ALPN; a peer speaking anything else is refused.
pub const ALPN: &[u8] = b"hmw-cm/1";

/// Certificates or keys that cannot be used.
#[derive(Debug, Error)]
pub enum TlsError {
    /// A PEM file could not be read or holds nothing usable.
    #[error("cannot load {what} from {path}: {reason}")]
    Load {
        /// What was expected.
        what: &'static str,
        /// File.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration rejected: {0}")]
    Rustls(rustls::Error),
    /// The CA-based client verifier could not be built.
    #[error("cannot build client certificate verifier: {0}")]
    Verifier(rustls::server::VerifierBuilderError),
    /// The server name is not a valid DNS name or IP address.
    #[error("invalid server name `{0}` for certificate verification")]
    ServerName(String),
    /// quinn refused the rustls configuration.
    #[error("TLS configuration unusable for QUIC: {0}")]
    Quic(String),
}

// Conversions by hand: a `#[from]` field would also be the error's `source`, and the message
// already includes it (printing the chain would repeat it).
impl From<rustls::Error> for TlsError {
    fn from(e: rustls::Error) -> Self {
        TlsError::Rustls(e)
    }
}

impl From<rustls::server::VerifierBuilderError> for TlsError {
    fn from(e: rustls::server::VerifierBuilderError) -> Self {
        TlsError::Verifier(e)
    }
}

fn load_certs(path: &Path, what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let err = |reason: String| TlsError::Load {
        what,
        path: path.to_owned(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| err(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(e.to_string()))?;
    if certs.is_empty() {
        return Err(err("no CERTIFICATE block found".into()));
    }
    Ok(certs)
}

fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| TlsError::Load {
        what: "private key",
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

/// The peer trust model.
#[derive(Debug, Clone)]
enum Trust {
    Ca(Arc<RootCertStore>),
    Pinned(CertificateDer<'static>),
}

/// Loaded identity and trust, ready to build QUIC client and server configurations.
#[derive(Debug, Clone)]
pub struct TlsMaterial {
    chain: Vec<CertificateDer<'static>>,
    key: Arc<PrivateKeyDer<'static>>,
    trust: Trust,
    provider: Arc<CryptoProvider>,
    expected_client: Option<String>,
}

/// A client certificate that the trust model accepts but that is not the expected peer's.
/// The names are shown quoted and escaped (`{:?}`): a certificate's names are the peer's
/// text, and one with control characters must not forge log lines.
#[derive(Error)]
#[error(
    "the client certificate's names {presented:?} do not include the expected peer {expected:?}"
)]
pub struct PeerNameMismatch {
    /// The configured `peer`.
    pub expected: String,
    /// Subject alternative names of the certificate (DNS names and IP addresses).
    pub presented: Vec<String>,
}

// rustls shows a verifier's own error with `Debug`; make that the readable message.
impl std::fmt::Debug for PeerNameMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The subject alternative names of a certificate that name a host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubjectAltNames {
    /// DNS names, as written in the certificate.
    pub dns: Vec<String>,
    /// IP addresses.
    pub ips: Vec<std::net::IpAddr>,
}

impl SubjectAltNames {
    /// The DNS names and IP addresses of `cert` (none if it does not parse or has none).
    pub fn of(cert: &CertificateDer<'_>) -> Self {
        let mut names = Self::default();
        let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert.as_ref()) else {
            return names;
        };
        let Ok(Some(san)) = parsed.subject_alternative_name() else {
            return names;
        };
        for name in &san.value.general_names {
            match name {
                x509_parser::extensions::GeneralName::DNSName(name) => {
                    names.dns.push(name.to_string())
                }
                x509_parser::extensions::GeneralName::IPAddress(bytes) => {
                    let ip = match bytes.len() {
                        4 => <[u8; 4]>::try_from(*bytes).map(std::net::IpAddr::from).ok(),
                        16 => <[u8; 16]>::try_from(*bytes)
                            .map(std::net::IpAddr::from)
                            .ok(),
                        _ => None,
                    };
                    names.ips.extend(ip);
                }
                _ => {}
            }
        }
        names
    }

    /// Whether `name` is among the DNS names (ASCII case insensitive, as DNS names compare,
    /// a trailing dot ignored on either side; no wildcards: CM certificates name one CM).
    pub fn has_dns_name(&self, name: &str) -> bool {
        let name = without_trailing_dot(name);
        self.dns
            .iter()
            .any(|dns| without_trailing_dot(dns).eq_ignore_ascii_case(name))
    }
}

/// The subject alternative names of a certificate: DNS names, then IP addresses, as text.
pub fn certificate_names(cert: &CertificateDer<'_>) -> Vec<String> {
    let names = SubjectAltNames::of(cert);
    let mut all = names.dns;
    all.extend(names.ips.iter().map(|ip| ip.to_string()));
    all
}

/// A client verifier that, once the trust model accepted the certificate, also requires the
/// expected peer name in it.
#[derive(Debug)]
struct ExpectedPeer {
    inner: Arc<dyn ClientCertVerifier>,
    name: String,
}

impl ClientCertVerifier for ExpectedPeer {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .inner
            .verify_client_cert(end_entity, intermediates, now)?;
        let names = SubjectAltNames::of(end_entity);
        if names.has_dns_name(&self.name) {
            return Ok(verified);
        }
        let mut presented = names.dns;
        presented.extend(names.ips.iter().map(|ip| ip.to_string()));
        Err(rustls::Error::InvalidCertificate(
            rustls::CertificateError::Other(rustls::OtherError(Arc::new(PeerNameMismatch {
                expected: self.name.clone(),
                presented,
            }))),
        ))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

impl TlsMaterial {
    /// Loads the files named in `config`.
    pub fn load(config: &TlsConfig) -> Result<Self, TlsError> {
        let chain = load_certs(&config.cert, "certificate")?;
        let key = Arc::new(load_key(&config.key)?);
        let trust = match (&config.ca, &config.pinned_peer) {
            (Some(ca), _) => {
                let mut roots = RootCertStore::empty();
                for cert in load_certs(ca, "CA certificate")? {
                    roots.add(cert).map_err(|e| TlsError::Load {
                        what: "CA certificate",
                        path: ca.clone(),
                        reason: e.to_string(),
                    })?;
                }
                Trust::Ca(Arc::new(roots))
            }
            (None, Some(pinned)) => {
                Trust::Pinned(load_certs(pinned, "pinned peer certificate")?.remove(0))
            }
            (None, None) => {
                return Err(TlsError::Load {
                    what: "trust anchor",
                    path: config.cert.clone(),
                    reason: "neither `ca` nor `pinned_peer` configured".into(),
                })
            }
        };
        Ok(Self {
            chain,
            key,
            trust,
            provider: Arc::new(rustls::crypto::ring::default_provider()),
            expected_client: None,
        })
    }

    /// Server side: accept only a client certificate whose DNS subject alternative names
    /// include `name` (in addition to the trust model); `None` accepts any trusted client.
    pub fn expect_client(mut self, name: Option<String>) -> Self {
        self.expected_client = name;
        self
    }

    /// Server side: requires and verifies the client's certificate, TLS 1.3 only (QUIC), no
    /// early data (a client must be verified before its first byte of application data).
    pub fn quic_server_config(&self) -> Result<quinn::crypto::rustls::QuicServerConfig, TlsError> {
        let verifier: Arc<dyn ClientCertVerifier> = match &self.trust {
            Trust::Ca(roots) => {
                WebPkiClientVerifier::builder_with_provider(roots.clone(), self.provider.clone())
                    .build()?
            }
            Trust::Pinned(cert) => Arc::new(PinnedVerifier::new(cert.clone(), &self.provider)),
        };
        let verifier: Arc<dyn ClientCertVerifier> = match &self.expected_client {
            Some(name) => Arc::new(ExpectedPeer {
                inner: verifier,
                name: name.clone(),
            }),
            None => verifier,
        };
        let mut config = rustls::ServerConfig::builder_with_provider(self.provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_client_cert_verifier(verifier)
            .with_single_cert(self.chain.clone(), self.key.clone_key())?;
        config.alpn_protocols = vec![ALPN.to_vec()];
        config.max_early_data_size = 0;
        quinn::crypto::rustls::QuicServerConfig::try_from(config)
            .map_err(|e| TlsError::Quic(e.to_string()))
    }

    /// Client side: presents this CM's certificate and verifies the server's.
    pub fn quic_client_config(&self) -> Result<quinn::crypto::rustls::QuicClientConfig, TlsError> {
        let builder = rustls::ClientConfig::builder_with_provider(self.provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])?;
        let builder = match &self.trust {
            Trust::Ca(roots) => builder.with_root_certificates(roots.clone()),
            Trust::Pinned(cert) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(PinnedVerifier::new(
                    cert.clone(),
                    &self.provider,
                ))),
        };
        let mut config = builder.with_client_auth_cert(self.chain.clone(), self.key.clone_key())?;
        config.alpn_protocols = vec![ALPN.to_vec()];
        config.enable_early_data = false;
        quinn::crypto::rustls::QuicClientConfig::try_from(config)
            .map_err(|e| TlsError::Quic(e.to_string()))
    }
}

/// Checks that `name` can name a server in certificate verification.
pub fn check_server_name(name: &str) -> Result<(), TlsError> {
    ServerName::try_from(name.to_owned())
        .map(|_| ())
        .map_err(|_| TlsError::ServerName(name.to_owned()))
}

/// Accepts exactly one certificate (compared byte for byte) and checks that the peer holds
/// its key by verifying the handshake signature.
#[derive(Debug)]
struct PinnedVerifier {
    pinned: CertificateDer<'static>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl PinnedVerifier {
    fn new(pinned: CertificateDer<'static>, provider: &CryptoProvider) -> Self {
        Self {
            pinned,
            algorithms: provider.signature_verification_algorithms,
        }
    }

    fn check(&self, presented: &CertificateDer<'_>) -> Result<(), rustls::Error> {
        if presented.as_ref() == self.pinned.as_ref() {
            Ok(())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }
}

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.check(end_entity)
            .map(|_| ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

impl ClientCertVerifier for PinnedVerifier {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.check(end_entity)
            .map(|_| ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(names: &[&str]) -> CertificateDer<'static> {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(names)
            .unwrap()
            .self_signed(&key)
            .unwrap();
        CertificateDer::from(cert.der().to_vec())
    }

    #[test]
    fn names_are_read_once_matched_without_trailing_dots_and_shown_escaped() {
        let cert = certificate(&["cm-a.", "evil\nWARN forged line", "10.0.0.1", "::1"]);
        let names = SubjectAltNames::of(&cert);
        assert_eq!(names.dns, ["cm-a.", "evil\nWARN forged line"]);
        assert_eq!(
            names.ips,
            [
                "10.0.0.1".parse::<std::net::IpAddr>().unwrap(),
                "::1".parse().unwrap()
            ]
        );
        for name in ["cm-a", "cm-a.", "CM-A"] {
            assert!(names.has_dns_name(name), "{name}");
        }
        assert!(!names.has_dns_name("cm-b"));
        assert!(
            !names.has_dns_name("10.0.0.1"),
            "an IP address is no DNS name"
        );
        assert_eq!(
            certificate_names(&cert),
            ["cm-a.", "evil\nWARN forged line", "10.0.0.1", "::1"]
        );
        let refusal = PeerNameMismatch {
            expected: "cm-b".into(),
            presented: certificate_names(&cert),
        }
        .to_string();
        assert!(!refusal.contains('\n'), "{refusal}");
        assert!(refusal.contains(r#""evil\nWARN forged line""#), "{refusal}");
        assert!(refusal.ends_with(r#"expected peer "cm-b""#), "{refusal}");
        assert_eq!(
            SubjectAltNames::of(&CertificateDer::from(vec![1, 2, 3])),
            SubjectAltNames::default()
        );
    }
}
