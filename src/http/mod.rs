//! The one HTTP client of the dispatcher (contract §18, §19): http handlers and the
//! OpenTelemetry export post through it. It is `ureq`, blocking and HTTP/1.1, with TLS by
//! `rustls`, verified against the system's certificates as OpenSSL finds them
//! (`SSL_CERT_FILE` / `SSL_CERT_DIR` first, read in `crate::environment`), or against a file of
//! certificates a caller names (the export's `OTEL_EXPORTER_OTLP_CERTIFICATE`).
//!
//! A request is a POST with one deadline for the whole exchange (name, connection, TLS, request,
//! answer), no redirect followed, no proxy, and the answer's body read up to a limit and not past
//! it. Nothing is built until the first request: a dispatch that posts nothing pays nothing, and
//! the certificates are read only for the first `https://` request of the process.

mod roots;

use std::io::Read as _;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use ureq::Agent;

pub use roots::Roots;

/// The size of a connection's input and output buffers, and the most an answer's head may be.
const BUFFER: usize = 16 * 1024;

/// The `User-Agent` of every request: the dispatcher and its version.
pub const USER_AGENT: &str = concat!("levelcode-hooks/", env!("CARGO_PKG_VERSION"));

/// One POST.
pub struct Post<'a> {
    pub url: &'a str,
    /// Headers besides `Content-Type` and `User-Agent`, as `(name, value)`.
    pub headers: &'a [(String, String)],
    pub content_type: &'a str,
    /// `Content-Encoding` of `body`, when it is encoded (`gzip`).
    pub encoding: Option<&'a str>,
    pub body: &'a [u8],
    /// For the whole exchange.
    pub timeout: Duration,
    /// How much of the answer's body is kept; the rest is not read.
    pub limit: usize,
    /// The certificates a `https://` URL is verified against.
    pub roots: &'a Roots,
}

/// The answer to a POST.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    /// The first `limit` bytes of the body.
    pub body: Vec<u8>,
    /// The body went on past `limit`: the rest was not read.
    pub truncated: bool,
}

/// Why a POST got no answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    /// The deadline passed first.
    Timeout,
    /// No answer, for this reason (a lowercase fragment).
    Other(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Timeout => f.write_str("timed out"),
            Failure::Other(why) => f.write_str(why),
        }
    }
}

/// A URL's parts as the client and the policies read them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub https: bool,
    /// Without the brackets of an IPv6 address.
    pub host: String,
}

impl Url {
    /// Reads `url`: an absolute `http://` or `https://` URL with a host.
    pub fn parse(url: &str) -> Result<Url, String> {
        let scheme = url.split_once("://").map(|(s, _)| s);
        if !scheme
            .is_some_and(|s| s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https"))
        {
            return Err(format!("{url:?} is not an http:// or https:// URL"));
        }
        let uri: ureq::http::Uri = url
            .parse()
            .map_err(|e| format!("{url:?} is not a URL ({e})"))?;
        let https = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("https") => true,
            Some(s) if s.eq_ignore_ascii_case("http") => false,
            _ => return Err(format!("{url:?} is not an http:// or https:// URL")),
        };
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("{url:?} names no host"))?;
        Ok(Url {
            https,
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
        })
    }

    /// Returns true if and only if the host is this machine's loopback: `localhost` or an
    /// address of 127.0.0.0/8 or `::1`.
    pub fn is_loopback(&self) -> bool {
        self.host.eq_ignore_ascii_case("localhost")
            || self.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

/// The agents, one per set of certificates, built at their first request and kept: `serve`
/// reuses their connections.
static AGENTS: OnceLock<Mutex<Vec<(Roots, Agent)>>> = OnceLock::new();

/// Lets every kept connection go (a process about to be copied by `fork`: a copy must not
/// share a connection with another, which would mix their requests on one socket).
pub fn drop_connections() {
    if let Some(agents) = AGENTS.get() {
        agents
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }
}

fn agent(roots: &Roots) -> Result<Agent, String> {
    let agents = AGENTS.get_or_init(|| Mutex::new(Vec::new()));
    let mut agents = agents
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, agent)) = agents.iter().find(|(r, _)| r == roots) {
        return Ok(agent.clone());
    }
    let certificates = roots.load()?;
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::Specific(Arc::new(certificates)))
        .build();
    let config = Agent::config_builder()
        .tls_config(tls)
        .proxy(None)
        .max_redirects(0)
        .http_status_as_error(false)
        .user_agent(USER_AGENT)
        .accept("")
        .accept_encoding("")
        // The defaults (128 KiB each, zeroed) cost a one-shot export more than the rest of
        // its request (docs/BENCHMARKS.md); a request's head and an answer's head are small,
        // and a body passes through in pieces.
        .input_buffer_size(BUFFER)
        .output_buffer_size(BUFFER)
        .max_response_header_size(BUFFER)
        .build();
    let agent = Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::new(),
        Literal::default(),
    );
    agents.push((roots.clone(), agent.clone()));
    Ok(agent)
}

/// Resolves an address written as one (`127.0.0.1`, `[::1]`) at once, and `localhost` on the
/// spot from the system's hosts file: `ureq`'s own resolver starts a thread for every name when
/// a request has a deadline, and on a loaded machine that thread's start cost a one-shot export
/// about a millisecond (docs/BENCHMARKS.md). Any other name goes to it, and its deadline.
#[derive(Debug, Default)]
struct Literal(ureq::unversioned::resolver::DefaultResolver);

impl ureq::unversioned::resolver::Resolver for Literal {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let host = uri.host().unwrap_or_default();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("https") => 443,
            _ => 80,
        });
        let found: Vec<std::net::SocketAddr> = if let Ok(ip) = bare.parse::<IpAddr>() {
            vec![std::net::SocketAddr::new(ip, port)]
        } else if bare.eq_ignore_ascii_case("localhost") {
            use std::net::ToSocketAddrs as _;
            ("localhost", port)
                .to_socket_addrs()
                .map_err(ureq::Error::Io)?
                .collect()
        } else {
            return self.0.resolve(uri, config, timeout);
        };
        let mut addrs = self.empty();
        for addr in found.into_iter().take(16) {
            addrs.push(addr);
        }
        if addrs.is_empty() {
            return Err(ureq::Error::HostNotFound);
        }
        Ok(addrs)
    }
}

/// Posts `post`; the answer, whatever its status, or why there was none.
pub fn post(post: &Post<'_>) -> Result<Answer, Failure> {
    let url = Url::parse(post.url).map_err(Failure::Other)?;
    // A plain request needs no certificate: the agent of no roots takes it.
    let roots = if url.https { post.roots } else { &Roots::None };
    let agent = agent(roots).map_err(Failure::Other)?;
    let mut request = agent
        .post(post.url)
        .config()
        .timeout_global(Some(post.timeout))
        .build()
        .header("Content-Type", post.content_type);
    if let Some(encoding) = post.encoding {
        request = request.header("Content-Encoding", encoding);
    }
    for (name, value) in post.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let response = request.send(post.body).map_err(|e| failure(e, &url))?;
    let status = response.status().as_u16();
    let mut body = Vec::new();
    let limit = u64::try_from(post.limit).unwrap_or(u64::MAX);
    let mut reader = response
        .into_body()
        .into_with_config()
        .limit(u64::MAX)
        .reader()
        .take(limit + 1);
    reader
        .read_to_end(&mut body)
        .map_err(|e| failure(ureq::Error::Io(e), &url))?;
    let truncated = body.len() > post.limit;
    body.truncate(post.limit);
    Ok(Answer {
        status,
        body,
        truncated,
    })
}

/// A client error as a lowercase fragment that says what to look at.
fn failure(error: ureq::Error, url: &Url) -> Failure {
    use ureq::Error as E;
    let host = &url.host;
    match error {
        E::Timeout(_) => Failure::Timeout,
        E::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => Failure::Timeout,
        E::Io(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            Failure::Other(format!("{host} refused the connection"))
        }
        E::ConnectionFailed => Failure::Other(format!("cannot connect to {host}")),
        E::HostNotFound => Failure::Other(format!("the host {host} was not found")),
        E::Rustls(e) => Failure::Other(format!(
            "TLS with {host} failed: {e} (the certificates trusted are the system's, or those SSL_CERT_FILE and SSL_CERT_DIR name)"
        )),
        E::Tls(e) => Failure::Other(format!("TLS with {host} failed: {e}")),
        E::Io(e) if tls_problem(&e.to_string()) => Failure::Other(format!(
            "TLS with {host} failed: {e} (the certificates trusted are the system's, or those SSL_CERT_FILE and SSL_CERT_DIR name)"
        )),
        E::Io(e) => Failure::Other(format!("the exchange with {host} failed: {e}")),
        other => Failure::Other(format!("the exchange with {host} failed: {other}")),
    }
}

/// Returns true if and only if an I/O error's text is rustls's, which `ureq` passes on as one.
fn tls_problem(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    text.contains("certificate") || text.contains("handshake") || text.contains("tls")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_read_with_their_host_and_loopback_is_only_this_machine() {
        let url = Url::parse("https://policy.example.com:8443/check").unwrap();
        assert!(url.https);
        assert_eq!(url.host, "policy.example.com");
        assert!(!url.is_loopback());
        for local in [
            "http://127.0.0.1:9/x",
            "http://127.8.0.1/",
            "http://[::1]:80/",
            "HTTP://LOCALHOST:1",
        ] {
            let url = Url::parse(local).unwrap();
            assert!(!url.https && url.is_loopback(), "{local}");
        }
        for other in [
            "http://10.0.0.1/",
            "http://localhost.example/",
            "http://[::2]/",
        ] {
            assert!(!Url::parse(other).unwrap().is_loopback(), "{other}");
        }
        for bad in [
            "ftp://host/",
            "policy:8080",
            "/relative",
            "http://",
            "not a url",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_refused_connection_is_a_failure_that_names_the_host() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}/");
        let failed = post(&Post {
            url: &url,
            headers: &[],
            content_type: "application/json",
            encoding: None,
            body: b"{}",
            timeout: Duration::from_secs(5),
            limit: 10,
            roots: &Roots::System,
        })
        .unwrap_err();
        assert!(failed.to_string().contains("127.0.0.1"), "{failed}");
    }
}
