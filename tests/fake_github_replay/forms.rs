//! How a recorded value is held to the fake's: by value, or by form where the value depends on
//! ids, times or the server that answered — and where the recorder replaced it with a stand-in
//! (`octokit/fixtures` sets ids to counters from 1000, every `node_id` to one string, shas to
//! counters padded to 40 digits, dates to 2017-10-10T16:00:00Z and some counts to 42).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// The API origin of the recordings.
pub const RECORDED_API: &str = "https://api.github.com";

/// Counts the recorder set to 42: only their type can be compared.
const RECORDER_COUNTS: [&str; 10] = [
    "comments",
    "forks",
    "forks_count",
    "network_count",
    "open_issues",
    "open_issues_count",
    "stargazers_count",
    "subscribers_count",
    "watchers",
    "watchers_count",
];

/// The recorder's temporary repositories (`tmp-scenario-<name>-<17 digits>-<5 characters>`),
/// renamed to `<name>` everywhere but in a few URLs it missed (`reactions.url`).
static TEMPORARY_REPOSITORY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"tmp-scenario-([^/]+)-\d{17}-\w{5}").expect("a valid regex"));

/// The address GitHub gives an account's commits made on the web: `<id>+<login>@…`.
static NO_REPLY_EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\d+\+([^@]+)@users\.noreply\.github\.com$").expect("a valid regex")
});

/// How one value is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// The same value.
    Exact,
    /// An id: any non-negative integer.
    Id,
    /// A count the recorder replaced: any non-negative integer.
    RecordedCount,
    /// A GraphQL node id: any non-empty string.
    NodeId,
    /// A git object id: 40 lower-case hex digits.
    Sha,
    /// An RFC 3339 date and time.
    Date,
    /// An http(s) URL: the same once the API's origin, the temporary repository's name, shas
    /// and ids in the path are set aside.
    Url,
    /// A no-reply commit email: the same login, any account id.
    NoReplyEmail,
}

impl Form {
    /// The form of `recorded`, found under `key` (`None` inside an array).
    pub fn of(key: Option<&str>, recorded: &Value) -> Form {
        match recorded {
            Value::Number(_) => match key {
                Some(key) if key == "id" || key.ends_with("_id") => Form::Id,
                Some(key) if RECORDER_COUNTS.contains(&key) => Form::RecordedCount,
                _ => Form::Exact,
            },
            Value::String(text) => string_form(key, text),
            _ => Form::Exact,
        }
    }

    /// Whether `answered` (of the same JSON type as `recorded`) is `recorded` in this form.
    pub fn holds(self, recorded: &Value, answered: &Value, fake_api: &str) -> bool {
        match (self, recorded, answered) {
            (Form::Exact, _, _) => recorded == answered,
            (Form::Id | Form::RecordedCount, _, answered) => answered.is_u64(),
            (Form::NodeId, _, Value::String(answered)) => !answered.is_empty(),
            (Form::Sha, _, Value::String(answered)) => is_sha(answered),
            (Form::Date, _, Value::String(answered)) => is_date(answered),
            (Form::Url, Value::String(recorded), Value::String(answered)) => {
                url_form(recorded, fake_api) == url_form(answered, fake_api)
            }
            (Form::NoReplyEmail, Value::String(recorded), Value::String(answered)) => {
                no_reply_login(recorded).is_some()
                    && no_reply_login(recorded) == no_reply_login(answered)
            }
            _ => false,
        }
    }
}

fn string_form(key: Option<&str>, text: &str) -> Form {
    if key == Some("node_id") {
        Form::NodeId
    } else if is_sha(text) {
        Form::Sha
    } else if is_date(text) {
        Form::Date
    } else if text.starts_with("https://") || text.starts_with("http://") {
        Form::Url
    } else if no_reply_login(text).is_some() {
        Form::NoReplyEmail
    } else {
        Form::Exact
    }
}

pub fn is_sha(text: &str) -> bool {
    text.len() == 40
        && text
            .bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

fn is_date(text: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(text).is_ok()
}

fn no_reply_login(text: &str) -> Option<&str> {
    NO_REPLY_EMAIL
        .captures(text)
        .and_then(|captures| captures.get(1))
        .map(|login| login.as_str())
}

/// A URL with what depends on the server set aside: the API's origin (the recording's or the
/// fake's) as `{api}`, the recorder's temporary repository names as the scenario's, 40-hex
/// path segments as `{sha}` and the id after `/repositories/` or `/u/` as `{id}`.
pub fn url_form(url: &str, fake_api: &str) -> String {
    let on_api = [RECORDED_API, fake_api]
        .iter()
        .find_map(|origin| url.strip_prefix(origin))
        .filter(|rest| rest.is_empty() || rest.starts_with('/') || rest.starts_with('?'));
    let url = match on_api {
        Some(rest) => format!("{{api}}{rest}"),
        None => url.to_string(),
    };
    let url = TEMPORARY_REPOSITORY.replace_all(&url, "$1");
    let (path, query) = match url.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (url.as_ref(), None),
    };
    let mut segments: Vec<String> = Vec::new();
    for segment in path.split('/') {
        let after_id_holder = matches!(
            segments.last().map(String::as_str),
            Some("repositories" | "u")
        );
        let segment = if is_sha(segment) {
            "{sha}".to_string()
        } else if after_id_holder
            && !segment.is_empty()
            && segment.bytes().all(|b| b.is_ascii_digit())
        {
            "{id}".to_string()
        } else {
            segment.to_string()
        };
        segments.push(segment);
    }
    let path = segments.join("/");
    match query {
        Some(query) => format!("{path}?{query}"),
        None => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FAKE: &str = "http://127.0.0.1:4321";

    #[test]
    fn urls_of_the_api_compare_by_path_with_shas_and_ids_set_aside() {
        assert_eq!(
            url_form(
                "https://api.github.com/repositories/1000/issues?per_page=3&page=2",
                FAKE
            ),
            url_form(
                "http://127.0.0.1:4321/repositories/555/issues?per_page=3&page=2",
                FAKE
            ),
        );
        assert_eq!(
            url_form(
                "https://api.github.com/repos/o/r/git/commits/0000000000000000000000000000000000000002",
                FAKE
            ),
            "{api}/repos/o/r/git/commits/{sha}"
        );
        assert_ne!(
            url_form("https://api.github.com/repos/o/r/issues/1", FAKE),
            url_form("http://127.0.0.1:4321/repos/o/r/issues/2", FAKE),
        );
        assert_ne!(
            url_form("https://github.com/o/r/issues/1", FAKE),
            url_form("http://127.0.0.1:4321/o/r/issues/1", FAKE),
            "only the API's origin is set aside"
        );
    }

    #[test]
    fn a_temporary_repository_name_the_recorder_missed_is_the_scenarios() {
        assert_eq!(
            url_form(
                "https://api.github.com/repos/org/tmp-scenario-lock-issue-20220719043651190-v2c1k/issues/1/reactions",
                FAKE
            ),
            "{api}/repos/org/lock-issue/issues/1/reactions"
        );
    }

    #[test]
    fn values_that_hold_ids_times_and_shas_compare_by_form() {
        let sha = json!("0000000000000000000000000000000000000001");
        assert_eq!(Form::of(Some("sha"), &sha), Form::Sha);
        assert!(Form::Sha.holds(
            &sha,
            &json!("3f3f005b29247e51a4f4d6b8ce07b67646cd6074"),
            FAKE
        ));
        assert!(!Form::Sha.holds(&sha, &json!("3f3f005b"), FAKE));
        let date = json!("2017-10-10T16:00:00Z");
        assert_eq!(Form::of(Some("created_at"), &date), Form::Date);
        assert!(!Form::Date.holds(&date, &json!("yesterday"), FAKE));
        assert_eq!(Form::of(Some("id"), &json!(1000)), Form::Id);
        assert_eq!(Form::of(Some("comments"), &json!(42)), Form::RecordedCount);
        assert_eq!(Form::of(Some("number"), &json!(1)), Form::Exact);
        let email = json!("31898046+someone@users.noreply.github.com");
        assert!(Form::NoReplyEmail.holds(
            &email,
            &json!("7+someone@users.noreply.github.com"),
            FAKE
        ));
        assert!(!Form::NoReplyEmail.holds(
            &email,
            &json!("7+other@users.noreply.github.com"),
            FAKE
        ));
        assert_eq!(Form::of(Some("name"), &json!("bug")), Form::Exact);
    }
}
