//! A `redis-server` that speaks only TLS, with a throwaway CA generated for
//! the test (rcgen), to prove `rediss://` connections work and verify the
//! server's certificate.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

use crate::{free_port, scratch_dir, spawn_server, RedisServer, START_DEADLINE};

/// A TLS-only server and the CA that signed its certificate.
pub struct TlsRedis {
    pub server: RedisServer,
    /// PEM file of the CA (what `REDIS_CA_CERT` points at).
    pub ca_file: PathBuf,
}

impl TlsRedis {
    pub fn start() -> Self {
        crate::require_tls_server();
        let dir = scratch_dir("redis-tls");
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "matchmaking test CA");
        let ca = CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA certificate");
        let server_key = KeyPair::generate().expect("server key");
        let server_params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
                .expect("server params");
        let server_cert = server_params
            .signed_by(&server_key, &ca)
            .expect("server certificate");

        let write = |name: &str, contents: String| {
            let path = dir.join(name);
            std::fs::write(&path, contents).expect("write TLS file");
            path
        };
        let ca_file = write("ca.pem", ca.pem());
        let cert_file = write("server.pem", server_cert.pem());
        let key_file = write("server.key", server_key.serialize_pem());

        let port = free_port(false);
        let (port_s, cert_s, key_s, ca_s) = (
            port.to_string(),
            cert_file.display().to_string(),
            key_file.display().to_string(),
            ca_file.display().to_string(),
        );
        // `--port 0` turns the plain port off: only TLS is served.
        let child = spawn_server(
            port,
            &dir,
            &[],
            &[
                "--port",
                "0",
                "--tls-port",
                &port_s,
                "--tls-cert-file",
                &cert_s,
                "--tls-key-file",
                &key_s,
                "--tls-ca-cert-file",
                &ca_s,
                "--tls-auth-clients",
                "no",
            ],
        );
        let server = RedisServer {
            port,
            child,
            dir,
            launcher: Vec::new(),
        };
        wait_for_tls(port);
        Self { server, ca_file }
    }

    pub fn url(&self) -> String {
        format!("rediss://localhost:{}", self.server.port)
    }
}

/// Waits until the TLS port accepts TCP connections (the handshake itself is
/// what the tests exercise).
fn wait_for_tls(port: u16) {
    let deadline = Instant::now() + START_DEADLINE;
    while std::net::TcpStream::connect_timeout(
        &([127, 0, 0, 1], port).into(),
        Duration::from_millis(200),
    )
    .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "TLS redis-server on port {port} did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
