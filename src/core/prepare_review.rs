//! `prepare-review`'s decisions (contract §3.8, §3a): which open pull requests are evidence for
//! the planner's overlap review, what `open-prs.json` says about each, and the JSON Schema the
//! review must answer in.
//!
//! Only klaud's own pull requests are evidence: head `<branch-prefix><id>` in this repository,
//! drafts included. Other people's pull requests and forks never hold a family back, so the
//! review never sees them. The schema asks for exactly one decision per supplied candidate,
//! in the review format `select --review` reads (§3a); what the schema cannot say (no repeated
//! id, a `proceed` keeps the supplied family) `select` still checks.

use serde::Serialize;
use serde_json::{Value, json};

use super::candidate::Candidate;
use super::policy::Policy;
use super::snapshot::Listed;

/// An open pull request as listed, before its files are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedPullRequest {
    pub number: u64,
    pub title: String,
    pub draft: bool,
    pub author: Option<String>,
    pub head_branch: String,
    /// `owner/name`; `None` when the head repository was deleted.
    pub head_repository: Option<String>,
    pub head_sha: String,
    pub labels: Vec<String>,
}

/// The candidate whose session owns `pull`, when it is klaud's: its head is a
/// `<branch-prefix><id>` branch of `repository`.
pub fn klaud_candidate_of<'p>(
    pull: &'p ListedPullRequest,
    repository: &str,
    policy: &Policy,
) -> Option<&'p str> {
    policy.candidate_of_pull_request(
        pull.head_repository.as_deref(),
        &pull.head_branch,
        repository,
    )
}

/// One changed file of a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ChangedFile {
    pub path: String,
    /// `added`, `removed`, `modified`, `renamed`, `copied`, `changed` or `unchanged`.
    pub status: String,
    /// The file's name before a rename (or the source of a copy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_path: Option<String>,
}

/// One record of `open-prs.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct OpenPullRequestEvidence {
    pub number: u64,
    pub title: String,
    /// The candidate whose branch the pull request is from.
    pub candidate: String,
    /// That candidate's family when it is among the supplied candidates.
    pub family: Option<String>,
    pub branch: String,
    pub draft: bool,
    pub author: Option<String>,
    pub labels: Vec<String>,
    pub head_sha: String,
    /// False when GitHub's 3,000-file cap or a failed read left `files` short.
    pub files_complete: bool,
    pub files_incomplete_reason: Option<String>,
    pub files: Vec<ChangedFile>,
}

/// `open-prs.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct OpenPullRequestsDocument {
    pub repository: String,
    pub branch_prefix: String,
    /// The candidates the review decides on, in file order.
    pub candidates: Vec<String>,
    /// klaud's open pull requests, by number.
    pub pull_requests: Vec<OpenPullRequestEvidence>,
}

/// The evidence record of one klaud pull request, from its changed files as far as they could
/// be read (a gap says why they are short, never with an API body).
pub fn evidence_of(
    pull: &ListedPullRequest,
    candidate: &str,
    files: Listed<ChangedFile>,
    candidates: &[Candidate],
) -> OpenPullRequestEvidence {
    let files_complete = files.is_complete();
    let Listed {
        items: files,
        gap: files_incomplete_reason,
    } = files;
    OpenPullRequestEvidence {
        number: pull.number,
        title: pull.title.clone(),
        candidate: candidate.to_string(),
        family: candidates
            .iter()
            .find(|known| known.id == candidate)
            .map(|known| known.family.clone()),
        branch: pull.head_branch.clone(),
        draft: pull.draft,
        author: pull.author.clone(),
        labels: pull.labels.clone(),
        head_sha: pull.head_sha.clone(),
        files_complete,
        files_incomplete_reason,
        files,
    }
}

/// The JSON Schema of the review: `{"decisions": [...]}` with exactly one decision per
/// candidate (`minItems` = `maxItems` = the number of candidates), each naming one of the
/// supplied ids, and optionally the display model a discovered candidate's baseline is looked up
/// with (`baseline-model`). Only widely supported keywords are used, so that a structured-output step can
/// take it as its `--json-schema`.
pub fn review_schema(candidates: &[Candidate]) -> Value {
    let count = candidates.len();
    let mut candidate_id = json!({
        "type": "string",
        "description": "The id of the candidate this decision is about; every candidate gets exactly one decision.",
    });
    if count > 0 {
        let ids: Vec<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
        candidate_id["enum"] = json!(ids);
    }
    json!({
        "title": "klaud overlap review",
        "description": format!(
            "One decision for each of the {count} candidate(s): proceed when no open klaud pull request already makes the candidate's change, duplicate when one does, uncertain when the evidence cannot tell."
        ),
        "type": "object",
        "additionalProperties": false,
        "required": ["decisions"],
        "properties": {
            "decisions": {
                "type": "array",
                "minItems": count,
                "maxItems": count,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["candidate-id", "decision", "family", "pull-requests", "reason"],
                    "properties": {
                        "candidate-id": candidate_id,
                        "decision": {
                            "type": "string",
                            "enum": ["proceed", "duplicate", "uncertain"],
                        },
                        "family": {
                            "type": "string",
                            "description": "The candidate's family as supplied; a proceed must keep it unchanged.",
                        },
                        "pull-requests": {
                            "type": "array",
                            "description": "Numbers of the open pull requests the decision rests on.",
                            "items": {"type": "integer", "minimum": 1},
                        },
                        "reason": {
                            "type": "string",
                            "description": "One or two sentences a maintainer can check.",
                        },
                        "baseline-model": {
                            "type": "string",
                            "description": "Optional, for a proceed on a discovered candidate (one with a source): the publisher's display model of its source's model (e.g. DeepSeek-R1-0528), which verify-baselines looks its published baseline up with; needed when the configuration's discovery.models does not name that model.",
                        },
                    },
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::candidate::parse_candidates;
    use crate::core::policy::tests::inferencex_policy;
    use crate::core::select::review::{ReviewInput, read_review};

    fn pull(branch: &str, head_repository: Option<&str>) -> ListedPullRequest {
        ListedPullRequest {
            number: 7,
            title: "t".into(),
            draft: true,
            author: Some("Klaud-Cold".into()),
            head_branch: branch.into(),
            head_repository: head_repository.map(str::to_string),
            head_sha: "abc".into(),
            labels: Vec::new(),
        }
    }

    fn candidates() -> Vec<Candidate> {
        parse_candidates(r#"[{"id": "a", "family": "fa"}, {"id": "b", "family": "fb"}]"#).unwrap()
    }

    fn accepts(schema: &Value, review: &Value) -> bool {
        jsonschema::validator_for(schema).unwrap().is_valid(review)
    }

    #[test]
    fn only_candidate_branches_of_this_repository_are_klauds() {
        let policy = inferencex_policy();
        let own = pull("klaud/auto-a", Some("acme/bench"));
        assert_eq!(klaud_candidate_of(&own, "acme/bench", &policy), Some("a"));
        let fork = pull("klaud/auto-a", Some("mallory/bench"));
        assert_eq!(klaud_candidate_of(&fork, "acme/bench", &policy), None);
        let deleted_fork = pull("klaud/auto-a", None);
        assert_eq!(
            klaud_candidate_of(&deleted_fork, "acme/bench", &policy),
            None
        );
        let person = pull("feature/a", Some("acme/bench"));
        assert_eq!(klaud_candidate_of(&person, "acme/bench", &policy), None);
    }

    #[test]
    fn the_schema_asks_for_exactly_one_decision_per_candidate() {
        let schema = review_schema(&candidates());
        let decisions = &schema["properties"]["decisions"];
        assert_eq!(decisions["minItems"], 2);
        assert_eq!(decisions["maxItems"], 2);
        assert_eq!(
            decisions["items"]["properties"]["candidate-id"]["enum"],
            json!(["a", "b"])
        );
    }

    #[test]
    fn a_review_the_schema_accepts_is_one_select_accepts() {
        let schema = review_schema(&candidates());
        let review = json!({"decisions": [
            {"candidate-id": "a", "decision": "proceed", "family": "fa", "pull-requests": [], "reason": "new"},
            {"candidate-id": "b", "decision": "duplicate", "family": "fb", "pull-requests": [12], "reason": "#12 does it"},
        ]});
        assert!(accepts(&schema, &review));
        assert!(matches!(
            read_review(&review.to_string(), &candidates()),
            ReviewInput::Decisions(_)
        ));
    }

    #[test]
    fn the_schema_rejects_missing_extra_unknown_and_malformed_decisions() {
        let schema = review_schema(&candidates());
        let decision = |id: &str, verdict: &str| json!({"candidate-id": id, "decision": verdict, "family": "fa", "pull-requests": [], "reason": ""});
        let one_short = json!({"decisions": [decision("a", "proceed")]});
        let one_too_many = json!({"decisions": [
            decision("a", "proceed"), decision("b", "proceed"), decision("a", "proceed")
        ]});
        let unknown = json!({"decisions": [decision("a", "proceed"), decision("z", "proceed")]});
        let bad_verdict = json!({"decisions": [decision("a", "proceed"), decision("b", "maybe")]});
        let mut missing_reason = decision("b", "proceed");
        missing_reason.as_object_mut().unwrap().remove("reason");
        let no_reason = json!({"decisions": [decision("a", "proceed"), missing_reason]});
        for review in [one_short, one_too_many, unknown, bad_verdict, no_reason] {
            assert!(!accepts(&schema, &review), "{review}");
        }
    }

    #[test]
    fn a_decision_may_name_the_display_model_of_its_baseline_and_both_modes_read_it() {
        let schema = review_schema(&candidates());
        let review = json!({"decisions": [
            {"candidate-id": "a", "decision": "proceed", "family": "fa", "pull-requests": [],
             "reason": "new", "baseline-model": "DeepSeek-R1-0528"},
            {"candidate-id": "b", "decision": "duplicate", "family": "fb", "pull-requests": [12],
             "reason": "#12 does it"},
        ]});
        assert!(accepts(&schema, &review));
        let ReviewInput::Decisions(read) = read_review(&review.to_string(), &candidates()) else {
            panic!("a valid review");
        };
        let decision = read.decision("a").unwrap();
        assert_eq!(decision.baseline_model.as_deref(), Some("DeepSeek-R1-0528"));
        assert_eq!(read.decision("b").unwrap().baseline_model, None);
        let mut not_text = review.clone();
        not_text["decisions"][0]["baseline-model"] = json!(3);
        assert!(!accepts(&schema, &not_text));
        assert!(read_review(&not_text.to_string(), &candidates()).is_invalid());
    }

    #[test]
    fn without_candidates_the_schema_asks_for_no_decision() {
        let schema = review_schema(&[]);
        assert_eq!(schema["properties"]["decisions"]["maxItems"], 0);
        assert!(accepts(&schema, &json!({"decisions": []})));
        assert!(jsonschema::meta::is_valid(&schema));
    }

    #[test]
    fn evidence_names_the_family_of_a_supplied_candidate_and_why_files_are_short() {
        let record = evidence_of(
            &pull("klaud/auto-a", Some("acme/bench")),
            "a",
            Listed::failed("the changed files could not be read (HTTP 502)"),
            &candidates(),
        );
        assert_eq!(record.family.as_deref(), Some("fa"));
        assert!(!record.files_complete);
        let text = serde_json::to_value(&record).unwrap();
        assert_eq!(text["files-complete"], false);
        assert_eq!(
            text["files-incomplete-reason"],
            "the changed files could not be read (HTTP 502)"
        );
    }
}
