//! What a completed action did, as data: callers match on the effect, people read its
//! `Display` text, and the result files carry that text as the action's `detail`.

use std::fmt;

use serde::{Serialize, Serializer};

/// The effect of one action that completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// GitHub accepted the run's cancellation.
    CancelRequested,
    /// The run had completed before the cancellation arrived (GitHub answers 409).
    AlreadyCompleted,
    /// The status label was made the only one: `added` when it was missing, `removed` the
    /// other status labels that were present.
    LabelsSet {
        added: Option<String>,
        removed: Vec<String>,
    },
    /// The pull request already carried exactly the right status label.
    LabelsAlreadyRight,
    LabelRemoved,
    /// The label to remove was not on the pull request.
    LabelNotThere,
    MarkedReady,
    ConvertedToDraft,
    Closed,
    CommentPosted,
    /// The comment was posted; GitHub's answer was uncertain and the comment was found after.
    CommentFoundAfterUncertainPost,
    /// The bot's comment was there with another text and was updated in place.
    CommentUpdated,
    /// The bot's comment was there with the same text.
    CommentUnchanged,
    Dispatched,
    /// `Closes #<issue>` was added to the pull request's body.
    IssueLinked,
    /// The pull request's body already had the line.
    IssueAlreadyLinked,
    /// The ref was deleted at the sha checked.
    Deleted,
    /// The ref did not exist any more.
    AlreadyGone,
    /// The dashboard issue was created (`number` unknown in a dry run).
    DashboardCreated {
        number: Option<u64>,
    },
    /// The dashboard's body was rewritten (and the issue reopened).
    DashboardRewritten {
        reopened: bool,
    },
    /// The dashboard's body changed after it was read: not rewritten, the next pass reads it.
    DashboardEditedMeanwhile,
}

impl fmt::Display for Effect {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Effect::CancelRequested => "cancel requested",
            Effect::AlreadyCompleted => "it had already completed",
            Effect::LabelsSet { added, removed } => {
                let said: Vec<String> = added
                    .iter()
                    .map(|label| format!("added {label}"))
                    .chain(removed.iter().map(|label| format!("removed {label}")))
                    .collect();
                return formatter.write_str(&said.join(", "));
            }
            Effect::LabelsAlreadyRight => "already right",
            Effect::LabelRemoved => "removed",
            Effect::LabelNotThere => "not there",
            Effect::MarkedReady => "marked ready",
            Effect::ConvertedToDraft => "converted to a draft",
            Effect::Closed => "closed",
            Effect::CommentPosted => "posted",
            Effect::CommentFoundAfterUncertainPost => "posted (found after an uncertain answer)",
            Effect::CommentUpdated => "updated",
            Effect::CommentUnchanged => "unchanged",
            Effect::Dispatched => "dispatched",
            Effect::IssueLinked => "linked",
            Effect::IssueAlreadyLinked => "already linked",
            Effect::Deleted => "deleted",
            Effect::AlreadyGone => "already gone",
            Effect::DashboardCreated {
                number: Some(number),
            } => {
                return write!(formatter, "created #{number}");
            }
            Effect::DashboardCreated { number: None } => "created",
            Effect::DashboardRewritten { reopened: true } => "reopened and rewritten",
            Effect::DashboardRewritten { reopened: false } => "rewritten",
            Effect::DashboardEditedMeanwhile => {
                "not rewritten: the issue was edited after it was read; the next pass reads it again"
            }
        };
        formatter.write_str(text)
    }
}

/// The effect's text: the `detail` of a done action in `recover.json` and `finish.json`.
impl Serialize for Effect {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_change_says_what_was_added_and_removed_in_order() {
        let effect = Effect::LabelsSet {
            added: Some("klaud-finished".into()),
            removed: vec!["klaud-in-progress".into(), "klaud-parked".into()],
        };
        assert_eq!(
            effect.to_string(),
            "added klaud-finished, removed klaud-in-progress, removed klaud-parked"
        );
        assert_eq!(
            serde_json::to_value(&effect).unwrap(),
            serde_json::json!(effect.to_string())
        );
    }
}
