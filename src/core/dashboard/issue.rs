//! Which issue is the dashboard: the one with the dashboard label that klaud's account wrote
//! (the lowest-numbered open one; a closed one is reopened only when configured to). An issue
//! with the label that someone else wrote is never edited and steers nothing; it is named.

use crate::core::github_state::IssueState;
use crate::core::snapshot::Listed;

/// An issue carrying the dashboard label, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenIssue {
    pub number: u64,
    pub author: String,
    pub state: IssueState,
    pub body: String,
}

/// What this pass does with the dashboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DashboardTarget {
    /// No issue of klaud's carries the label: create one.
    Create,
    /// klaud's issue: rewrite it (reopening it first when `reopen`). Its ticks steer.
    Rewrite {
        number: u64,
        body: String,
        reopen: bool,
    },
    /// Leave the dashboard as it is, and why.
    Leave { why: String },
}

impl DashboardTarget {
    /// The current body whose ticks steer klaud, if any.
    pub fn steering_body(&self) -> Option<&str> {
        match self {
            DashboardTarget::Rewrite { body, .. } => Some(body),
            DashboardTarget::Create | DashboardTarget::Leave { .. } => None,
        }
    }
}

/// The dashboard target, and the labelled issues of other people (number, author).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueChoice {
    pub target: DashboardTarget,
    pub others: Vec<(u64, String)>,
}

/// Chooses among the issues with the label. A listing that is not whole creates nothing (the
/// dashboard may be among those missing).
pub fn choose_issue(listed: &Listed<SeenIssue>, bot: &str, reopen: bool) -> IssueChoice {
    let own = |issue: &&SeenIssue| issue.author.eq_ignore_ascii_case(bot);
    let others = listed
        .items
        .iter()
        .filter(|issue| !own(issue))
        .map(|issue| (issue.number, issue.author.clone()))
        .collect();
    let mut mine: Vec<&SeenIssue> = listed.items.iter().filter(own).collect();
    mine.sort_by_key(|issue| (!issue.state.is_open(), issue.number));
    let target = match (mine.first(), &listed.gap) {
        (Some(issue), _) if issue.state.is_open() => DashboardTarget::Rewrite {
            number: issue.number,
            body: issue.body.clone(),
            reopen: false,
        },
        (Some(issue), _) if reopen => DashboardTarget::Rewrite {
            number: issue.number,
            body: issue.body.clone(),
            reopen: true,
        },
        (Some(issue), _) => DashboardTarget::Leave {
            why: format!(
                "klaud's dashboard #{} is closed and `dashboard.reopen` is false: it is left closed and steers nothing",
                issue.number
            ),
        },
        (None, Some(gap)) => DashboardTarget::Leave {
            why: format!(
                "the issues with the dashboard label could not all be listed ({gap}): no new dashboard is created"
            ),
        },
        (None, None) => DashboardTarget::Create,
    };
    IssueChoice { target, others }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(number: u64, author: &str, state: IssueState) -> SeenIssue {
        SeenIssue {
            number,
            author: author.into(),
            state,
            body: format!("body {number}"),
        }
    }

    #[test]
    fn klauds_open_issue_is_rewritten_and_other_peoples_are_named() {
        let listed = Listed::complete(vec![
            issue(3, "mallory", IssueState::Open),
            issue(9, "Klaud-Cold", IssueState::Open),
            issue(5, "klaud-cold", IssueState::Closed),
            issue(7, "Klaud-Cold", IssueState::Open),
        ]);
        let choice = choose_issue(&listed, "Klaud-Cold", false);
        assert_eq!(
            choice.target,
            DashboardTarget::Rewrite {
                number: 7,
                body: "body 7".into(),
                reopen: false
            }
        );
        assert_eq!(choice.others, [(3, "mallory".to_string())]);
    }

    #[test]
    fn a_closed_dashboard_is_reopened_only_when_configured_to() {
        let listed = Listed::complete(vec![issue(5, "Klaud-Cold", IssueState::Closed)]);
        assert!(matches!(
            choose_issue(&listed, "Klaud-Cold", true).target,
            DashboardTarget::Rewrite {
                number: 5,
                reopen: true,
                ..
            }
        ));
        let left = choose_issue(&listed, "Klaud-Cold", false).target;
        assert!(matches!(&left, DashboardTarget::Leave { why } if why.contains("#5")));
        assert_eq!(left.steering_body(), None);
    }

    #[test]
    fn none_is_created_when_the_listing_is_not_whole_or_only_someone_elses_exists() {
        let cut = Listed::incomplete(vec![], "502 on page 2");
        assert!(matches!(
            choose_issue(&cut, "Klaud-Cold", false).target,
            DashboardTarget::Leave { .. }
        ));
        let foreign = Listed::complete(vec![issue(3, "mallory", IssueState::Open)]);
        assert_eq!(
            choose_issue(&foreign, "Klaud-Cold", false).target,
            DashboardTarget::Create
        );
    }
}
