//! A connection set going without waiting for it: the dispatch starts its handler while the
//! system sets the connection up, instead of after (`std` only offers a `connect` that waits).
//!
//! Linux only, where a blocking write on a connection still being set up waits for it, within
//! the socket's write timeout, and fails with the connection's error ([`Started::finish`]).
//! Elsewhere [`start`] says it cannot, and the caller connects as usual.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::time::Instant;

/// A connection the system may still be setting up, in non-blocking mode.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub struct Started {
    stream: TcpStream,
    pub addr: SocketAddr,
    /// Why the connection failed, when a write said so.
    failed: Option<io::Error>,
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
impl Started {
    /// Writes what of `bytes` the connection takes without waiting; returns how many bytes
    /// went: none while it is still being set up.
    pub fn write_now(&mut self, bytes: &[u8]) -> usize {
        use std::io::Write as _;
        match self.stream.write(bytes) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            // Refused, say: the write took the connection's error, which `finish` gives.
            Err(e) => {
                self.failed = Some(e);
                0
            }
        }
    }

    /// The connection, still in non-blocking mode, once it is up and `bytes` are written (the
    /// rest of the head, when [`Started::write_now`] could not write it all), giving up at
    /// `deadline`.
    pub fn finish(self, bytes: &[u8], deadline: Instant) -> io::Result<TcpStream> {
        use std::io::Write as _;
        if let Some(e) = self.failed {
            return Err(e);
        }
        let mut stream = self.stream;
        if bytes.is_empty() {
            return Ok(stream);
        }
        let left = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(io::ErrorKind::TimedOut)?;
        stream.set_nonblocking(false)?;
        stream.set_write_timeout(Some(left))?;
        // Waits for the connection first (Linux), and fails with its error.
        stream.write_all(bytes).map_err(|e| match e.kind() {
            io::ErrorKind::WouldBlock => io::ErrorKind::TimedOut.into(),
            _ => stream.take_error().ok().flatten().unwrap_or(e),
        })?;
        stream.set_nonblocking(true)?;
        Ok(stream)
    }
}

/// Sets a connection to `addr` going and returns at once.
#[cfg(target_os = "linux")]
pub fn start(addr: SocketAddr) -> io::Result<Started> {
    use std::os::fd::FromRawFd as _;
    let domain = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    // SAFETY: socket(2) with constant arguments; it returns a new descriptor or -1.
    let fd = unsafe {
        libc::socket(
            domain,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is the socket just made, owned by nothing else; the stream closes it.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    let _ = stream.set_nodelay(true);
    let connected = match addr {
        SocketAddr::V4(v4) => {
            let address = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: `address` is a valid sockaddr_in and the length passed is its size.
            unsafe {
                libc::connect(
                    fd,
                    std::ptr::from_ref(&address).cast(),
                    size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            }
        }
        SocketAddr::V6(v6) => {
            let address = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: `address` is a valid sockaddr_in6 and the length passed is its size.
            unsafe {
                libc::connect(
                    fd,
                    std::ptr::from_ref(&address).cast(),
                    size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                )
            }
        }
    };
    if connected != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(Started {
        stream,
        addr,
        failed: None,
    })
}

/// Elsewhere the caller connects as usual.
#[cfg(not(target_os = "linux"))]
pub fn start(_addr: SocketAddr) -> io::Result<Started> {
    Err(io::ErrorKind::Unsupported.into())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Read as _;
    use std::time::Duration;

    #[test]
    fn a_connection_started_carries_what_is_written_and_one_refused_says_so() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut started = start(listener.local_addr().unwrap()).unwrap();
        let head = b"POST / HTTP/1.1\r\n";
        let sent = started.write_now(head);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut stream = started.finish(&head[sent..], deadline).unwrap();
        std::io::Write::write_all(&mut stream, b"rest").unwrap();
        drop(stream);
        let (mut accepted, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        accepted.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"POST / HTTP/1.1\r\nrest");

        let closed = listener.local_addr().unwrap();
        drop((listener, accepted));
        let refused = start(closed).and_then(|s| s.finish(head, deadline));
        assert!(refused.is_err());
    }
}
