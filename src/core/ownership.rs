//! Who owns a pull request's commits (contract §5): the one reading of a commit listing that
//! every mode that cleans up relies on — `recover`'s guards and `finish` alike. The head must be
//! the bot's and the listing whole and ending at the head; a commit by anyone else below a bot
//! head is a maintainer's touch. A closed pull request's branch rests on who closed it: only
//! the bot's own close lets its branch go.

use chrono::{DateTime, Utc};

use super::snapshot::{CommitsFact, IssueFact, RunFact};

/// What a pull request's commits say about who owns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitOwnership {
    /// Every commit is the bot's (author and committer).
    BotOnly,
    /// The head is the bot's, but a commit below it is by `login`.
    ForeignCommit { login: String },
    /// The head is not the bot's, or the listing cannot be trusted. `remember` when the finding
    /// holds as long as the head stays where it is.
    Unsettled { reason: String, remember: bool },
}

/// Reads the commits of pull request `number` whose head is `head_sha`.
pub fn commit_ownership(
    commits: &CommitsFact,
    number: u64,
    head_sha: &str,
    bot: &str,
) -> CommitOwnership {
    if !commits.complete {
        return CommitOwnership::Unsettled {
            reason: format!("#{number} has more commits than GitHub lists"),
            remember: true,
        };
    }
    let not_bot = |login: &Option<String>| login.as_deref() != Some(bot);
    let login_of = |author: &Option<String>, committer: &Option<String>| {
        author
            .clone()
            .filter(|login| login != bot)
            .or_else(|| committer.clone())
            .unwrap_or_else(|| "an unknown author".into())
    };
    match commits.commits.last() {
        None => {
            return CommitOwnership::Unsettled {
                reason: format!("#{number} lists no commits"),
                remember: false,
            };
        }
        Some(head) if head.sha != head_sha => {
            return CommitOwnership::Unsettled {
                reason: format!("the commits of #{number} do not end at its head"),
                remember: false,
            };
        }
        Some(head) if not_bot(&head.author) || not_bot(&head.committer) => {
            return CommitOwnership::Unsettled {
                reason: format!(
                    "the head of #{number} moved to a commit by {}",
                    login_of(&head.author, &head.committer)
                ),
                remember: true,
            };
        }
        Some(_) => {}
    }
    match commits
        .commits
        .iter()
        .find(|commit| not_bot(&commit.author) || not_bot(&commit.committer))
    {
        Some(commit) => CommitOwnership::ForeignCommit {
            login: login_of(&commit.author, &commit.committer),
        },
        None => CommitOwnership::BotOnly,
    }
}

/// Who, other than the bot, started `run` or ran its latest attempt; `None` when the run is the
/// bot's. The account that started it must be the bot: one GitHub does not name is not provably
/// the bot (the same reading as a commit by an unknown author). The account that ran the
/// latest attempt, when GitHub names one, must be the bot too.
pub fn started_by_someone_else(run: &RunFact, bot: &str) -> Option<String> {
    match (&run.actor, &run.triggering_actor) {
        (None, _) => Some("an unknown account".into()),
        (Some(actor), _) if actor != bot => Some(actor.clone()),
        (_, Some(triggering)) if triggering != bot => Some(triggering.clone()),
        _ => None,
    }
}

/// The first sweep run of `runs` created after `since` that someone other than the bot started
/// (contract §5: a maintainer is acting), with who: the one reading `recover`'s guards, `finish`
/// and its supersede share. Runs of other workflows than `is_sweep` accepts do not count.
pub fn foreign_sweep_since<'a>(
    runs: impl IntoIterator<Item = &'a RunFact>,
    since: DateTime<Utc>,
    bot: &str,
    is_sweep: impl Fn(&str) -> bool,
) -> Option<(&'a RunFact, String)> {
    runs.into_iter()
        .filter(|run| is_sweep(&run.workflow) && run.created_at > since)
        .find_map(|run| started_by_someone_else(run, bot).map(|login| (run, login)))
}

/// Whether the branch of pull request `issue` may be deleted on the strength of its close, as
/// read just before the deletion (contract §4, §5): it must be closed, unmerged, and closed by
/// the bot. Closing an already closed pull request succeeds without changing who closed it, so
/// the bot's own close request is no proof: a maintainer who closed it first keeps the branch.
/// `Err` says why the branch stays.
pub fn closed_by_the_bot(issue: &IssueFact, bot: &str) -> Result<(), BranchStays> {
    let number = issue.number;
    if issue.open {
        return Err(BranchStays::Reopened { number });
    }
    if issue.merged {
        return Err(BranchStays::Merged { number });
    }
    match issue.closed_by.as_deref() {
        Some(login) if login == bot => Ok(()),
        Some(login) => Err(BranchStays::ClosedBy {
            number,
            login: login.to_string(),
        }),
        None => Err(BranchStays::CloserUnknown { number }),
    }
}

/// Why a closed pull request's branch stays.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BranchStays {
    #[error("#{number} is open again")]
    Reopened { number: u64 },
    #[error("#{number} was merged")]
    Merged { number: u64 },
    #[error("#{number} was closed by {login}: a maintainer-closed pull request keeps its branch")]
    ClosedBy { number: u64, login: String },
    #[error("GitHub does not say who closed #{number}: its branch stays")]
    CloserUnknown { number: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::snapshot::CommitFact;

    fn issue(open: bool, merged: bool, closed_by: Option<&str>) -> IssueFact {
        IssueFact {
            number: 4,
            open,
            closed_by: closed_by.map(str::to_string),
            merged,
            labels: Vec::new(),
        }
    }

    #[test]
    fn only_the_bots_own_close_lets_a_branch_go() {
        assert_eq!(
            closed_by_the_bot(&issue(false, false, Some("klaud-bot")), "klaud-bot"),
            Ok(())
        );
        // The bot's close request answered 200 on a pull request a maintainer had closed.
        let kept = closed_by_the_bot(&issue(false, false, Some("maintainer-ada")), "klaud-bot")
            .unwrap_err();
        assert!(
            kept.to_string().contains("closed by maintainer-ada"),
            "{kept}"
        );
        assert!(closed_by_the_bot(&issue(false, false, None), "klaud-bot").is_err());
        assert!(closed_by_the_bot(&issue(true, false, None), "klaud-bot").is_err());
        assert!(closed_by_the_bot(&issue(false, true, Some("klaud-bot")), "klaud-bot").is_err());
    }

    fn commit(sha: &str, login: &str) -> CommitFact {
        CommitFact {
            sha: sha.into(),
            author: Some(login.into()),
            committer: Some(login.into()),
        }
    }

    fn listing(commits: Vec<CommitFact>) -> CommitsFact {
        CommitsFact {
            commits,
            complete: true,
        }
    }

    #[test]
    fn bot_commits_only_make_the_bot_the_owner() {
        let commits = listing(vec![commit("a", "bot"), commit("b", "bot")]);
        assert_eq!(
            commit_ownership(&commits, 3, "b", "bot"),
            CommitOwnership::BotOnly
        );
    }

    #[test]
    fn a_maintainer_commit_below_a_bot_head_is_named() {
        let commits = listing(vec![commit("a", "ada"), commit("b", "bot")]);
        assert_eq!(
            commit_ownership(&commits, 3, "b", "bot"),
            CommitOwnership::ForeignCommit {
                login: "ada".into()
            }
        );
    }

    fn sweep(actor: Option<&str>, triggering_actor: Option<&str>) -> RunFact {
        let at = chrono::DateTime::UNIX_EPOCH;
        RunFact {
            id: 60,
            workflow: "run-sweep.yml".into(),
            head_branch: Some("klaud/auto-a".into()),
            head_sha: "b".into(),
            title: None,
            actor: actor.map(str::to_string),
            triggering_actor: triggering_actor.map(str::to_string),
            active: false,
            conclusion: Some("success".into()),
            created_at: at,
            updated_at: at,
        }
    }

    #[test]
    fn a_run_is_the_bots_only_when_the_bot_started_it() {
        assert_eq!(
            started_by_someone_else(&sweep(Some("bot"), Some("bot")), "bot"),
            None
        );
        // GitHub leaves `triggering_actor` out of older runs.
        assert_eq!(
            started_by_someone_else(&sweep(Some("bot"), None), "bot"),
            None
        );
        assert_eq!(
            started_by_someone_else(&sweep(Some("ada"), Some("bot")), "bot").as_deref(),
            Some("ada")
        );
        assert_eq!(
            started_by_someone_else(&sweep(Some("bot"), Some("ada")), "bot").as_deref(),
            Some("ada")
        );
    }

    #[test]
    fn a_run_started_by_an_account_github_does_not_name_is_not_the_bots() {
        // Found by the recovery property test: a sweep whose actor is unknown and whose latest
        // attempt the bot ran was read as the bot's, and its pull request swept.
        assert_eq!(
            started_by_someone_else(&sweep(None, Some("bot")), "bot").as_deref(),
            Some("an unknown account")
        );
        assert!(started_by_someone_else(&sweep(None, None), "bot").is_some());
    }

    #[test]
    fn a_head_by_someone_else_or_a_short_listing_is_unsettled() {
        let moved = listing(vec![commit("a", "bot"), commit("b", "ada")]);
        assert!(matches!(
            commit_ownership(&moved, 3, "b", "bot"),
            CommitOwnership::Unsettled { remember: true, .. }
        ));
        let stale = listing(vec![commit("a", "bot")]);
        assert!(matches!(
            commit_ownership(&stale, 3, "b", "bot"),
            CommitOwnership::Unsettled {
                remember: false,
                ..
            }
        ));
    }
}
