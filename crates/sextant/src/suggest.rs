//! "Did you mean ...?": the nearest of some names to one typed, by edit
//! distance ignoring ASCII case. The typed name may be a stranger's (a
//! path of the REST API), so the work is bounded: a name longer than
//! [`MAX_COMPARED`] characters gets no suggestion, and a distance is only
//! computed up to the most a typo may be ([`typo_allowance`]), in a band
//! of the table, never the whole of it.

/// Names longer than this (in characters) get no suggestion: no
/// configured name is near them.
pub const MAX_COMPARED: usize = 64;

/// The most edits that still make `candidate` a typo of the typed name.
pub fn typo_allowance(candidate_chars: usize) -> usize {
    (candidate_chars / 3).max(2)
}

/// The name among `names` nearest to `typed`, if one is near enough to be
/// a typo; names of equal distance: the first.
pub fn nearest<'a>(typed: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    nearest_within(typed, names, typo_allowance)
}

/// Like [`nearest`], with the allowance of a candidate of `n` characters
/// given by `allowance(n)`.
pub fn nearest_within<'a>(
    typed: &str,
    names: impl IntoIterator<Item = &'a str>,
    allowance: impl Fn(usize) -> usize,
) -> Option<&'a str> {
    let typed: Vec<char> = lowered(typed)?;
    let mut best: Option<(usize, &str)> = None;
    for name in names {
        let Some(candidate) = lowered(name) else {
            continue;
        };
        let mut max = allowance(candidate.len());
        if let Some((d, _)) = best {
            // Only a nearer one can win.
            let Some(m) = d.checked_sub(1) else {
                break;
            };
            max = max.min(m);
        }
        if let Some(d) = distance_within(&typed, &candidate, max) {
            best = Some((d, name));
        }
    }
    best.map(|(_, n)| n)
}

/// The characters of `s` in ASCII lower case, or `None` when it is longer
/// than [`MAX_COMPARED`] (counted no further than that).
fn lowered(s: &str) -> Option<Vec<char>> {
    if s.chars().nth(MAX_COMPARED).is_some() {
        return None;
    }
    Some(s.chars().map(|c| c.to_ascii_lowercase()).collect())
}

/// The Levenshtein distance of `a` and `b` if it is at most `max`, else
/// `None`; only the cells within `max` of the diagonal are computed.
pub fn distance_within(a: &[char], b: &[char], max: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    // Cells outside the band stay "too far" (max + 1).
    let far = max + 1;
    let mut prev: Vec<usize> = (0..=b.len()).map(|j| j.min(far)).collect();
    let mut cur = vec![far; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        let row = i + 1;
        let from = row.saturating_sub(max).max(1);
        let to = (row + max).min(b.len());
        cur.fill(far);
        cur[0] = row.min(far);
        let mut row_min = cur[0];
        for j in from..=to {
            let cost = usize::from(*ca != b[j - 1]);
            let d = (prev[j - 1] + cost).min(prev[j] + 1).min(cur[j - 1] + 1);
            cur[j] = d.min(far);
            row_min = row_min.min(cur[j]);
        }
        if row_min > max {
            return None;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    let d = prev[b.len()];
    (d <= max).then_some(d)
}

/// The Levenshtein distance of two short strings (at most `max` + 1 when
/// they are further apart than `max`).
#[cfg(test)]
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let max = a.len().max(b.len());
    distance_within(&a, &b, max).unwrap_or(max + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("web-1", "web-2"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("flaw", "lawn"), 2);
        let (a, b): (Vec<char>, Vec<char>) =
            ("kitten".chars().collect(), "sitting".chars().collect());
        assert_eq!(distance_within(&a, &b, 3), Some(3));
        assert_eq!(distance_within(&a, &b, 2), None);
    }

    /// The banded distance agrees with the whole table on every pair of
    /// some short strings.
    #[test]
    fn the_band_agrees_with_the_whole_table() {
        fn full(a: &[char], b: &[char]) -> usize {
            let mut prev: Vec<usize> = (0..=b.len()).collect();
            for (i, ca) in a.iter().enumerate() {
                let mut cur = vec![i + 1; b.len() + 1];
                for (j, cb) in b.iter().enumerate() {
                    cur[j + 1] = (prev[j] + usize::from(ca != cb))
                        .min(prev[j + 1] + 1)
                        .min(cur[j] + 1);
                }
                prev = cur;
            }
            prev[b.len()]
        }
        let words = [
            "",
            "a",
            "ab",
            "ba",
            "abc",
            "web-1",
            "web-fra-1",
            "wbe-fra-2",
            "gv-web",
            "gv-wbe",
            "xyzzy",
            "aaaa",
            "abab",
        ];
        for a in words {
            for b in words {
                let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
                let d = full(&a, &b);
                for max in 0..8 {
                    let want = (d <= max).then_some(d);
                    assert_eq!(distance_within(&a, &b, max), want, "{a:?} {b:?} {max}");
                }
            }
        }
    }

    #[test]
    fn the_nearest_name_is_suggested() {
        assert_eq!(nearest("WEB-3", ["db-1", "web-1", "app"]), Some("web-1"));
        assert_eq!(nearest("vs_ap", ["vs_app", "vs_db"]), Some("vs_app"));
        assert_eq!(nearest("zzz", ["vs_app", "vs_db"]), None);
        assert_eq!(nearest("x", []), None);
    }

    /// A stranger's 100 kB name is refused at its 65th character: no
    /// distance is computed, whatever the names.
    #[test]
    fn a_huge_name_gets_no_suggestion() {
        let huge = "w".repeat(100_000);
        let names: Vec<String> = (0..10_000).map(|i| format!("web-{i}")).collect();
        assert_eq!(nearest(&huge, names.iter().map(String::as_str)), None);
        let long = "web-1".repeat(13); // 65 characters
        assert_eq!(nearest(&long, ["web-1"]), None);
        let at_limit = "w".repeat(MAX_COMPARED);
        assert_eq!(
            nearest(&at_limit, [at_limit.as_str()]),
            Some(at_limit.as_str())
        );
    }
}
