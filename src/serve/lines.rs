//! Request lines from stdin, one at a time: at most [`MAX_BYTES`] of a line are ever kept, and
//! SIGINT, SIGTERM and SIGHUP are noticed while waiting for the next one.

use std::io::{self, Read};

use crate::dispatch::payload::MAX_BYTES;
use crate::signals;

/// How much is read at once, and the buffer's size between long lines.
const CHUNK: usize = 64 * 1024;

/// What the next call to [`Lines::next`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Next<'a> {
    /// A line without its newline (the last line may lack one).
    Line(&'a [u8]),
    /// A line longer than [`MAX_BYTES`]: its first [`MAX_BYTES`] bytes. The rest of it is
    /// skipped without being kept.
    TooLong(&'a [u8]),
    /// End of input.
    End,
    /// A signal arrived while waiting for input.
    Interrupted(i32),
}

/// Splits a byte stream into lines.
pub struct Lines<R> {
    input: R,
    /// Polled together with the signal pipe before each read, so that a signal is never missed
    /// between a check and a blocking read.
    fd: Option<i32>,
    buf: Vec<u8>,
    /// `buf[start..filled]` is what has been read and not yet returned.
    start: usize,
    filled: usize,
    /// No newline in `buf[start..searched]`.
    searched: usize,
    eof: bool,
    /// The line in progress was too long: drop input up to its newline.
    skipping: bool,
}

impl<R: Read> Lines<R> {
    /// `fd` is `input`'s descriptor when it can be polled.
    pub fn new(input: R, fd: Option<i32>) -> Lines<R> {
        Lines {
            input,
            fd,
            buf: vec![0; CHUNK],
            start: 0,
            filled: 0,
            searched: 0,
            eof: false,
            skipping: false,
        }
    }

    pub fn next(&mut self) -> io::Result<Next<'_>> {
        loop {
            if let Some(at) = crate::bytes::find_byte(b'\n', &self.buf[self.searched..self.filled])
            {
                let end = self.searched + at;
                let line = self.start..end;
                self.start = end + 1;
                self.searched = self.start;
                if std::mem::take(&mut self.skipping) {
                    continue;
                }
                if line.len() > MAX_BYTES {
                    return Ok(Next::TooLong(&self.buf[line.start..line.start + MAX_BYTES]));
                }
                return Ok(Next::Line(&self.buf[line]));
            }
            self.searched = self.filled;
            if self.skipping {
                self.start = self.filled;
            } else if self.filled - self.start > MAX_BYTES {
                let line = self.start;
                self.skipping = true;
                self.start = self.filled;
                self.searched = self.filled;
                return Ok(Next::TooLong(&self.buf[line..line + MAX_BYTES]));
            }
            if self.eof {
                if self.start < self.filled && !self.skipping {
                    let line = self.start..self.filled;
                    self.start = self.filled;
                    return Ok(Next::Line(&self.buf[line]));
                }
                return Ok(Next::End);
            }
            self.make_room();
            if let Some(sig) = signals::received() {
                return Ok(Next::Interrupted(sig));
            }
            if let Some(fd) = self.fd {
                signals::wait_readable(fd);
                if let Some(sig) = signals::received() {
                    return Ok(Next::Interrupted(sig));
                }
            }
            match self.input.read(&mut self.buf[self.filled..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Moves the unread bytes to the front, and makes sure at least [`CHUNK`] bytes are free
    /// after them; a buffer grown for a long line shrinks back once that line is gone.
    fn make_room(&mut self) {
        let pending = self.filled - self.start;
        if self.start > 0 {
            self.buf.copy_within(self.start..self.filled, 0);
            self.searched -= self.start;
            self.start = 0;
            self.filled = pending;
        }
        if self.buf.len() > 4 * CHUNK && pending < CHUNK {
            self.buf.truncate(2 * CHUNK);
            self.buf.shrink_to_fit();
        }
        if self.buf.len() - self.filled < CHUNK {
            // Never more than one line over the limit needs, however the reads fall.
            let wanted = (self.buf.len() * 2)
                .min(MAX_BYTES + 2 * CHUNK)
                .max(self.filled + CHUNK);
            self.buf.resize(wanted, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every item until the end, as text; a line over 100 bytes shows as its length only.
    fn all(input: &[u8]) -> Vec<String> {
        let mut lines = Lines::new(input, None);
        let mut out = Vec::new();
        loop {
            match lines.next().unwrap() {
                Next::Line(line) if line.len() > 100 => out.push(format!("{} bytes", line.len())),
                Next::Line(line) => out.push(String::from_utf8_lossy(line).into_owned()),
                Next::TooLong(prefix) => out.push(format!("too long, kept {}", prefix.len())),
                Next::End => return out,
                Next::Interrupted(_) => unreachable!(),
            }
        }
    }

    #[test]
    fn lines_come_one_at_a_time() {
        assert_eq!(all(b"a\nb\n\nc"), ["a", "b", "", "c"]);
        assert_eq!(all(b"a\n"), ["a"]);
        assert!(all(b"").is_empty());
    }

    #[test]
    fn reads_that_split_lines_are_joined() {
        // A reader that hands out one byte at a time.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let Some((&first, rest)) = self.0.split_first() else {
                    return Ok(0);
                };
                buf[0] = first;
                self.0 = rest;
                Ok(1)
            }
        }
        let mut lines = Lines::new(Trickle(b"{\"a\":1}\n{}\n"), None);
        assert_eq!(lines.next().unwrap(), Next::Line(b"{\"a\":1}"));
        assert_eq!(lines.next().unwrap(), Next::Line(b"{}"));
        assert_eq!(lines.next().unwrap(), Next::End);
    }

    #[test]
    fn a_line_over_the_limit_is_cut_and_the_next_one_still_read() {
        let mut input = vec![b'x'; MAX_BYTES + 3 * CHUNK + 5];
        input.extend_from_slice(b"\nnext\n");
        input.extend(std::iter::repeat_n(b'y', MAX_BYTES));
        input.extend_from_slice(b"\n");
        input.extend(std::iter::repeat_n(b'z', MAX_BYTES + 1));
        let kept = format!("too long, kept {MAX_BYTES}");
        let exactly = format!("{MAX_BYTES} bytes");
        assert_eq!(all(&input), [&kept, "next", &exactly, &kept]);
        // Just over the limit, newline included in the same read.
        let mut input = vec![b'x'; MAX_BYTES + 1];
        input.extend_from_slice(b"\nlast\n");
        assert_eq!(all(&input), [&kept, "last"]);
    }
}
