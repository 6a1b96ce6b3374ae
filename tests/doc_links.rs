//! The Markdown files of the repository point only at what exists: every relative link of every
//! tracked `.md` file resolves to a file or directory of the checkout, and a link's `#anchor` to a
//! heading of the Markdown file it names (GitHub's slugs: lower case, punctuation dropped, spaces
//! as `-`, a repeated heading numbered `-1`, `-2`, …). The code spans of the documentation that
//! name a repository path (`src/…`, `tests/…`, `docs/…`, …) must name one that exists, so the
//! codemap of ARCHITECTURE.md cannot keep a file that moved. README.md stays under 15,000 bytes.

#![allow(clippy::disallowed_methods)] // lists the tracked files with git

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The tracked Markdown files (relative paths), from git; outside a git checkout, every `.md`
/// file of the tree except what git would ignore.
fn markdown_files() -> Vec<PathBuf> {
    let listed = std::process::Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
            "--",
            "*.md",
        ])
        .current_dir(root())
        .output();
    if let Ok(output) = listed
        && output.status.success()
    {
        let mut files: Vec<PathBuf> = output
            .stdout
            .split(|byte| *byte == 0)
            .filter(|name| !name.is_empty())
            .map(|name| PathBuf::from(String::from_utf8_lossy(name).into_owned()))
            .filter(|path| root().join(path).is_file())
            .collect();
        files.sort();
        return files;
    }
    let mut files = Vec::new();
    let skipped = [
        "target",
        ".git",
        "node_modules",
        "corpus",
        "artifacts",
        "coverage",
    ];
    let mut pending = vec![PathBuf::new()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(root().join(&directory))
            .unwrap()
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = directory.join(&name);
            if entry.file_type().unwrap().is_dir() {
                if !skipped.contains(&name.as_str()) {
                    pending.push(path);
                }
            } else if name.ends_with(".md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The lines of a Markdown text outside fenced code blocks, with their line numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match fence {
            Some(marker) if trimmed.starts_with(marker) => fence = None,
            Some(_) => {}
            None if trimmed.starts_with("```") => fence = Some("```"),
            None if trimmed.starts_with("~~~") => fence = Some("~~~"),
            None => lines.push((index + 1, line)),
        }
    }
    lines
}

/// A line without its code spans, and the code spans' contents.
fn split_code_spans(line: &str) -> (String, Vec<String>) {
    let mut prose = String::new();
    let mut spans = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        prose.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|c| *c == '`').count();
        let marker = "`".repeat(ticks);
        let after = &rest[start + ticks..];
        match after.find(&marker) {
            Some(end) => {
                spans.push(after[..end].trim().to_string());
                rest = &after[end + ticks..];
            }
            None => {
                prose.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    prose.push_str(rest);
    (prose, spans)
}

/// The link targets of one line of prose (code spans removed): inline links and images,
/// reference definitions, and `href`/`src` attributes.
fn link_targets(prose: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = prose;
    while let Some(start) = rest.find("](") {
        let after = &rest[start + 2..];
        let mut depth = 0usize;
        let mut end = after.len();
        for (index, character) in after.char_indices() {
            match character {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = index;
                    break;
                }
                ')' => depth -= 1,
                _ => {}
            }
        }
        let inside = after[..end].trim();
        let target = match inside.strip_prefix('<') {
            Some(bracketed) => bracketed.split('>').next().unwrap_or(""),
            None => inside.split_whitespace().next().unwrap_or(""),
        };
        targets.push(target.to_string());
        rest = &after[end.min(after.len())..];
    }
    let trimmed = prose.trim_start();
    if trimmed.starts_with('[')
        && let Some(close) = trimmed.find("]:")
        && !trimmed[..close].contains("](")
        && let Some(target) = trimmed[close + 2..].split_whitespace().next()
    {
        targets.push(target.trim_matches(['<', '>']).to_string());
    }
    for attribute in ["href=\"", "src=\""] {
        let mut rest = prose;
        while let Some(start) = rest.find(attribute) {
            let after = &rest[start + attribute.len()..];
            let end = after.find('"').unwrap_or(after.len());
            targets.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    targets
}

/// GitHub's anchor for a heading's text.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    // A link shows its text: `[text](target)` → `text`; code spans keep their content.
    let mut rest = heading;
    while let Some(start) = rest.find('[') {
        text.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match (after.find("]("), after.find(')')) {
            (Some(close), Some(paren)) if close < paren => {
                text.push_str(&after[..close]);
                rest = &after[paren + 1..];
            }
            _ => {
                text.push('[');
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings, repeated slugs numbered as GitHub numbers them.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let heading = line[hashes..].trim().trim_end_matches('#').trim();
        let base = slug(heading);
        let count = seen.entry(base.clone()).or_insert(0);
        let anchor = match *count {
            0 => base.clone(),
            n => format!("{base}-{n}"),
        };
        *count += 1;
        anchors.insert(anchor);
    }
    anchors
}

/// `path` relative to the repository root, `..` resolved; `None` when it leaves the repository.
fn normalized(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    Some(parts.iter().collect())
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && index + 2 < bytes.len()
            && let Some(byte) = std::str::from_utf8(&bytes[index + 1..index + 3])
                .ok()
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            decoded.push(byte);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// What is wrong with one link of `file` (a relative path), if anything.
fn broken(file: &Path, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("an empty link".to_string());
    }
    let external = target.starts_with("//")
        || target.split_once(':').is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        });
    if external {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let path = percent_decoded(path.split('?').next().unwrap_or(""));
    let resolved = if path.is_empty() {
        file.to_path_buf()
    } else if let Some(from_root) = path.strip_prefix('/') {
        PathBuf::from(from_root)
    } else {
        file.parent().unwrap_or(Path::new("")).join(&path)
    };
    let Some(resolved) = normalized(&resolved) else {
        return Some(format!("`{target}` leaves the repository"));
    };
    let full = root().join(&resolved);
    if !full.exists() {
        return Some(format!("`{target}`: {} does not exist", resolved.display()));
    }
    if let Some(anchor) = anchor
        && full.extension().is_some_and(|extension| extension == "md")
    {
        let text = std::fs::read_to_string(&full).unwrap();
        if !anchors(&text).contains(&percent_decoded(anchor)) {
            return Some(format!(
                "`{target}`: {} has no heading whose anchor is `#{anchor}`",
                resolved.display()
            ));
        }
    }
    None
}

#[test]
fn every_relative_link_and_anchor_of_every_markdown_file_resolves() {
    let files = markdown_files();
    for expected in [
        "README.md",
        "ARCHITECTURE.md",
        "CONTRIBUTING.md",
        "docs/configuration.md",
    ] {
        assert!(
            files.contains(&PathBuf::from(expected)),
            "{expected} is among the Markdown files: {files:?}"
        );
    }
    let mut problems = Vec::new();
    let mut links = 0;
    for file in &files {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        for (number, line) in prose_lines(&text) {
            let (without_code, _) = split_code_spans(line);
            for target in link_targets(&without_code) {
                links += 1;
                if let Some(problem) = broken(file, &target) {
                    problems.push(format!("{}:{number}: {problem}", file.display()));
                }
            }
        }
    }
    assert!(links >= 50, "the links are read: {links}");
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

/// Code spans that name a repository path: a known top-level directory or file, nothing that
/// stands for a value (`<target>`, `*`, `{id}`, `…`).
fn repository_path(span: &str) -> Option<&str> {
    let prefixes = [
        "src/",
        "tests/",
        "benches/",
        "scripts/",
        "docs/",
        "dist/schema/",
        ".github/",
        ".ci/",
    ];
    let files = [
        "README.md",
        "ARCHITECTURE.md",
        "CONTRIBUTING.md",
        "BENCHMARKS.md",
        "action.yml",
        "build.rs",
        "Cargo.toml",
        "Cargo.lock",
        "clippy.toml",
    ];
    // Files of the repository that uses klaud, not of this one.
    let adopters = [".github/klaud.yml", ".github/klaud-candidates.json"];
    if adopters.contains(&span) {
        return None;
    }
    let path_like = span
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c));
    (path_like && (prefixes.iter().any(|p| span.starts_with(p)) || files.contains(&span)))
        .then_some(span)
}

#[test]
fn every_repository_path_the_documentation_names_exists() {
    let mut problems = Vec::new();
    let mut named = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(root().join(&file)).unwrap();
        for (number, line) in prose_lines(&text) {
            for span in split_code_spans(line).1 {
                // A span may list several paths: `tests/a.rs`, `tests/b/`.
                for candidate in span.split([',', ' ']).map(str::trim) {
                    let Some(path) = repository_path(candidate) else {
                        continue;
                    };
                    named += 1;
                    if !root().join(path).exists() {
                        problems.push(format!(
                            "{}:{number}: `{path}` does not exist",
                            file.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(named >= 50, "the paths are read: {named}");
    assert!(
        problems.is_empty(),
        "paths that do not exist:\n{}",
        problems.join("\n")
    );
}

#[test]
fn slugs_follow_githubs_rules() {
    assert_eq!(slug("Try it on a fresh clone"), "try-it-on-a-fresh-clone");
    assert_eq!(slug("`select`: claim families"), "select-claim-families");
    assert_eq!(
        slug("Outcomes, cooldowns — labels"),
        "outcomes-cooldowns--labels"
    );
    assert_eq!(
        slug("[Versions](docs/x.md) and pinning"),
        "versions-and-pinning"
    );
    assert_eq!(slug("A_b 2.0"), "a_b-20");
    let numbered = anchors("# Inputs\n\n## Inputs\n\n```\n# not a heading\n```\n");
    assert_eq!(
        numbered,
        BTreeSet::from(["inputs".to_string(), "inputs-1".to_string()])
    );
}

#[test]
fn a_broken_link_or_anchor_is_reported() {
    let file = Path::new("README.md");
    assert_eq!(broken(file, "https://example.com/x"), None);
    assert_eq!(broken(file, "ARCHITECTURE.md#codemap"), None);
    assert!(broken(file, "docs/no-such-page.md").is_some());
    assert!(broken(file, "ARCHITECTURE.md#no-such-heading").is_some());
    assert!(broken(file, "../../outside.md").is_some());
    assert_eq!(
        link_targets("see [a](docs/a.md#x \"title\") and ![b](<b c.png>)"),
        vec!["docs/a.md#x".to_string(), "b c.png".to_string()]
    );
}

#[test]
fn the_readme_gives_the_test_command_ci_runs_and_the_demo() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    for command in ["cargo run --example demo", "cargo test --locked"] {
        assert!(
            readme.contains(&format!("```sh\n{command}\n```")),
            "README.md gives `{command}` in a block of its own"
        );
    }
    assert!(
        ci.lines().any(|line| line == "cargo test --locked"),
        ".ci/run runs the exact test command README.md gives: `cargo test --locked`"
    );
}

#[test]
fn the_readme_stays_a_five_minute_read() {
    // Details belong in docs/: README.md stays under 15,000 bytes.
    let size = std::fs::metadata(root().join("README.md")).unwrap().len();
    assert!(
        size <= 15_000,
        "README.md is {size} bytes; move details to docs/"
    );
}
