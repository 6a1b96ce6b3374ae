//! The patterns of `discovery.configs`: `*` matches any run of characters and `?` one character,
//! both within one path segment; a path with a `deprecated` folder never matches. One rule for
//! `discover` (the checkout's files) and `verify-baselines` (a producer head's tree).

/// Whether a repository path matches a `discovery.configs` pattern: `*` and `?` match within one
/// path segment, and a path with a `deprecated` folder never matches.
pub fn pattern_matches(pattern: &str, path: &str) -> bool {
    let pattern: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let path: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let folders = &path[..path.len().saturating_sub(1)];
    pattern.len() == path.len()
        && !folders.contains(&"deprecated")
        && pattern
            .iter()
            .zip(&path)
            .all(|(pattern, name)| segment_matches(pattern, name))
}

/// `*` any run of characters, `?` one character, anything else itself.
pub fn segment_matches(pattern: &str, name: &str) -> bool {
    fn matches(pattern: &[char], name: &[char]) -> bool {
        match pattern.split_first() {
            None => name.is_empty(),
            Some(('*', rest)) => (0..=name.len()).any(|skip| matches(rest, &name[skip..])),
            Some(('?', rest)) => !name.is_empty() && matches(rest, &name[1..]),
            Some((character, rest)) => name.first() == Some(character) && matches(rest, &name[1..]),
        }
    }
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    matches(&pattern, &name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_match_stars_and_question_marks() {
        assert!(segment_matches("*-master.yaml", "nvidia-master.yaml"));
        assert!(!segment_matches("*-master.yaml", "runners.yaml"));
        assert!(segment_matches("a?c", "abc"));
        assert!(!segment_matches("a?c", "ac"));
    }

    #[test]
    fn a_pattern_matches_within_segments_and_never_under_deprecated() {
        assert!(pattern_matches(
            "configs/*-master.yaml",
            "configs/amd-master.yaml"
        ));
        assert!(!pattern_matches(
            "configs/*-master.yaml",
            "configs/x/amd-master.yaml"
        ));
        assert!(pattern_matches("*/*-master.yaml", "other/x-master.yaml"));
        assert!(!pattern_matches(
            "*/*/*-master.yaml",
            "configs/deprecated/old-master.yaml"
        ));
    }
}
