//! OTLP/HTTP's one request: a POST of the encoded spans to the collector, over a plain TCP
//! connection, within a deadline, with its length given (`serve`) or its head sent ahead of a
//! body that follows as one chunk ([`Framing`]). `http://` only: an `https://` collector is
//! reached through a local Collector or agent (docs/organisations.md), which keeps TLS out of a
//! binary that starts for every tool call.

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

/// Opens a connection to `endpoint` (at `addrs`, when resolved already), giving up at
/// `deadline`: each address in turn, the first that accepts, which is returned with it.
pub fn connect(
    endpoint: &Endpoint,
    addrs: Option<&[SocketAddr]>,
    deadline: Instant,
) -> Result<(TcpStream, SocketAddr), String> {
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
    for addr in addrs {
        match TcpStream::connect_timeout(addr, left(deadline)?) {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                return Ok((stream, *addr));
            }
            Err(e) => last = format!("cannot connect to {addr}: {e}"),
        }
    }
    Err(last)
}

/// The time left until `deadline`, or "timed out".
fn left(deadline: Instant) -> Result<std::time::Duration, String> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| "timed out".to_string())
}

/// How a request's body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length`: the body is known when the head is written.
    Length(usize),
    /// The head goes first, before the body is known, asking the collector to say
    /// `100 Continue` once it has read and accepted it (RFC 9110 §10.1.1); the body follows as
    /// one chunk ([`chunked`]).
    Announced,
}

/// Appends the head of a POST of spans to `endpoint` to `out`.
pub fn head(
    out: &mut Vec<u8>,
    endpoint: &Endpoint,
    headers: &[(String, String)],
    content_type: &str,
    framing: Framing,
) {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(256);
    let _ = write!(text, "POST {} HTTP/1.1\r\nHost: ", endpoint.path);
    if endpoint.host.contains(':') {
        let _ = write!(text, "[{}]:{}", endpoint.host, endpoint.port);
    } else {
        let _ = write!(text, "{}:{}", endpoint.host, endpoint.port);
    }
    let _ = write!(
        text,
        "\r\nUser-Agent: levelcode-hooks/{}\r\nContent-Type: {content_type}\r\n",
        env!("CARGO_PKG_VERSION"),
    );
    match framing {
        Framing::Length(length) => {
            let _ = write!(text, "Content-Length: {length}\r\n");
        }
        Framing::Announced => {
            text.push_str("Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n")
        }
    }
    text.push_str("Connection: close\r\n");
    for (key, value) in headers {
        text.push_str(key);
        text.push_str(": ");
        text.push_str(value);
        text.push_str("\r\n");
    }
    text.push_str("\r\n");
    out.extend_from_slice(text.as_bytes());
}

/// `body` as the one chunk and the end of an [`Framing::Announced`] request.
pub fn chunked(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 16);
    out.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n0\r\n\r\n");
    out
}

/// Writes `bytes` to `stream`, giving up at `deadline`: each write waits at most the time left,
/// so that a collector that takes a little at a time cannot stretch the wait.
pub fn send(
    stream: &mut TcpStream,
    endpoint: &Endpoint,
    bytes: &[u8],
    deadline: Instant,
) -> Result<(), String> {
    let mut rest = bytes;
    while !rest.is_empty() {
        let slow = || {
            format!(
                "cannot send to {} in time: the collector takes the request too slowly",
                endpoint.url
            )
        };
        let left = left(deadline).map_err(|_| slow())?;
        stream
            .set_write_timeout(Some(left))
            .map_err(|e| e.to_string())?;
        match stream.write(rest) {
            Ok(0) => {
                return Err(format!(
                    "cannot send to {}: the connection was closed",
                    endpoint.url
                ))
            }
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(slow())
            }
            Err(e) => return Err(format!("cannot send to {}: {e}", endpoint.url)),
        }
    }
    Ok(())
}

/// Writes `bytes` to `stream`, in non-blocking mode: at once when the connection takes them
/// all, as it takes a small request; else the rest waiting, giving up at `deadline`. The stream
/// is left in non-blocking mode, whether the send succeeded or not, so that reading what the
/// collector said after a failure cannot wait.
pub fn send_now(
    stream: &mut TcpStream,
    endpoint: &Endpoint,
    bytes: &[u8],
    deadline: Instant,
) -> Result<(), String> {
    let sent = match stream.write(bytes) {
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
        Err(e) => return Err(format!("cannot send to {}: {e}", endpoint.url)),
    };
    if sent == bytes.len() {
        return Ok(());
    }
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    let rest = send(stream, endpoint, &bytes[sent..], deadline);
    stream.set_nonblocking(true).map_err(|e| e.to_string())?;
    rest
}

/// What the collector has said on a connection so far: the status of each complete response
/// head, in order.
#[derive(Default)]
pub struct Answers {
    buffer: Vec<u8>,
    /// The collector closed the connection (or reset it).
    pub closed: bool,
}

/// Bytes of answer kept at most: status lines and headers; bodies are not needed.
const ANSWER_LIMIT: usize = 4096;

impl Answers {
    /// The status of the next complete response head, taken off the buffer.
    pub fn next(&mut self) -> Option<u16> {
        let end = memchr::memmem::find(&self.buffer, b"\r\n\r\n")?;
        let status = std::str::from_utf8(&self.buffer[..end])
            .ok()
            .and_then(|head| head.split_whitespace().nth(1))
            .and_then(|code| code.parse::<u16>().ok())
            .unwrap_or(0);
        self.buffer.drain(..end + 4);
        Some(status)
    }

    /// Reads what has arrived on `stream`, in non-blocking mode, without waiting.
    pub fn read_now(&mut self, stream: &mut TcpStream) {
        self.read(stream);
    }

    /// Waits until a response head is complete (`true`), the connection ends or `deadline`
    /// passes.
    pub fn wait(&mut self, stream: &mut TcpStream, deadline: Instant) -> Result<bool, String> {
        while memchr::memmem::find(&self.buffer, b"\r\n\r\n").is_none() {
            if self.closed {
                return Ok(false);
            }
            stream
                .set_read_timeout(Some(left(deadline)?))
                .map_err(|e| e.to_string())?;
            self.read_once(stream)?;
        }
        Ok(true)
    }

    fn read(&mut self, stream: &mut TcpStream) {
        while !self.closed && self.buffer.len() < ANSWER_LIMIT {
            if self.read_once(stream).is_err() {
                break;
            }
        }
    }

    /// One read; `Err` when nothing came (a timeout, or nothing there without waiting).
    fn read_once(&mut self, stream: &mut TcpStream) -> Result<(), String> {
        let mut chunk = [0u8; 512];
        match stream.read(&mut chunk) {
            Ok(0) => {
                self.closed = true;
                Ok(())
            }
            Ok(n) => {
                if self.buffer.len() < ANSWER_LIMIT {
                    self.buffer.extend_from_slice(&chunk[..n]);
                }
                Ok(())
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err("timed out waiting for the collector's answer".into())
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(()),
            Err(_) => {
                self.closed = true;
                Ok(())
            }
        }
    }
}

/// Sends `request` (head and body) over `stream` and waits for the collector's final answer,
/// giving up at `deadline`; `Ok` when it answered 2xx.
pub fn exchange(
    stream: &mut TcpStream,
    endpoint: &Endpoint,
    request: &[u8],
    deadline: Instant,
) -> Result<(), String> {
    send(stream, endpoint, request, deadline)?;
    let mut answers = Answers::default();
    loop {
        if !answers.wait(stream, deadline)? {
            return Err(format!(
                "the collector at {} gave no HTTP answer",
                endpoint.url
            ));
        }
        match answers.next() {
            // An interim answer (`100 Continue`): the final one follows.
            Some(code) if (100..200).contains(&code) => continue,
            Some(code) => return verdict(endpoint, code),
            None => unreachable!("wait returns true only with a complete head"),
        }
    }
}

/// `Ok` for a 2xx answer, else why the export failed.
pub fn verdict(endpoint: &Endpoint, code: u16) -> Result<(), String> {
    match code {
        200..=299 => Ok(()),
        0 => Err(format!(
            "the collector at {} gave no HTTP answer",
            endpoint.url
        )),
        code => Err(format!("the collector at {} answered {code}", endpoint.url)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_to_a_reader_that_takes_a_little_at_a_time_ends_at_the_deadline() {
        use std::time::Duration;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // About 5 MB a second: each write takes some, none takes all.
        let reader = std::thread::spawn(move || {
            let (mut connection, _) = listener.accept().unwrap();
            let mut buffer = vec![0; 256 << 10];
            while matches!(connection.read(&mut buffer), Ok(n) if n > 0) {
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let mut stream = TcpStream::connect(addr).unwrap();
        // A small send buffer, so that a write is woken for each little the reader takes.
        let size: libc::c_int = 64 << 10;
        // SAFETY: the stream's own descriptor and an int that lives for the call.
        let set = unsafe {
            use std::os::fd::AsRawFd as _;
            libc::setsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&raw const size).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(set, 0);
        let endpoint = Endpoint::parse(&format!("http://{addr}/")).unwrap();
        let bytes = vec![b'x'; 64 << 20];
        let started = Instant::now();
        let sent = send(
            &mut stream,
            &endpoint,
            &bytes,
            started + Duration::from_millis(300),
        );
        let took = started.elapsed();
        drop(stream);
        reader.join().unwrap();
        assert!(sent.unwrap_err().contains("too slowly"));
        // 300 ms, with room for a loaded machine; a wait renewed on each write takes 13 s.
        assert!(took < Duration::from_secs(5), "took {took:?}");
    }

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
