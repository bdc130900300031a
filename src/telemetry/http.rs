//! OTLP/HTTP's one request: a POST of the encoded spans to the collector, over a plain TCP
//! connection, within a deadline. `http://` only: an `https://` collector is reached through a
//! local Collector or agent (docs/organisations.md), which keeps TLS out of a binary that starts
//! for every tool call.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs as _};
use std::time::Instant;

/// Where the spans are posted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The host as written (for `Host:`), without brackets for IPv6.
    pub host: String,
    pub port: u16,
    /// The path and query, starting with `/`.
    pub path: String,
    /// The URL as given, for messages.
    pub url: String,
}

impl Endpoint {
    /// Reads `http://host[:port][/path]`.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let rest = if let Some(rest) = strip_prefix_ignore_case(url, "http://") {
            rest
        } else if strip_prefix_ignore_case(url, "https://").is_some() {
            return Err(format!(
                "the endpoint {url} is https, and this dispatcher speaks plain http only; point it at a local OpenTelemetry Collector (http://127.0.0.1:4318), which can forward over TLS"
            ));
        } else {
            return Err(format!(
                "the endpoint {url:?} is not an http:// URL, such as http://127.0.0.1:4318"
            ));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(at) if rest.as_bytes()[at] == b'/' => (&rest[..at], rest[at..].to_string()),
            Some(at) => (&rest[..at], format!("/{}", &rest[at..])),
            None => (rest, "/".to_string()),
        };
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("the endpoint {url:?} has an unclosed [ in its host"))?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(format!("the endpoint {url:?} has no host"));
        }
        let port = match port {
            None | Some("") => 80,
            Some(port) => port
                .parse()
                .map_err(|_| format!("the endpoint {url:?} has an invalid port {port:?}"))?,
        };
        Ok(Endpoint {
            host: host.to_string(),
            port,
            path,
            url: url.to_string(),
        })
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// The endpoint's addresses when they need no name resolution: an IP address, or `localhost`
/// (the loopback addresses, RFC 6761). A post to them is bounded by its socket timeouts alone.
pub fn literal_addrs(endpoint: &Endpoint) -> Option<Vec<SocketAddr>> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    if endpoint.host.eq_ignore_ascii_case("localhost") {
        return Some(vec![
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), endpoint.port),
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), endpoint.port),
        ]);
    }
    let ip: IpAddr = endpoint.host.parse().ok()?;
    Some(vec![SocketAddr::new(ip, endpoint.port)])
}

/// The endpoint's addresses. Name resolution reads the environment, so a process that changes
/// its environment while it exports (`serve`) resolves once, before, on its one thread.
pub fn resolve(endpoint: &Endpoint) -> Result<Vec<SocketAddr>, String> {
    Ok((endpoint.host.as_str(), endpoint.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", endpoint.host))?
        .collect())
}

/// Posts `body` to `endpoint` (at `addrs`, when resolved already), giving up at `deadline`;
/// `Ok` when the collector answered 2xx.
pub fn post(
    endpoint: &Endpoint,
    addrs: Option<&[SocketAddr]>,
    headers: &[(String, String)],
    content_type: &str,
    body: &[u8],
    deadline: Instant,
) -> Result<(), String> {
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| "timed out".to_string())
    };
    let resolved;
    let addrs = match addrs {
        Some(addrs) => addrs,
        None => {
            resolved = match literal_addrs(endpoint) {
                Some(addrs) => addrs,
                None => resolve(endpoint)?,
            };
            &resolved
        }
    };
    let mut last = format!("{} resolves to no address", endpoint.host);
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(addr, left()?) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("cannot connect to {addr}: {e}"),
        }
    }
    let mut stream = stream.ok_or(last)?;
    let _ = stream.set_nodelay(true);
    let host = if endpoint.host.contains(':') {
        format!("[{}]:{}", endpoint.host, endpoint.port)
    } else {
        format!("{}:{}", endpoint.host, endpoint.port)
    };
    let mut request = format!(
        "POST {} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: levelcode-hooks/{}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        endpoint.path,
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    for (key, value) in headers {
        request.push_str(key);
        request.push_str(": ");
        request.push_str(value);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    stream
        .set_write_timeout(Some(left()?))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(&bytes)
        .map_err(|e| format!("cannot send to {}: {e}", endpoint.url))?;
    // The status line is all that is needed.
    let mut head = [0u8; 256];
    let mut got = 0;
    while !head[..got].windows(2).any(|w| w == b"\r\n") && got < head.len() {
        stream
            .set_read_timeout(Some(left()?))
            .map_err(|e| e.to_string())?;
        match stream.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err("timed out waiting for the collector's answer".into())
            }
            Err(e) => return Err(format!("cannot read the collector's answer: {e}")),
        }
    }
    let line = String::from_utf8_lossy(&head[..got]);
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok());
    match status {
        Some(code) if (200..300).contains(&code) => Ok(()),
        Some(code) => Err(format!("the collector at {} answered {code}", endpoint.url)),
        None => Err(format!(
            "the collector at {} gave no HTTP answer",
            endpoint.url
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_as_urls_do() {
        let e = Endpoint::parse("http://127.0.0.1:4318/v1/traces").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.path.as_str()),
            ("127.0.0.1", 4318, "/v1/traces")
        );
        let e = Endpoint::parse("HTTP://collector").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.path.as_str()),
            ("collector", 80, "/")
        );
        let e = Endpoint::parse("http://[::1]:9/x?y=1").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.path.as_str()),
            ("::1", 9, "/x?y=1")
        );
        assert!(Endpoint::parse("http://:80/").is_err());
        assert!(Endpoint::parse("http://h:port/").is_err());
        assert!(Endpoint::parse("collector:4318").is_err());
        assert!(Endpoint::parse("https://c")
            .unwrap_err()
            .contains("plain http"));
    }
}
