//! Line deltas between two versions of the shared text, and the cutting of
//! a transfer into parts that each fit in one MEP frame.
//!
//! A one-line change in a configuration of 10,000 services should cost a
//! few hundred bytes, not the whole file: [`delta`] finds the lines that
//! changed (common head and tail first, then `similar`'s diff on what is
//! left) and [`apply`] replays them on the receiver's copy, whose digest is
//! checked before and after. When most of the text is new, a delta saves
//! nothing and the whole text goes instead.

use std::collections::HashSet;

use sextant_mep_proto::message::LineOp;
use similar::{Algorithm, DiffOp, capture_diff_slices};

/// The largest part of a transfer, in bytes of its JSON: a quarter of the
/// MEP frame limit (1 MiB), so a part never comes near it.
pub const PART_BYTES: usize = 256 * 1024;

/// Above this many changed lines on both sides, Myers' diff (quadratic in
/// the worst case) gives way to the patience diff.
const MYERS_MAX_LINES: usize = 4_096;

/// A delta is not worth computing when fewer than half of the new lines
/// (in the changed middle) are found in the old text: the whole text is
/// about as big, and diffing texts with nothing in common is the slow case.
const MIN_SHARED_PERCENT: usize = 50;

/// The lines of `text`, each with its line ending (the last one may have
/// none), so that joining them gives the text back byte for byte.
pub fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// The steps that turn `old` into `new`, or `None` when most of the text
/// changed and the whole of it should travel instead.
pub fn delta(old: &str, new: &str) -> Option<Vec<LineOp>> {
    let a = lines(old);
    let b = lines(new);
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (old_mid, new_mid) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);

    if new_mid.len() > 16 {
        let known: HashSet<&str> = old_mid.iter().copied().collect();
        let found = new_mid.iter().filter(|l| known.contains(*l)).count();
        if found * 100 < new_mid.len() * MIN_SHARED_PERCENT {
            return None;
        }
    }
    let algorithm = if old_mid.len() + new_mid.len() <= MYERS_MAX_LINES {
        Algorithm::Myers
    } else {
        Algorithm::Patience
    };
    let mut ops = Ops::default();
    ops.keep(head);
    for op in capture_diff_slices(algorithm, old_mid, new_mid) {
        match op {
            DiffOp::Equal { len, .. } => ops.keep(len),
            DiffOp::Delete { old_len, .. } => ops.delete(old_len),
            DiffOp::Insert {
                new_index, new_len, ..
            } => ops.insert(&new_mid[new_index..new_index + new_len]),
            DiffOp::Replace {
                old_len,
                new_index,
                new_len,
                ..
            } => {
                ops.delete(old_len);
                ops.insert(&new_mid[new_index..new_index + new_len]);
            }
        }
    }
    ops.keep(tail);
    Some(ops.0)
}

/// Steps, with neighbours of one kind merged.
#[derive(Default)]
struct Ops(Vec<LineOp>);

impl Ops {
    fn keep(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        match self.0.last_mut() {
            Some(LineOp::Keep(k)) => *k = k.saturating_add(n),
            _ => self.0.push(LineOp::Keep(n)),
        }
    }

    fn delete(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        match self.0.last_mut() {
            Some(LineOp::Delete(d)) => *d = d.saturating_add(n),
            _ => self.0.push(LineOp::Delete(n)),
        }
    }

    fn insert(&mut self, lines: &[&str]) {
        if lines.is_empty() {
            return;
        }
        let lines = lines.iter().map(|l| l.to_string());
        match self.0.last_mut() {
            Some(LineOp::Insert(v)) => v.extend(lines),
            _ => self.0.push(LineOp::Insert(lines.collect())),
        }
    }
}

/// Why a delta does not apply to the text at hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeltaError {
    /// A step reaches past the end of the base text.
    PastTheEnd,
    /// The steps end before the base text does.
    LinesLeft(usize),
}

impl std::fmt::Display for DeltaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeltaError::PastTheEnd => {
                f.write_str("the delta reaches past the end of the base text")
            }
            DeltaError::LinesLeft(n) => {
                write!(f, "the delta ends with {n} line(s) of the base text left")
            }
        }
    }
}

/// `base` with the steps applied.
pub fn apply(base: &str, ops: &[LineOp]) -> Result<String, DeltaError> {
    let lines = lines(base);
    let mut out = String::with_capacity(base.len());
    let mut at = 0usize;
    for op in ops {
        match op {
            LineOp::Keep(n) => {
                let end = at
                    .checked_add(*n as usize)
                    .filter(|e| *e <= lines.len())
                    .ok_or(DeltaError::PastTheEnd)?;
                lines[at..end].iter().for_each(|l| out.push_str(l));
                at = end;
            }
            LineOp::Delete(n) => {
                at = at
                    .checked_add(*n as usize)
                    .filter(|e| *e <= lines.len())
                    .ok_or(DeltaError::PastTheEnd)?;
            }
            LineOp::Insert(new) => new.iter().for_each(|l| out.push_str(l)),
        }
    }
    if at != lines.len() {
        return Err(DeltaError::LinesLeft(lines.len() - at));
    }
    Ok(out)
}

/// Bytes `s` takes as a JSON string (escapes included, quotes excluded).
fn json_len(s: &str) -> usize {
    s.chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum()
}

/// `text` cut into pieces of at most [`PART_BYTES`] as JSON, at line ends
/// where it can (a longer line is cut between characters). Always one piece
/// at least, so that an empty text still travels as one part.
pub fn cut_text(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut size, mut last_line_end) = (0usize, 0usize, None::<usize>);
    for (i, c) in text.char_indices() {
        let n = json_len(c.encode_utf8(&mut [0; 4]));
        if size + n > PART_BYTES {
            let cut = last_line_end.filter(|e| *e > start).unwrap_or(i);
            parts.push(&text[start..cut]);
            size = json_len(&text[cut..i]);
            start = cut;
            last_line_end = None;
        }
        size += n;
        if c == '\n' {
            last_line_end = Some(i + 1);
        }
    }
    if start < text.len() || parts.is_empty() {
        parts.push(&text[start..]);
    }
    parts
}

/// `ops` cut into groups of at most about [`PART_BYTES`] as JSON; a long
/// insertion is split over several groups.
pub fn cut_ops(ops: Vec<LineOp>) -> Vec<Vec<LineOp>> {
    const OP_OVERHEAD: usize = 24;
    let mut groups = Vec::new();
    let mut current = Vec::new();
    let mut size = 0usize;
    for op in ops {
        let LineOp::Insert(lines) = op else {
            if size + OP_OVERHEAD > PART_BYTES {
                groups.push(std::mem::take(&mut current));
                size = 0;
            }
            size += OP_OVERHEAD;
            current.push(op);
            continue;
        };
        let mut chunk = Vec::new();
        size += OP_OVERHEAD;
        for line in lines {
            let n = json_len(&line) + 4;
            if size + n > PART_BYTES && (!chunk.is_empty() || !current.is_empty()) {
                if !chunk.is_empty() {
                    current.push(LineOp::Insert(std::mem::take(&mut chunk)));
                }
                groups.push(std::mem::take(&mut current));
                size = OP_OVERHEAD;
            }
            size += n;
            chunk.push(line);
        }
        if !chunk.is_empty() {
            current.push(LineOp::Insert(chunk));
        }
    }
    groups.push(current);
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(n: usize) -> String {
        (0..n)
            .map(|i| {
                format!(
                    "add gslb service s{i} 192.0.2.{} HTTP 80 -siteName site{}\n",
                    i % 250,
                    i % 3
                )
            })
            .collect()
    }

    #[test]
    fn one_changed_line_is_one_small_delta() {
        let old = config(10_000);
        let new = old.replacen("add gslb service s5000 ", "add gslb service s5000x ", 1);
        let ops = delta(&old, &new).expect("a delta");
        assert_eq!(ops.len(), 4, "{ops:?}");
        assert_eq!(ops[0], LineOp::Keep(5000));
        assert_eq!(ops[1], LineOp::Delete(1));
        assert_eq!(ops[3], LineOp::Keep(4999));
        assert_eq!(apply(&old, &ops).as_deref(), Ok(new.as_str()));
    }

    #[test]
    fn a_whole_new_text_is_no_delta() {
        let old = config(1_000);
        let new = old.replace("HTTP 80", "SSL 443");
        assert_eq!(delta(&old, &new), None);
    }

    #[test]
    fn scattered_edits_round_trip() {
        let old = config(2_000);
        let mut new: Vec<String> = lines(&old).into_iter().map(str::to_string).collect();
        new.remove(10);
        new.insert(500, "add gslb site site9 192.0.2.9\n".into());
        new[1500] = "bind gslb vserver v -serviceName s1 -weight 40\n".into();
        new.push("# no newline at the end".into());
        let new: String = new.concat();
        let ops = delta(&old, &new).expect("a delta");
        assert_eq!(apply(&old, &ops).as_deref(), Ok(new.as_str()));
    }

    #[test]
    fn a_delta_on_the_wrong_base_is_refused() {
        let ops = vec![LineOp::Keep(3), LineOp::Delete(1)];
        assert_eq!(apply("a\nb\n", &ops), Err(DeltaError::PastTheEnd));
        assert_eq!(
            apply("a\nb\nc\nd\ne\n", &ops),
            Err(DeltaError::LinesLeft(1))
        );
    }

    #[test]
    fn texts_are_cut_at_line_ends_and_join_back() {
        let text = config(20_000);
        let parts = cut_text(&text);
        assert!(parts.len() > 1);
        assert_eq!(parts.concat(), text);
        for p in &parts {
            assert!(json_len(p) <= PART_BYTES);
            assert!(p.ends_with('\n'));
        }
        assert_eq!(cut_text(""), vec![""]);
        // A line longer than a part, full of characters JSON escapes.
        let long = "\"\u{1}".repeat(PART_BYTES);
        let parts = cut_text(&long);
        assert_eq!(parts.concat(), long);
        assert!(parts.iter().all(|p| json_len(p) <= PART_BYTES));
    }

    #[test]
    fn big_insertions_are_split_over_groups_that_apply_in_order() {
        let new = config(20_000);
        let ops = delta("", &new).unwrap_or_else(|| {
            vec![LineOp::Insert(
                lines(&new).iter().map(|l| l.to_string()).collect(),
            )]
        });
        let groups = cut_ops(ops);
        assert!(groups.len() > 1);
        for g in &groups {
            let size = serde_json::to_vec(g).map(|v| v.len()).unwrap_or(usize::MAX);
            assert!(size <= PART_BYTES + 1024, "{size}");
        }
        let all: Vec<LineOp> = groups.into_iter().flatten().collect();
        assert_eq!(apply("", &all).as_deref(), Ok(new.as_str()));
    }
}
