//! W3C Trace Context: the `traceparent` a caller hands the dispatcher and the one each handler
//! gets (`00-<trace id>-<span id>-<flags>`), and fresh ids.

/// A caller's span: the trace it belongs to and its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// The caller's `sampled` flag: when clear, the caller records nothing and neither do we.
    pub sampled: bool,
}

/// Reads a `traceparent` value; the error says what is wrong with it.
pub fn parse(value: &str) -> Result<Parent, String> {
    let value = value.trim();
    let parts: Vec<&str> = value.split('-').collect();
    let bad = |why: &str| {
        Err(format!(
            "TRACEPARENT {value:?} {why}; the dispatch starts a trace of its own"
        ))
    };
    if parts.len() < 4 {
        return bad("is not version-traceid-spanid-flags");
    }
    let (version, trace, span, flags) = (parts[0], parts[1], parts[2], parts[3]);
    if version.len() != 2 || version.eq_ignore_ascii_case("ff") || !is_hex(version) {
        return bad("has an invalid version");
    }
    if version == "00" && parts.len() != 4 {
        return bad("has more than four parts");
    }
    let (Some(trace_id), Some(span_id), Some(flags)) = (
        hex_array::<16>(trace),
        hex_array::<8>(span),
        hex_array::<1>(flags),
    ) else {
        return bad("is not version-traceid-spanid-flags in lowercase hex");
    };
    if trace_id == [0; 16] || span_id == [0; 8] {
        return bad("has an all-zero id");
    }
    Ok(Parent {
        trace_id,
        span_id,
        sampled: flags[0] & 1 == 1,
    })
}

/// The `traceparent` of span `span_id` in trace `trace_id`, sampled.
pub fn format(trace_id: &[u8; 16], span_id: &[u8; 8]) -> String {
    format!("00-{}-{}-01", hex(trace_id), hex(span_id))
}

pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

fn is_hex(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn hex_array<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != N * 2 || !is_hex(text) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[i * 2..i * 2 + 2], 16).ok()?;
    }
    Some(out)
}

/// `N` random bytes, never all zero (an all-zero id is invalid).
///
/// Ids need to be unpredictable and unique, not key material: they are SipHash outputs of a
/// counter under the keys the standard library draws from the system once per thread (one
/// `getrandom` call), where the `getrandom` crate, in a statically linked build, opens, polls
/// and reads the random devices for every id.
pub fn random<const N: usize>() -> [u8; N] {
    use std::hash::BuildHasher as _;
    thread_local! {
        static IDS: (std::hash::RandomState, std::cell::Cell<u64>) =
            (std::hash::RandomState::new(), std::cell::Cell::new(0));
    }
    let mut out = [0u8; N];
    while out == [0u8; N] {
        IDS.with(|(keys, counter)| {
            for chunk in out.chunks_mut(8) {
                let n = counter.get();
                counter.set(n.wrapping_add(1));
                let word = keys.hash_one(n).to_le_bytes();
                chunk.copy_from_slice(&word[..chunk.len()]);
            }
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents_read_and_write_as_the_w3c_says() {
        let p = parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(hex(&p.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex(&p.span_id), "00f067aa0ba902b7");
        assert!(p.sampled);
        assert!(
            !parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
                .unwrap()
                .sampled
        );
        // A later version may carry more parts.
        assert!(parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra").is_ok());
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            format(&p.trace_id, &p.span_id),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert_ne!(random::<8>(), random::<8>());
        let ids: std::collections::HashSet<[u8; 16]> = (0..1000).map(|_| random::<16>()).collect();
        assert_eq!(ids.len(), 1000);
    }
}
