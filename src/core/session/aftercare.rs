//! An after-care session inside the candidate job (contract §12): the `refresh` or `repair` of
//! a validated pull request that `recover` started. Before a job adopts one, its pull request
//! must be there, the bot's and from this repository; once adopted, it is turned back into a
//! draft and labelled `klaud-in-progress` (its head stops being the validated one as soon as the
//! agent pushes), behind a re-check that it is still open, the bot's and not handed off. What
//! `session.json` adds for it: the base branch with the commit it points at now, and for a
//! `repair` the evidence (`core::aftercare::evidence`).

use serde::{Deserialize, Serialize};

use super::adoption::Refusal;
use crate::core::aftercare::evidence::Evidence;
use crate::core::ledger::Session;
use crate::core::outcome::StatusLabel;
use crate::core::plan::{
    Action, ActionGroup, LedgerExpectation, PullRequestCheck, status_label_action,
};
use crate::core::policy::Policy;
use crate::core::snapshot::PullRequestFact;

/// The pull request's base branch and the commit it points at, read when the session started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct BaseRef {
    pub branch: String,
    pub sha: String,
}

/// What `session.json` gives an after-care session besides what every session gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AftercareContext {
    pub base: BaseRef,
    /// A `repair` session's failed checks with their logs' ends; `None` for a `refresh`.
    pub evidence: Option<Vec<Evidence>>,
}

/// The after-care pull request a session works on, if it is one.
pub fn aftercare_pull_request(session: &Session) -> Option<u64> {
    session
        .kind
        .is_aftercare()
        .then(|| session.aftercare.as_ref().map(|work| work.pull_request))
        .flatten()
}

/// Why an after-care session's pull request stops a job from adopting it, if it does: it must be
/// listed on the candidate's branch, from this repository and the bot's (handed off and closed
/// are refused for every session by [`super::adoption::pull_request_refusal`]).
pub fn aftercare_refusal(
    session: &Session,
    pull: Option<&PullRequestFact>,
    policy: &Policy,
) -> Option<Refusal> {
    let number = aftercare_pull_request(session)?;
    let Some(pull) = pull.filter(|pull| pull.number == number) else {
        return Some(Refusal::AftercarePullRequestMissing {
            pull_request: number,
        });
    };
    let ours = pull.from_this_repository && pull.author.as_deref() == Some(policy.bot.as_str());
    (!ours).then_some(Refusal::NotTheBots {
        pull_request: number,
    })
}

/// The changes that start an after-care session on its pull request: a draft again (when it is
/// ready) and `klaud-in-progress` as its one status label, behind a re-check that it is still
/// open, the bot's and not handed off — at whatever head it has now (the validated one, or one
/// an earlier job of the session pushed). `None` when it already looks so, or the session is no
/// after-care session of this pull request.
pub fn start_group(
    session: &Session,
    pull: &PullRequestFact,
    policy: &Policy,
) -> Option<ActionGroup> {
    if aftercare_pull_request(session) != Some(pull.number) {
        return None;
    }
    let mut actions = Vec::new();
    if !pull.draft {
        actions.push(Action::ConvertToDraft {
            pull_request: pull.number,
            node_id: pull.node_id.clone(),
        });
    }
    actions.extend(status_label_action(
        policy,
        pull,
        Some(StatusLabel::InProgress),
    ));
    (!actions.is_empty()).then(|| ActionGroup {
        subject: session.candidate.clone(),
        candidate: Some(session.candidate.clone()),
        pull_request_check: Some(PullRequestCheck::open_by_the_bot(policy, pull.number)),
        destructive: false,
        ledger_expectation: LedgerExpectation::Nothing,
        independent: false,
        actions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::aftercare::{AftercareWork, SessionKind};
    use crate::core::ledger::{Ledger, Resuming};
    use crate::core::policy::tests::inferencex_policy;
    use crate::core::test_support::at;

    fn aftercare_session(kind: SessionKind) -> Session {
        let mut ledger = Ledger::empty();
        ledger
            .claim_family("a", "f", 90, at("2026-12-01T08:00:00Z"))
            .unwrap();
        let mut session = ledger.sessions[0].clone();
        session.kind = kind;
        session.pull_request = Some(12);
        session.aftercare = Some(AftercareWork {
            pull_request: 12,
            head_sha: "validated".into(),
            failed: Vec::new(),
        });
        session.resuming = Some(Resuming {
            by_run: 90,
            at: at("2026-12-01T08:00:00Z"),
        });
        session
    }

    fn validated_pull(number: u64) -> PullRequestFact {
        PullRequestFact {
            number,
            node_id: format!("PR_{number}"),
            head_branch: "klaud/auto-a".into(),
            head_sha: "validated".into(),
            from_this_repository: true,
            author: Some("Klaud-Cold".into()),
            open: true,
            draft: false,
            merged: false,
            labels: vec!["klaud-finished".into()],
            created_at: at("2026-11-01T00:00:00Z"),
        }
    }

    fn steps(group: &ActionGroup) -> Vec<String> {
        group.actions.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_validated_pull_request_becomes_a_draft_in_progress_at_any_head() {
        let policy = inferencex_policy();
        let session = aftercare_session(SessionKind::Repair);
        let group = start_group(&session, &validated_pull(12), &policy).unwrap();
        assert_eq!(
            steps(&group),
            [
                "convert #12 to a draft",
                "set status label klaud-in-progress on #12"
            ]
        );
        let check = group.pull_request_check.unwrap();
        assert_eq!(
            (
                check.head_sha,
                check.draft,
                check.open,
                check.author.as_str()
            ),
            (None, None, true, "Klaud-Cold")
        );
        assert_eq!(check.handoff_label, "klaud-handoff");
    }

    #[test]
    fn a_draft_already_in_progress_needs_nothing_and_a_parked_one_its_label() {
        let policy = inferencex_policy();
        let session = aftercare_session(SessionKind::Refresh);
        let mut pull = validated_pull(12);
        pull.draft = true;
        pull.labels = vec!["klaud-in-progress".into()];
        assert_eq!(start_group(&session, &pull, &policy), None);
        pull.labels = vec!["klaud-parked".into()];
        let group = start_group(&session, &pull, &policy).unwrap();
        assert_eq!(steps(&group), ["set status label klaud-in-progress on #12"]);
    }

    #[test]
    fn a_propose_session_or_another_pull_request_is_not_started_as_aftercare() {
        let policy = inferencex_policy();
        let mut session = aftercare_session(SessionKind::Propose);
        assert_eq!(start_group(&session, &validated_pull(12), &policy), None);
        assert_eq!(aftercare_refusal(&session, None, &policy), None);
        session.kind = SessionKind::Refresh;
        assert_eq!(start_group(&session, &validated_pull(13), &policy), None);
    }

    #[test]
    fn its_pull_request_must_be_listed_and_the_bots() {
        let policy = inferencex_policy();
        let session = aftercare_session(SessionKind::Repair);
        assert_eq!(
            aftercare_refusal(&session, None, &policy),
            Some(Refusal::AftercarePullRequestMissing { pull_request: 12 })
        );
        assert_eq!(
            aftercare_refusal(&session, Some(&validated_pull(13)), &policy),
            Some(Refusal::AftercarePullRequestMissing { pull_request: 12 })
        );
        let mut foreign = validated_pull(12);
        foreign.author = Some("someone".into());
        assert_eq!(
            aftercare_refusal(&session, Some(&foreign), &policy),
            Some(Refusal::NotTheBots { pull_request: 12 })
        );
        assert_eq!(
            aftercare_refusal(&session, Some(&validated_pull(12)), &policy),
            None
        );
    }
}
