//! The dashboard's checkboxes as text: each a GitHub task-list item ending in a hidden marker
//! that names what it asks and how klaud rendered it (`<!-- klaud:retry-now:<id> -->`,
//! `<!-- klaud:pause:on -->`, `<!-- klaud:retry-aftercare:<pull request> -->`), so a body alone says which boxes a person changed since klaud
//! wrote it; and the reading of a body back into boxes.
//!
//! A marker's target is percent-encoded outside `[A-Za-z0-9._-]`, so no name (a family is any
//! string) can end the comment or forge another marker.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::core::steering::Request;

/// What a box asks when it differs from its rendering.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BoxKey {
    RetryNow(String),
    ResumeNow(String),
    ReleaseHold(String),
    /// A pull request waiting for a maintainer in after-care: one more session.
    RetryAftercare(u64),
    Pause,
}

impl BoxKey {
    /// The request a change of this box makes: ticking an action box asks for it; changing the
    /// pause box from its rendering switches the pause.
    pub fn request(&self, ticked: bool) -> Request {
        match self {
            BoxKey::RetryNow(candidate) => Request::RetryNow(candidate.clone()),
            BoxKey::ResumeNow(candidate) => Request::ResumeNow(candidate.clone()),
            BoxKey::ReleaseHold(family) => Request::ReleaseHold(family.clone()),
            BoxKey::RetryAftercare(number) => Request::RetryAftercare(*number),
            BoxKey::Pause if ticked => Request::Pause,
            BoxKey::Pause => Request::Unpause,
        }
    }

    fn marker(&self, rendered_ticked: bool) -> String {
        match self {
            BoxKey::RetryNow(target) => format!("<!-- klaud:retry-now:{} -->", encode(target)),
            BoxKey::ResumeNow(target) => format!("<!-- klaud:resume-now:{} -->", encode(target)),
            BoxKey::ReleaseHold(target) => {
                format!("<!-- klaud:release-hold:{} -->", encode(target))
            }
            BoxKey::RetryAftercare(number) => format!("<!-- klaud:retry-aftercare:{number} -->"),
            BoxKey::Pause if rendered_ticked => "<!-- klaud:pause:on -->".to_string(),
            BoxKey::Pause => "<!-- klaud:pause:off -->".to_string(),
        }
    }
}

/// One checkbox as rendered: what it asks, whether klaud drew it ticked (only the pause box is
/// ever drawn ticked, while klaud is paused) and whether it is shown ticked (a tick klaud keeps
/// for a later pass is shown as the person left it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedBox {
    pub key: BoxKey,
    pub rendered_ticked: bool,
    pub shown_ticked: bool,
    /// Markdown after the box.
    pub label: String,
}

impl RenderedBox {
    /// The task-list line.
    pub fn line(&self) -> String {
        let tick = if self.shown_ticked { 'x' } else { ' ' };
        format!(
            "- [{tick}] {} {}",
            self.label,
            self.key.marker(self.rendered_ticked)
        )
    }
}

/// One box as read from a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadBox {
    pub key: BoxKey,
    pub ticked: bool,
    pub rendered_ticked: bool,
}

impl ReadBox {
    /// True when a person changed it from how klaud rendered it.
    pub fn changed(&self) -> bool {
        self.ticked != self.rendered_ticked
    }
}

static BOX_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s{0,3}[-*+]\s+\[(?P<tick>[ xX])\]\s.*<!-- klaud:(?P<kind>retry-now|resume-now|release-hold|retry-aftercare|pause):(?P<target>[A-Za-z0-9._%-]+) -->\s*$",
    )
    .expect("valid pattern")
});

/// Every klaud checkbox of `body`, by key (a key repeated keeps its first line; a marker whose
/// target does not decode, or a pause marker other than `on`/`off`, is no box).
pub fn read_boxes(body: &str) -> BTreeMap<BoxKey, ReadBox> {
    let mut boxes = BTreeMap::new();
    for line in body.lines() {
        let Some(captures) = BOX_LINE.captures(line) else {
            continue;
        };
        let ticked = &captures["tick"] != " ";
        let target = &captures["target"];
        let (key, rendered_ticked) = match &captures["kind"] {
            "pause" => match target {
                "on" => (BoxKey::Pause, true),
                "off" => (BoxKey::Pause, false),
                _ => continue,
            },
            "retry-aftercare" => match target.parse::<u64>() {
                Ok(number) if target.bytes().all(|byte| byte.is_ascii_digit()) => {
                    (BoxKey::RetryAftercare(number), false)
                }
                _ => continue,
            },
            kind => {
                let Some(target) = decode(target) else {
                    continue;
                };
                let key = match kind {
                    "retry-now" => BoxKey::RetryNow(target),
                    "resume-now" => BoxKey::ResumeNow(target),
                    _ => BoxKey::ReleaseHold(target),
                };
                (key, false)
            }
        };
        boxes.entry(key.clone()).or_insert(ReadBox {
            key,
            ticked,
            rendered_ticked,
        });
    }
    boxes
}

/// The boxes of `body` a person changed from their rendering.
pub fn changed_boxes(body: &str) -> Vec<ReadBox> {
    read_boxes(body)
        .into_values()
        .filter(ReadBox::changed)
        .collect()
}

fn encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(key: BoxKey, rendered_ticked: bool) -> String {
        RenderedBox {
            key,
            rendered_ticked,
            shown_ticked: rendered_ticked,
            label: "a label".into(),
        }
        .line()
    }

    #[test]
    fn a_rendered_box_reads_back_unchanged_and_a_tick_reads_as_a_change() {
        for (key, ticked) in [
            (BoxKey::RetryNow("c-1".into()), false),
            (BoxKey::ResumeNow("c.2".into()), false),
            (
                BoxKey::ReleaseHold("fam ily --> <!-- klaud:pause:on -->".into()),
                false,
            ),
            (BoxKey::Pause, true),
            (BoxKey::Pause, false),
        ] {
            let line = rendered(key.clone(), ticked);
            let boxes = read_boxes(&line);
            assert_eq!(boxes.len(), 1, "{line}");
            assert!(!boxes[&key].changed(), "{line}");
            let toggled = if ticked {
                line.replacen("[x]", "[ ]", 1)
            } else {
                line.replacen("[ ]", "[x]", 1)
            };
            let changed = changed_boxes(&toggled);
            assert_eq!(changed.len(), 1, "{toggled}");
            assert_eq!(changed[0].key, key);
        }
    }

    #[test]
    fn the_pause_box_asks_to_pause_or_to_go_on() {
        assert_eq!(BoxKey::Pause.request(true), Request::Pause);
        assert_eq!(BoxKey::Pause.request(false), Request::Unpause);
        assert_eq!(
            BoxKey::RetryNow("c".into()).request(true),
            Request::RetryNow("c".into())
        );
    }

    #[test]
    fn other_lines_and_bad_markers_are_no_boxes() {
        let body = "- [x] no marker\n\
                    - [x] bad <!-- klaud:pause:maybe -->\n\
                    - [x] bad <!-- klaud:retry-now:%G1 -->\n\
                    text <!-- klaud:retry-now:c -->\n\
                    - [X] upper case tick <!-- klaud:retry-now:c -->\n\
                    * [x] repeated <!-- klaud:retry-now:c -->";
        let boxes = read_boxes(body);
        assert_eq!(boxes.len(), 1);
        assert!(boxes[&BoxKey::RetryNow("c".into())].ticked);
    }
}
