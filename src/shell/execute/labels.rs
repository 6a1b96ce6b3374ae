//! The one status-label routine: make one label a pull request's only status label, working
//! from the labels its fresh read showed, with the label token (label events start no
//! workflows). GitHub has no "replace one label" request, and one PUT of all labels could erase
//! a handoff label a maintainer adds at that moment, so a swap is an add and a remove.

use super::Effect;
use crate::adapters::github::GitHubClient;
use crate::adapters::github::error::GitHubError;

/// Adds `label` when missing and removes each of `others` that is present; `labels` follows.
pub(super) async fn make_only_status_label(
    client: &GitHubClient,
    number: u64,
    label: Option<&str>,
    others: &[String],
    labels: &mut Vec<String>,
) -> Result<Effect, GitHubError> {
    let mut added = None;
    if let Some(label) = label
        && !labels.iter().any(|present| present == label)
    {
        client.add_labels(number, &[label.to_string()]).await?;
        labels.push(label.to_string());
        added = Some(label.to_string());
    }
    let mut removed = Vec::new();
    for other in others {
        if labels.contains(other) {
            client.remove_label(number, other).await?;
            labels.retain(|present| present != other);
            removed.push(other.clone());
        }
    }
    Ok(if added.is_none() && removed.is_empty() {
        Effect::LabelsAlreadyRight
    } else {
        Effect::LabelsSet { added, removed }
    })
}
