//! Byte searches on a dispatch's own path, by means the processor is known to have.
//!
//! `memchr`'s top-level functions pick their implementation at the first call by asking the
//! processor what it can do (`is_x86_feature_detected!`), and the standard library answers by
//! reading every feature at once: ten `CPUID` instructions. On a virtual machine each one is a
//! trip to the hypervisor (6 µs on the benchmark's machine), so the first search of a dispatch
//! cost more than its whole reading of the settings (docs/BENCHMARKS.md). On x86-64 these
//! searches use SSE2, which every x86-64 processor has and the compiler knows at build time;
//! elsewhere `memchr`'s own choice, which asks nothing there (NEON on aarch64, for one).
//!
//! Every function returns what `memchr`'s function of the same meaning returns.

/// The offset of the first `needle` in `haystack`.
pub fn find_byte(needle: u8, haystack: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        match memchr::arch::x86_64::sse2::memchr::One::new(needle) {
            Some(one) => one.find(haystack),
            None => memchr::arch::all::memchr::One::new(needle).find(haystack),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        memchr::memchr(needle, haystack)
    }
}

/// The offset of the first `a` or `b` in `haystack`.
pub fn find_either(a: u8, b: u8, haystack: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        match memchr::arch::x86_64::sse2::memchr::Two::new(a, b) {
            Some(two) => two.find(haystack),
            None => memchr::arch::all::memchr::Two::new(a, b).find(haystack),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        memchr::memchr2(a, b, haystack)
    }
}

/// How many bytes of `haystack` are `a` or `b`, counted up to `limit` and no further.
pub fn count_either_up_to(a: u8, b: u8, haystack: &[u8], limit: usize) -> usize {
    let mut count = 0;
    let mut at = 0;
    while count < limit {
        match find_either(a, b, &haystack[at..]) {
            Some(i) => {
                count += 1;
                at += i + 1;
            }
            None => break,
        }
    }
    count
}

/// The offsets of every `needle` in `haystack`, in order.
pub fn positions(needle: u8, haystack: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let found = at + find_byte(needle, haystack.get(at..)?)?;
        at = found + 1;
        Some(found)
    })
}

/// The offset of the first `needle` in `haystack`; an empty needle is found at 0.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    match needle {
        [] => Some(0),
        [one] => find_byte(*one, haystack),
        _ => find_long(haystack, needle),
    }
}

#[cfg(target_arch = "x86_64")]
fn find_long(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    match memchr::arch::x86_64::sse2::packedpair::Finder::new(needle) {
        Some(finder) if haystack.len() >= finder.min_haystack_len() => {
            finder.find(haystack, needle)
        }
        _ => memchr::arch::all::rabinkarp::Finder::new(needle).find(haystack, needle),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn find_long(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// Returns true if and only if `needle` occurs in `haystack`.
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes from a small alphabet, so that needles are found often and partly found more.
    fn sample(seed: &mut u64, len: usize) -> Vec<u8> {
        (0..len)
            .map(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                b"ab\"{[\\\n"[(*seed % 7) as usize]
            })
            .collect()
    }

    #[test]
    fn every_search_answers_as_memchr_does() {
        let mut seed = 0x9e37_79b9_7f4a_7c15;
        for round in 0..4000 {
            let haystack = sample(&mut seed, round % 300);
            let needle = sample(&mut seed, 1 + round % 9);
            assert_eq!(
                find(&haystack, &needle),
                memchr::memmem::find(&haystack, &needle),
                "{haystack:?} {needle:?}"
            );
            let (a, b) = (needle[0], *needle.last().unwrap());
            assert_eq!(find_byte(a, &haystack), memchr::memchr(a, &haystack));
            assert_eq!(
                find_either(a, b, &haystack),
                memchr::memchr2(a, b, &haystack)
            );
            let limit = round % 20;
            assert_eq!(
                count_either_up_to(a, b, &haystack, limit),
                memchr::memchr2_iter(a, b, &haystack).take(limit).count()
            );
            assert!(positions(a, &haystack).eq(memchr::memchr_iter(a, &haystack)));
        }
        assert_eq!(find(b"abc", b""), Some(0));
        assert_eq!(find(b"", b"ab"), None);
    }
}
