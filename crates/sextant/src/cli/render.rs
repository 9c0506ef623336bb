//! Tables for a terminal: a header row, then one row per object, columns
//! as wide as their widest cell.

/// Lays `rows` out under `headers`, columns separated by two blanks.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        for (i, cell) in cells.enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            if i + 1 == widths.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:w$}  "));
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(&mut headers.iter().copied());
    for row in rows {
        out.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    out
}

/// `Some(x)` as text, `None` as a dash.
pub fn or_dash(v: Option<impl std::fmt::Display>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_their_widest_cell() {
        let t = table(
            &["NAME", "STATE"],
            &[
                vec!["vs_app".into(), "UP".into()],
                vec!["a".into(), "DOWN".into()],
            ],
        );
        assert_eq!(t, "NAME    STATE\nvs_app  UP\na       DOWN\n");
        assert_eq!(or_dash(None::<u8>), "-");
        assert_eq!(or_dash(Some(3)), "3");
    }
}
