//! Bash's brace expansion (`{a,b}`, `{1..3}`, `{a..e..2}`), the one expansion that makes several
//! words of one before anything runs; `/bin/sh` has none. Only unquoted braces and commas take
//! part. Bounded: past [`MAX_FIELDS`] words, or past a work of a few times the word's length,
//! it is an error rather than a slow answer.

use super::{Error, Part, MAX_FIELDS};

/// A piece of a word: an unquoted character, which may be brace syntax, or anything else.
#[derive(Clone, Debug)]
enum Atom {
    Char(char),
    Piece(Part),
}

/// The words bash makes of a word of `parts`.
pub(super) fn expand(parts: &[Part]) -> Result<Vec<Vec<Part>>, Error> {
    let has_brace = parts
        .iter()
        .any(|p| matches!(p, Part::Text { text, quoted: false } if text.contains('{')));
    if !has_brace {
        return Ok(vec![parts.to_vec()]);
    }
    let mut atoms = Vec::new();
    for part in parts {
        match part {
            Part::Text {
                text,
                quoted: false,
            } => atoms.extend(text.chars().map(Atom::Char)),
            other => atoms.push(Atom::Piece(other.clone())),
        }
    }
    let mut budget = atoms.len().saturating_mul(8).saturating_add(1 << 16);
    let mut work = vec![atoms];
    let mut done = Vec::new();
    while let Some(atoms) = work.pop() {
        budget = budget
            .checked_sub(atoms.len() + 1)
            .ok_or(Error::TooManyFields)?;
        match first_expansion(&atoms) {
            // An alternative that is nothing unquoted makes no word (`{git,}` is `git`).
            None if atoms.is_empty() => {}
            None => {
                done.push(to_parts(atoms));
                if done.len() > MAX_FIELDS {
                    return Err(Error::TooManyFields);
                }
            }
            Some((open, close, alternatives)) => {
                if alternatives.len() + work.len() + done.len() > MAX_FIELDS * 4 {
                    return Err(Error::TooManyFields);
                }
                // Pushed in reverse, so the words come out in bash's order.
                for alternative in alternatives.into_iter().rev() {
                    let mut next = Vec::with_capacity(atoms.len());
                    next.extend_from_slice(&atoms[..open]);
                    next.extend(alternative);
                    next.extend_from_slice(&atoms[close + 1..]);
                    work.push(next);
                }
            }
        }
    }
    Ok(done)
}

/// The first brace expression bash expands: where it opens and closes, and its alternatives.
fn first_expansion(atoms: &[Atom]) -> Option<(usize, usize, Vec<Vec<Atom>>)> {
    // Each brace's match and whether a comma stands at its top level, in one pass.
    let mut stack: Vec<(usize, bool)> = Vec::new();
    let mut pairs: Vec<(usize, usize, bool)> = Vec::new();
    for (i, atom) in atoms.iter().enumerate() {
        match atom {
            Atom::Char('{') => stack.push((i, false)),
            Atom::Char('}') => {
                if let Some((open, comma)) = stack.pop() {
                    pairs.push((open, i, comma));
                }
            }
            Atom::Char(',') => {
                if let Some(top) = stack.last_mut() {
                    top.1 = true;
                }
            }
            _ => {}
        }
    }
    pairs.sort_unstable_by_key(|p| p.0);
    for (open, close, comma) in pairs {
        let inside = &atoms[open + 1..close];
        if comma {
            return Some((open, close, split_commas(inside)));
        }
        if let Some(words) = sequence(inside) {
            let alternatives = words
                .into_iter()
                .map(|w| w.chars().map(Atom::Char).collect())
                .collect();
            return Some((open, close, alternatives));
        }
    }
    None
}

/// The alternatives between a brace pair, cut at its top-level commas.
fn split_commas(inside: &[Atom]) -> Vec<Vec<Atom>> {
    let mut out = vec![Vec::new()];
    let mut depth = 0usize;
    for atom in inside {
        match atom {
            Atom::Char('{') => depth += 1,
            Atom::Char('}') => depth = depth.saturating_sub(1),
            Atom::Char(',') if depth == 0 => {
                out.push(Vec::new());
                continue;
            }
            _ => {}
        }
        if let Some(last) = out.last_mut() {
            last.push(atom.clone());
        }
    }
    out
}

/// `x..y` or `x..y..step`, of integers or of single letters: the words it stands for.
fn sequence(inside: &[Atom]) -> Option<Vec<String>> {
    if inside.len() > 64 {
        return None;
    }
    let mut text = String::new();
    for atom in inside {
        match atom {
            Atom::Char(c) => text.push(*c),
            Atom::Piece(_) => return None,
        }
    }
    let fields: Vec<&str> = text.split("..").collect();
    let (from, to, step) = match fields.as_slice() {
        [a, b] => (*a, *b, None),
        [a, b, s] => (*a, *b, Some(*s)),
        _ => return None,
    };
    let step = match step {
        Some(s) => s.parse::<i64>().ok()?.unsigned_abs().max(1),
        None => 1,
    };
    if let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) {
        let count = a.abs_diff(b) / step + 1;
        if count > MAX_FIELDS as u64 {
            // Too many to list: the caller's bound says so.
            return Some(vec![String::new(); MAX_FIELDS + 1]);
        }
        let padded = |s: &str| s.trim_start_matches('-').starts_with('0') && s.len() > 1;
        let width = if padded(from) || padded(to) {
            from.len().max(to.len())
        } else {
            0
        };
        let mut out = Vec::new();
        let mut n = a;
        for _ in 0..count {
            out.push(match width {
                0 => n.to_string(),
                w if n < 0 => format!("-{:0>w$}", n.unsigned_abs(), w = w - 1),
                w => format!("{n:0>w$}"),
            });
            let delta = i64::try_from(step).ok()?;
            n = if b >= a { n + delta } else { n - delta };
        }
        return Some(out);
    }
    let letter = |s: &str| {
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) if c.is_ascii_alphabetic() => Some(c as u8),
            _ => None,
        }
    };
    let (a, b) = (letter(from)?, letter(to)?);
    let mut out = Vec::new();
    let mut n = i64::from(a);
    let step = i64::try_from(step).ok()?;
    loop {
        out.push(char::from(u8::try_from(n).ok()?).to_string());
        n = if b >= a { n + step } else { n - step };
        if (b >= a && n > i64::from(b)) || (b < a && n < i64::from(b)) {
            break;
        }
    }
    Some(out)
}

fn to_parts(atoms: Vec<Atom>) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut text = String::new();
    for atom in atoms {
        match atom {
            Atom::Char(c) => text.push(c),
            Atom::Piece(part) => {
                if !text.is_empty() {
                    parts.push(Part::Text {
                        text: std::mem::take(&mut text),
                        quoted: false,
                    });
                }
                parts.push(part);
            }
        }
    }
    if !text.is_empty() || parts.is_empty() {
        parts.push(Part::Text {
            text,
            quoted: false,
        });
    }
    parts
}
