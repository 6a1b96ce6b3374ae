//! Small text helpers shared by decisions and reports.

/// At most `limit` characters of `text`, marked with `…` when cut.
pub fn bounded(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(limit).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_cuts_long_text_and_marks_it() {
        assert_eq!(bounded("abcdef", 3), "abc…");
        assert_eq!(bounded("abc", 3), "abc");
        assert_eq!(bounded("ééé", 2), "éé…");
    }
}
