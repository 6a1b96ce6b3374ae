//! The comparer: the fake's answer held to the recorded one — the status, the headers that carry
//! meaning (`Link`, `Location`, `Content-Type`), and the body: every key the recording has, with
//! the same JSON type and the same value or, where `forms.rs` says so, the same form. The fake may
//! answer more keys than GitHub did. Each git object id the recording names must stand for one
//! object of the fake throughout a scenario, and the other way round (`Shas`).

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::forms::{Form, is_sha, url_form};
use super::recording::Exchange;

/// The fake's answer to one replayed request.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    pub body: AnswerBody,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AnswerBody {
    Empty,
    Json(Value),
    Text(String),
}

/// One way the fake's answer differs from GitHub's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// `status`, `header link`, or the JSON pointer of a body value (`/content/sha`).
    pub at: String,
    pub kind: DifferenceKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DifferenceKind {
    /// The status, a header, or a value (by value or by form) is another.
    Differs { recorded: String, answered: String },
    /// A key of the recording is not in the answer.
    MissingKey,
    /// The answer's value is of another JSON type.
    WrongType {
        recorded: &'static str,
        answered: &'static str,
    },
    /// An array holds another number of items.
    Length { recorded: usize, answered: usize },
    /// A sha of the recording stands for two objects of the fake, or one of the fake's for two
    /// of the recording.
    ShaMismatch { recorded: String, answered: String },
}

impl fmt::Display for Difference {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.at.is_empty() { "body" } else { &self.at };
        match &self.kind {
            DifferenceKind::Differs { recorded, answered } => write!(
                formatter,
                "{at}: GitHub answered {recorded}, the fake {answered}"
            ),
            DifferenceKind::MissingKey => write!(formatter, "{at}: missing"),
            DifferenceKind::WrongType { recorded, answered } => write!(
                formatter,
                "{at}: GitHub answered {}, the fake {}",
                with_article(recorded),
                with_article(answered)
            ),
            DifferenceKind::Length { recorded, answered } => write!(
                formatter,
                "{at}: GitHub answered {recorded} items, the fake {answered}"
            ),
            DifferenceKind::ShaMismatch { recorded, answered } => write!(
                formatter,
                "{at}: the recording's {recorded} and the fake's {answered} do not stand for the same object"
            ),
        }
    }
}

/// The shas of a scenario: the recording's and the fake's, one for one.
#[derive(Clone, Debug, Default)]
pub struct Shas {
    to_fake: BTreeMap<String, String>,
    to_recorded: BTreeMap<String, String>,
}

impl Shas {
    /// Records that `recorded` stands for `fake`; false when either already stands for another.
    pub fn pair(&mut self, recorded: &str, fake: &str) -> bool {
        let known_fake = self.to_fake.get(recorded);
        let known_recorded = self.to_recorded.get(fake);
        if known_fake.is_some_and(|known| known != fake)
            || known_recorded.is_some_and(|known| known != recorded)
        {
            return false;
        }
        self.to_fake.insert(recorded.to_string(), fake.to_string());
        self.to_recorded
            .insert(fake.to_string(), recorded.to_string());
        true
    }

    /// `text` with every recorded sha the scenario has paired replaced by the fake's.
    pub fn translate(&self, text: &str) -> String {
        let mut translated = text.to_string();
        for (recorded, fake) in &self.to_fake {
            translated = translated.replace(recorded.as_str(), fake);
        }
        translated
    }
}

/// Compares answers of one scenario, in order.
pub struct Comparer {
    fake_api: String,
    pub shas: Shas,
}

impl Comparer {
    pub fn new(fake_api: &str, shas: Shas) -> Self {
        Comparer {
            fake_api: fake_api.to_string(),
            shas,
        }
    }

    /// Every difference between the recorded answer and the fake's.
    pub fn compare(&mut self, recorded: &Exchange, answer: &Answer) -> Vec<Difference> {
        let mut differences = Vec::new();
        if recorded.status != answer.status {
            differences.push(differs("status", recorded.status, answer.status));
        }
        differences.extend(self.compare_headers(recorded, answer));
        differences.extend(self.compare_body(&recorded.response, &answer.body));
        differences
    }

    fn compare_headers(&self, recorded: &Exchange, answer: &Answer) -> Vec<Difference> {
        let mut differences = Vec::new();
        for name in ["link", "location", "content-type"] {
            let recorded_value = recorded.answer_header(name);
            let answered_value = answer.headers.get(name).cloned();
            let same = match (&recorded_value, &answered_value) {
                (Some(recorded), Some(answered)) => match name {
                    "link" => self.link_form(recorded) == self.link_form(answered),
                    "location" => {
                        url_form(recorded, &self.fake_api) == url_form(answered, &self.fake_api)
                    }
                    _ => recorded == answered,
                },
                (None, None) => true,
                _ => false,
            };
            if !same {
                differences.push(Difference {
                    at: format!("header {name}"),
                    kind: DifferenceKind::Differs {
                        recorded: recorded_value.unwrap_or_else(|| "none".to_string()),
                        answered: answered_value.unwrap_or_else(|| "none".to_string()),
                    },
                });
            }
        }
        differences
    }

    /// A `Link` header as its relations in order, each URL by form.
    fn link_form(&self, header: &str) -> Vec<(String, String)> {
        header
            .split(',')
            .filter_map(|part| {
                let (target, parameters) = part.split_once(';')?;
                let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
                Some((
                    parameters.trim().to_string(),
                    url_form(target, &self.fake_api),
                ))
            })
            .collect()
    }

    fn compare_body(&mut self, recorded: &Value, answered: &AnswerBody) -> Vec<Difference> {
        let mut differences = Vec::new();
        match (recorded, answered) {
            (Value::String(text), AnswerBody::Empty) if text.is_empty() => {}
            (Value::String(text), AnswerBody::Text(answered)) if !text.is_empty() => {
                if text != answered {
                    differences.push(differs("body", text, answered));
                }
            }
            (Value::Object(_) | Value::Array(_), AnswerBody::Json(answered)) => {
                self.compare_value(None, recorded, answered, "", &mut differences);
            }
            (recorded, answered) => differences.push(differs(
                "body",
                body_kind(recorded),
                answered_kind(answered),
            )),
        }
        differences
    }

    fn compare_value(
        &mut self,
        key: Option<&str>,
        recorded: &Value,
        answered: &Value,
        at: &str,
        differences: &mut Vec<Difference>,
    ) {
        if json_type(recorded) != json_type(answered) {
            differences.push(Difference {
                at: at.to_string(),
                kind: DifferenceKind::WrongType {
                    recorded: json_type(recorded),
                    answered: json_type(answered),
                },
            });
            return;
        }
        match (recorded, answered) {
            (Value::Object(recorded), Value::Object(answered)) => {
                for (name, value) in recorded {
                    let below = format!("{at}/{}", pointer_token(name));
                    match answered.get(name) {
                        Some(answer) => {
                            self.compare_value(Some(name), value, answer, &below, differences)
                        }
                        None => differences.push(Difference {
                            at: below,
                            kind: DifferenceKind::MissingKey,
                        }),
                    }
                }
            }
            (Value::Array(recorded), Value::Array(answered)) => {
                if recorded.len() != answered.len() {
                    differences.push(Difference {
                        at: at.to_string(),
                        kind: DifferenceKind::Length {
                            recorded: recorded.len(),
                            answered: answered.len(),
                        },
                    });
                }
                for (index, (value, answer)) in recorded.iter().zip(answered).enumerate() {
                    self.compare_value(None, value, answer, &format!("{at}/{index}"), differences);
                }
            }
            _ => self.compare_scalar(key, recorded, answered, at, differences),
        }
    }

    fn compare_scalar(
        &mut self,
        key: Option<&str>,
        recorded: &Value,
        answered: &Value,
        at: &str,
        differences: &mut Vec<Difference>,
    ) {
        let form = Form::of(key, recorded);
        if !form.holds(recorded, answered, &self.fake_api) {
            differences.push(differs(at, scalar_text(recorded), scalar_text(answered)));
            return;
        }
        if let (Form::Sha, Value::String(recorded), Value::String(answered)) =
            (form, recorded, answered)
            && is_sha(answered)
            && !self.shas.pair(recorded, answered)
        {
            differences.push(Difference {
                at: at.to_string(),
                kind: DifferenceKind::ShaMismatch {
                    recorded: recorded.clone(),
                    answered: answered.clone(),
                },
            });
        }
    }
}

/// `an array`, `a string`.
fn with_article(kind: &str) -> String {
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {kind}")
}

fn differs(at: &str, recorded: impl fmt::Display, answered: impl fmt::Display) -> Difference {
    Difference {
        at: at.to_string(),
        kind: DifferenceKind::Differs {
            recorded: recorded.to_string(),
            answered: answered.to_string(),
        },
    }
}

/// A key as a JSON pointer token (RFC 6901).
fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(text) => format!("{text:?}"),
        other => other.to_string(),
    }
}

fn body_kind(recorded: &Value) -> String {
    match recorded {
        Value::String(text) if text.is_empty() => "no body".to_string(),
        Value::String(text) => format!("the text {text:?}"),
        other => format!("a JSON {}", json_type(other)),
    }
}

fn answered_kind(answered: &AnswerBody) -> String {
    match answered {
        AnswerBody::Empty => "no body".to_string(),
        AnswerBody::Text(text) => format!("the text {text:?}"),
        AnswerBody::Json(value) => format!("a JSON {}", json_type(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FAKE: &str = "http://127.0.0.1:4321";

    /// A recorded `POST /repos/o/r/git/refs` with GitHub's answer.
    fn recorded_ref_creation() -> Exchange {
        serde_json::from_value(json!({
            "method": "post",
            "path": "/repos/o/r/git/refs",
            "body": {"ref": "refs/heads/test", "sha": "0000000000000000000000000000000000000002"},
            "status": 201,
            "response": {
                "ref": "refs/heads/test",
                "node_id": "MDA6RW50aXR5MQ==",
                "url": "https://api.github.com/repos/o/r/git/refs/heads/test",
                "object": {
                    "sha": "0000000000000000000000000000000000000002",
                    "type": "commit",
                    "url": "https://api.github.com/repos/o/r/git/commits/0000000000000000000000000000000000000002"
                }
            },
            "reqheaders": {},
            "headers": {
                "content-type": "application/json; charset=utf-8",
                "location": "https://api.github.com/repos/o/r/git/refs/heads/test"
            }
        }))
        .expect("an exchange")
    }

    /// The answer a faithful fake gives to that request.
    fn faithful_answer() -> Answer {
        let sha = "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3";
        Answer {
            status: 201,
            headers: BTreeMap::from([
                (
                    "content-type".to_string(),
                    "application/json; charset=utf-8".to_string(),
                ),
                (
                    "location".to_string(),
                    format!("{FAKE}/repos/o/r/git/refs/heads/test"),
                ),
            ]),
            body: AnswerBody::Json(json!({
                "ref": "refs/heads/test",
                "node_id": "REF_kwDOa94a8fe5ccb1",
                "url": format!("{FAKE}/repos/o/r/git/refs/heads/test"),
                "object": {
                    "sha": sha,
                    "type": "commit",
                    "url": format!("{FAKE}/repos/o/r/git/commits/{sha}")
                },
                "extra": "a key GitHub did not answer is allowed"
            })),
        }
    }

    fn compare(answer: &Answer) -> Vec<Difference> {
        Comparer::new(FAKE, Shas::default()).compare(&recorded_ref_creation(), answer)
    }

    fn body_mut(answer: &mut Answer) -> &mut Value {
        match &mut answer.body {
            AnswerBody::Json(body) => body,
            _ => unreachable!("a JSON answer"),
        }
    }

    #[test]
    fn a_faithful_answer_has_no_difference() {
        assert_eq!(compare(&faithful_answer()), Vec::new());
    }

    #[test]
    fn a_changed_status_is_a_difference() {
        let mut answer = faithful_answer();
        answer.status = 422;
        assert_eq!(compare(&answer), vec![differs("status", 201, 422)]);
    }

    #[test]
    fn a_missing_key_is_a_difference() {
        let mut answer = faithful_answer();
        body_mut(&mut answer)["object"]
            .as_object_mut()
            .unwrap()
            .remove("type");
        assert_eq!(
            compare(&answer),
            vec![Difference {
                at: "/object/type".to_string(),
                kind: DifferenceKind::MissingKey
            }]
        );
    }

    #[test]
    fn a_value_of_another_type_is_a_difference() {
        let mut answer = faithful_answer();
        body_mut(&mut answer)["object"] = json!(null);
        let found = compare(&answer);
        assert_eq!(
            found,
            vec![Difference {
                at: "/object".to_string(),
                kind: DifferenceKind::WrongType {
                    recorded: "object",
                    answered: "null"
                }
            }]
        );
        assert_eq!(
            found[0].to_string(),
            "/object: GitHub answered an object, the fake a null"
        );
    }

    #[test]
    fn a_different_value_is_a_difference() {
        let mut answer = faithful_answer();
        body_mut(&mut answer)["ref"] = json!("refs/heads/other");
        assert_eq!(
            compare(&answer),
            vec![differs(
                "/ref",
                "\"refs/heads/test\"",
                "\"refs/heads/other\""
            )]
        );
    }

    #[test]
    fn a_value_of_another_form_is_a_difference() {
        let mut answer = faithful_answer();
        body_mut(&mut answer)["object"]["sha"] = json!("not a sha");
        body_mut(&mut answer)["url"] = json!(format!("{FAKE}/repos/o/r/git/refs/heads/other"));
        let found = compare(&answer);
        assert_eq!(
            found.iter().map(|d| d.at.as_str()).collect::<Vec<_>>(),
            ["/url", "/object/sha"]
        );
    }

    #[test]
    fn a_missing_or_different_meaningful_header_is_a_difference() {
        let mut answer = faithful_answer();
        answer.headers.remove("location");
        answer
            .headers
            .insert("content-type".to_string(), "text/plain".to_string());
        let found = compare(&answer);
        assert_eq!(
            found.iter().map(|d| d.at.as_str()).collect::<Vec<_>>(),
            ["header location", "header content-type"]
        );
    }

    #[test]
    fn a_link_header_compares_relation_by_relation() {
        let recorded: Exchange = serde_json::from_value(json!({
            "method": "get", "path": "/repos/o/r/issues?per_page=3", "body": "",
            "status": 200, "response": [], "reqheaders": {},
            "headers": {
                "content-type": "application/json; charset=utf-8",
                "link": "<https://api.github.com/repositories/1000/issues?per_page=3&page=2>; rel=\"next\", <https://api.github.com/repositories/1000/issues?per_page=3&page=5>; rel=\"last\""
            }
        }))
        .unwrap();
        let answer = |link: String| Answer {
            status: 200,
            headers: BTreeMap::from([
                (
                    "content-type".to_string(),
                    "application/json; charset=utf-8".to_string(),
                ),
                ("link".to_string(), link),
            ]),
            body: AnswerBody::Json(json!([])),
        };
        let mut comparer = Comparer::new(FAKE, Shas::default());
        let by_id = format!(
            "<{FAKE}/repositories/7/issues?per_page=3&page=2>; rel=\"next\", <{FAKE}/repositories/7/issues?per_page=3&page=5>; rel=\"last\""
        );
        assert_eq!(comparer.compare(&recorded, &answer(by_id)), Vec::new());
        let by_name = format!(
            "<{FAKE}/repos/o/r/issues?per_page=3&page=2>; rel=\"next\", <{FAKE}/repos/o/r/issues?per_page=3&page=5>; rel=\"last\""
        );
        let found = comparer.compare(&recorded, &answer(by_name));
        assert_eq!(
            found.iter().map(|d| d.at.as_str()).collect::<Vec<_>>(),
            ["header link"]
        );
    }

    #[test]
    fn a_sha_that_stands_for_two_objects_is_a_difference() {
        let mut comparer = Comparer::new(FAKE, Shas::default());
        let recorded = recorded_ref_creation();
        assert_eq!(comparer.compare(&recorded, &faithful_answer()), Vec::new());
        let mut moved = faithful_answer();
        let other = "b94a8fe5ccb19ba61c4c0873d391e987982fbbd3";
        body_mut(&mut moved)["object"]["sha"] = json!(other);
        let found = comparer.compare(&recorded, &moved);
        assert_eq!(
            found,
            vec![Difference {
                at: "/object/sha".to_string(),
                kind: DifferenceKind::ShaMismatch {
                    recorded: "0000000000000000000000000000000000000002".to_string(),
                    answered: other.to_string()
                }
            }]
        );
    }

    #[test]
    fn an_array_of_another_length_is_a_difference() {
        let recorded: Exchange = serde_json::from_value(json!({
            "method": "get", "path": "/x", "body": "", "status": 200,
            "response": [{"name": "a"}, {"name": "b"}], "reqheaders": {},
            "headers": {"content-type": "application/json; charset=utf-8"}
        }))
        .unwrap();
        let answer = Answer {
            status: 200,
            headers: BTreeMap::from([(
                "content-type".to_string(),
                "application/json; charset=utf-8".to_string(),
            )]),
            body: AnswerBody::Json(json!([{"name": "a"}])),
        };
        assert_eq!(
            Comparer::new(FAKE, Shas::default()).compare(&recorded, &answer),
            vec![Difference {
                at: String::new(),
                kind: DifferenceKind::Length {
                    recorded: 2,
                    answered: 1
                }
            }]
        );
    }

    #[test]
    fn an_empty_answer_to_a_recorded_body_is_a_difference() {
        let mut answer = faithful_answer();
        answer.body = AnswerBody::Empty;
        assert_eq!(
            compare(&answer),
            vec![differs("body", "a JSON object", "no body")]
        );
    }
}
