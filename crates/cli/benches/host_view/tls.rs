//! `TLS=1`: the mock model served over HTTPS, HTTP/2 offered first (ALPN
//! `h2`, `http/1.1`), with a leaf certificate for 127.0.0.1 and
//! `localhost` signed by a throwaway CA made at start; the server trusts
//! that CA through `SSL_CERT_FILE` (reqwest's rustls platform verifier
//! reads its roots with rustls-native-certs, which honours it). The mock
//! counts the requests it answers by HTTP version.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// Requests the TLS mock answered over HTTP/1.1 and over HTTP/2; its
/// connections open now and the most open at once since [`reset_peak`].
static HTTP1: AtomicUsize = AtomicUsize::new(0);
static HTTP2: AtomicUsize = AtomicUsize::new(0);
static OPEN: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Streams the mock allows on one HTTP/2 connection, as a real provider
/// caps them (nginx's default; hyper's own is 200): past it the server
/// opens another connection lane (`rtc_llm::lanes`).
pub const STREAMS: u32 = 128;

/// The requests answered so far: (HTTP/1.1, HTTP/2).
pub fn versions() -> (usize, usize) {
    (HTTP1.load(Ordering::Relaxed), HTTP2.load(Ordering::Relaxed))
}

/// The most connections open at once since [`reset_peak`]. (A burst to a
/// new client opens a TLS connection per request until one of them has
/// negotiated `h2`; reqwest drops the others right after their handshake.)
pub fn peak_connections() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// The connections open now.
pub fn open_connections() -> usize {
    OPEN.load(Ordering::Relaxed)
}

/// Count the peak from the connections open now.
pub fn reset_peak() {
    PEAK.store(OPEN.load(Ordering::Relaxed), Ordering::Relaxed);
}

async fn count(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if req.version() == axum::http::Version::HTTP_2 {
        HTTP2.fetch_add(1, Ordering::Relaxed);
    } else {
        HTTP1.fetch_add(1, Ordering::Relaxed);
    }
    next.run(req).await
}

/// Serve `app` over TLS on 127.0.0.1; returns its base URL
/// (`https://127.0.0.1:PORT/v1`) and the CA's PEM file, written in `dir`.
pub async fn serve(app: axum::Router, dir: &Path) -> anyhow::Result<(String, PathBuf)> {
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "rtc-agent bench test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate()?;
    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])?;
    leaf.distinguished_name
        .push(DnType::CommonName, "localhost");
    leaf.use_authority_key_identifier_extension = true;
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer)?;
    let ca_file = dir.join("bench-ca.pem");
    std::fs::write(&ca_file, ca_cert.pem())?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf_cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

    let app = app.layer(axum::middleware::from_fn(count));
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http2().max_concurrent_streams(STREAMS);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let open = OPEN.fetch_add(1, Ordering::Relaxed) + 1;
            PEAK.fetch_max(open, Ordering::Relaxed);
            let (acceptor, app, builder) = (acceptor.clone(), app.clone(), builder.clone());
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(tcp).await {
                    let _ = builder
                        .serve_connection(TokioIo::new(tls), TowerToHyperService::new(app))
                        .await;
                }
                OPEN.fetch_sub(1, Ordering::Relaxed);
            });
        }
    });
    Ok((format!("https://{addr}/v1"), ca_file))
}
