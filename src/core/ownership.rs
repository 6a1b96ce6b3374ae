//! Who owns a pull request's commits (contract §5): the one reading of a commit listing that
//! every mode that cleans up relies on — `recover`'s guards and `finish` alike. The head must be
//! the bot's and the listing whole and ending at the head; a commit by anyone else below a bot
//! head is a maintainer's touch.

use super::snapshot::CommitsFact;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::snapshot::CommitFact;

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
