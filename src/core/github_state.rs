//! GitHub's state words as types: the state of a pull request or an issue, the status and
//! conclusion of a workflow run or job, the action of a `workflow_run` event, and an account's
//! role on a repository.
//!
//! The adapter reads GitHub's JSON into these types and nothing else compares GitHub's words:
//! the core asks a type (`is_open`, `is_completed`, `is_success`) or compares variants. Each
//! variant has exactly one spelling, GitHub's own, used both to read an answer and to build a
//! query (`status=in_progress`). A word GitHub adds later never makes a read fail: it is kept
//! as `Other` with GitHub's spelling (so messages and result files show it as they did), and
//! read conservatively: an unknown status is not completed (the run counts as active), an
//! unknown conclusion is not a success, an unknown pull request or issue state is not open, an
//! unknown role may not steer.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An enum of GitHub words with one spelling per variant and `Other` for any other word.
macro_rules! github_words {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$variant_meta:meta])* $variant:ident = $word:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$variant_meta])* $variant,)+
            /// A word this version does not know, as GitHub spelled it.
            Other(String),
        }

        impl $name {
            /// GitHub's spelling.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $word,)+
                    $name::Other(word) => word,
                }
            }
        }

        impl From<&str> for $name {
            fn from(word: &str) -> Self {
                match word {
                    $($word => $name::$variant,)+
                    other => $name::Other(other.to_string()),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "description": concat!(
                        "GitHub's word, one of ",
                        $("`", $word, "` ",)+
                        "or a word added later"
                    ),
                    "type": "string",
                })
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let word = String::deserialize(deserializer)?;
                Ok($name::from(word.as_str()))
            }
        }
    };
}

github_words! {
    /// The `state` of a pull request, and of the issue side of one (REST spells both the same
    /// way; a merged pull request is `closed`).
    pub enum PullRequestState {
        Open = "open",
        Closed = "closed",
    }
}

impl PullRequestState {
    /// Only `open` is open.
    pub fn is_open(&self) -> bool {
        *self == PullRequestState::Open
    }
}

github_words! {
    /// The `state` of an issue.
    pub enum IssueState {
        Open = "open",
        Closed = "closed",
    }
}

impl IssueState {
    /// Only `open` is open.
    pub fn is_open(&self) -> bool {
        *self == IssueState::Open
    }
}

github_words! {
    /// An account's role on a repository: GitHub's `role_name` (a custom role's name is
    /// `Other`), or the legacy `permission` read into the same words; `none` is no access.
    pub enum RepositoryPermission {
        Admin = "admin",
        Maintain = "maintain",
        Write = "write",
        Triage = "triage",
        Read = "read",
        None = "none",
    }
}

impl RepositoryPermission {
    /// Whether an account with this role may steer klaud: write, maintain or admin; any other
    /// role, an unknown one included, may not.
    pub fn can_steer(&self) -> bool {
        matches!(
            self,
            RepositoryPermission::Admin
                | RepositoryPermission::Maintain
                | RepositoryPermission::Write
        )
    }
}

github_words! {
    /// The `status` of a workflow run or job, in the order a run moves through them; also the
    /// `status` filter of a run listing.
    pub enum RunStatus {
        Requested = "requested",
        Queued = "queued",
        Pending = "pending",
        Waiting = "waiting",
        InProgress = "in_progress",
        Completed = "completed",
    }
}

impl RunStatus {
    /// Only `completed` is completed: any other status, an unknown one included, is active.
    pub fn is_completed(&self) -> bool {
        *self == RunStatus::Completed
    }
}

github_words! {
    /// The `conclusion` of a completed workflow run or job.
    pub enum RunConclusion {
        Success = "success",
        Failure = "failure",
        Neutral = "neutral",
        Cancelled = "cancelled",
        Skipped = "skipped",
        TimedOut = "timed_out",
        ActionRequired = "action_required",
        Stale = "stale",
        StartupFailure = "startup_failure",
    }
}

impl RunConclusion {
    /// Only `success` is a success.
    pub fn is_success(&self) -> bool {
        *self == RunConclusion::Success
    }
}

github_words! {
    /// The `action` of a `workflow_run` event: the run was requested, started or completed.
    pub enum WorkflowRunAction {
        Requested = "requested",
        InProgress = "in_progress",
        Completed = "completed",
    }
}

/// An event without an action (nor a run status to stand in for it): the empty word, which is
/// not `completed`.
impl Default for WorkflowRunAction {
    fn default() -> Self {
        WorkflowRunAction::Other(String::new())
    }
}

github_words! {
    /// GraphQL's `mergeable` of a pull request; GitHub computes it lazily, so `UNKNOWN` is an
    /// answer, not an error.
    pub enum Mergeable {
        Mergeable = "MERGEABLE",
        Conflicting = "CONFLICTING",
        Unknown = "UNKNOWN",
    }
}

github_words! {
    /// GraphQL's `mergeStateStatus` of a pull request.
    pub enum MergeStateStatus {
        Behind = "BEHIND",
        Blocked = "BLOCKED",
        Clean = "CLEAN",
        Dirty = "DIRTY",
        Draft = "DRAFT",
        HasHooks = "HAS_HOOKS",
        Unknown = "UNKNOWN",
        Unstable = "UNSTABLE",
    }
}

github_words! {
    /// GraphQL's `status` of a check run (`CheckStatusState`).
    pub enum CheckStatus {
        Requested = "REQUESTED",
        Queued = "QUEUED",
        Pending = "PENDING",
        Waiting = "WAITING",
        InProgress = "IN_PROGRESS",
        Completed = "COMPLETED",
    }
}

impl CheckStatus {
    /// Only `COMPLETED` is completed: any other status, an unknown one included, is pending.
    pub fn is_completed(&self) -> bool {
        *self == CheckStatus::Completed
    }
}

github_words! {
    /// GraphQL's `conclusion` of a completed check run or check suite (`CheckConclusionState`).
    pub enum CheckConclusion {
        Success = "SUCCESS",
        Failure = "FAILURE",
        Neutral = "NEUTRAL",
        Cancelled = "CANCELLED",
        Skipped = "SKIPPED",
        TimedOut = "TIMED_OUT",
        ActionRequired = "ACTION_REQUIRED",
        Stale = "STALE",
        StartupFailure = "STARTUP_FAILURE",
    }
}

impl CheckConclusion {
    /// Only `SUCCESS` is a success.
    pub fn is_success(&self) -> bool {
        *self == CheckConclusion::Success
    }

    /// The conclusions that count as a failed check (contract §12); an unknown one does not.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            CheckConclusion::Failure
                | CheckConclusion::TimedOut
                | CheckConclusion::Cancelled
                | CheckConclusion::StartupFailure
                | CheckConclusion::ActionRequired
        )
    }
}

github_words! {
    /// GraphQL's `state` of a commit status (`StatusState`).
    pub enum StatusState {
        Expected = "EXPECTED",
        Error = "ERROR",
        Failure = "FAILURE",
        Pending = "PENDING",
        Success = "SUCCESS",
    }
}

impl StatusState {
    /// `FAILURE` and `ERROR` are a failed status.
    pub fn is_failure(&self) -> bool {
        matches!(self, StatusState::Failure | StatusState::Error)
    }

    /// `PENDING` and `EXPECTED` (a required status not reported yet) are still to come; so is
    /// a state this version does not know.
    pub fn is_pending(&self) -> bool {
        matches!(
            self,
            StatusState::Pending | StatusState::Expected | StatusState::Other(_)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_reads_back_as_it_is_spelled() {
        for word in [
            "requested",
            "queued",
            "pending",
            "waiting",
            "in_progress",
            "completed",
        ] {
            let status: RunStatus = serde_json::from_value(serde_json::json!(word)).unwrap();
            assert!(!matches!(status, RunStatus::Other(_)), "{word}");
            assert_eq!(serde_json::to_value(&status).unwrap(), word);
        }
        for word in [
            "success",
            "failure",
            "neutral",
            "cancelled",
            "skipped",
            "timed_out",
            "action_required",
            "stale",
            "startup_failure",
        ] {
            let conclusion = RunConclusion::from(word);
            assert!(!matches!(conclusion, RunConclusion::Other(_)), "{word}");
            assert_eq!(conclusion.as_str(), word);
        }
    }

    #[test]
    fn a_word_github_adds_later_reads_and_counts_as_not_done() {
        let status: RunStatus = serde_json::from_str(r#""expected""#).unwrap();
        assert_eq!(status, RunStatus::Other("expected".into()));
        assert!(!status.is_completed());
        assert_eq!(status.to_string(), "expected");
        let conclusion: RunConclusion = serde_json::from_str(r#""succeeded""#).unwrap();
        assert!(!conclusion.is_success());
        let state: PullRequestState = serde_json::from_str(r#""locked""#).unwrap();
        assert!(!state.is_open());
        assert_eq!(
            WorkflowRunAction::from("completed"),
            WorkflowRunAction::Completed
        );
        assert_ne!(WorkflowRunAction::default(), WorkflowRunAction::Completed);
    }

    #[test]
    fn only_write_maintain_and_admin_steer() {
        let steering: Vec<&str> = [
            "admin",
            "maintain",
            "write",
            "triage",
            "read",
            "none",
            "Admin",
            "custom-role",
        ]
        .into_iter()
        .filter(|word| RepositoryPermission::from(*word).can_steer())
        .collect();
        assert_eq!(steering, ["admin", "maintain", "write"]);
        assert_eq!(
            RepositoryPermission::from("custom-role"),
            RepositoryPermission::Other("custom-role".into())
        );
        let state: IssueState = serde_json::from_str(r#""closed""#).unwrap();
        assert!(!state.is_open());
        assert!(!IssueState::from("pinned").is_open());
        assert!(IssueState::from("open").is_open());
    }

    #[test]
    fn words_compare_exactly_as_github_spells_them() {
        assert!(!RunStatus::from("Completed").is_completed());
        assert!(!PullRequestState::from("OPEN").is_open());
        assert!(PullRequestState::from("open").is_open());
    }
}
