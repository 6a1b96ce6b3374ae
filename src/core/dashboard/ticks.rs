//! What becomes of each box a person changed: acted on (the account may steer), already acted
//! on (the same edit was seen by an earlier pass), ignored (the account may not steer: the tick
//! is cleared and the account named), or waiting (nobody can be named yet, or the account's
//! permission could not be read: the tick stays as it is for a later pass).

use std::collections::{BTreeMap, BTreeSet};

use super::attribution::Attribution;
use super::checkbox::{BoxKey, ReadBox};
use crate::core::github_state::RepositoryPermission;
use crate::core::snapshot::Read;
use crate::core::steering::{AcceptedRequest, IgnoredTick, Request, Steering};

/// The account name shown for a deleted account.
pub const GHOST: &str = "ghost";

/// The verdict on one changed box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickVerdict {
    Accepted(AcceptedRequest),
    AlreadyActed(AcceptedRequest),
    Ignored(IgnoredTick),
    Waiting { request: Request, why: String },
}

impl TickVerdict {
    /// True when the rewrite keeps the box as the person left it (a later pass acts on it).
    pub fn keeps_tick(&self) -> bool {
        matches!(self, TickVerdict::Waiting { .. })
    }

    /// One line for logs and summaries.
    pub fn describe(&self) -> String {
        match self {
            TickVerdict::Accepted(accepted) => {
                format!("{}: asked by {}, acted on", accepted.request, accepted.by)
            }
            TickVerdict::AlreadyActed(accepted) => format!(
                "{}: asked by {}, acted on by an earlier pass",
                accepted.request, accepted.by
            ),
            TickVerdict::Ignored(ignored) => format!(
                "{}: ticked by {} (permission {}), who may not steer klaud: ignored",
                ignored.request, ignored.by, ignored.permission
            ),
            TickVerdict::Waiting { request, why } => format!("{request}: waiting: {why}"),
        }
    }
}

/// One changed box and its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgedTick {
    pub key: BoxKey,
    pub ticked: bool,
    pub verdict: TickVerdict,
}

/// The accounts whose permission the verdicts need: every named editor, once.
pub fn accounts_to_check(attributions: &[Attribution]) -> Vec<String> {
    attributions
        .iter()
        .filter_map(|attribution| match attribution {
            Attribution::By {
                account: Some(account),
                ..
            } => Some(account.clone()),
            _ => None,
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The verdict on each of `changed` (paired with `attributions`), given the accounts'
/// permissions as read (`Err` keeps the read's error) and what the ledger's steering already
/// acted on.
pub fn judge_ticks(
    changed: &[ReadBox],
    attributions: &[Attribution],
    permissions: &BTreeMap<String, Read<RepositoryPermission>>,
    steering: &Steering,
) -> Vec<JudgedTick> {
    changed
        .iter()
        .zip(attributions)
        .map(|(read, attribution)| {
            let request = read.key.request(read.ticked);
            let verdict = match attribution {
                Attribution::Unknown(why) => TickVerdict::Waiting {
                    request,
                    why: format!("could not tell who changed it: {why}"),
                },
                Attribution::By {
                    account: None,
                    edited_at,
                } => TickVerdict::Ignored(IgnoredTick {
                    request,
                    by: GHOST.to_string(),
                    edited_at: *edited_at,
                    permission: RepositoryPermission::None.as_str().to_string(),
                }),
                Attribution::By {
                    account: Some(account),
                    edited_at,
                } => match permissions.get(account) {
                    None => TickVerdict::Waiting {
                        request,
                        why: format!("the permission of {account} was not read"),
                    },
                    Some(Err(error)) => TickVerdict::Waiting {
                        request,
                        why: format!("the permission of {account} could not be read: {error}"),
                    },
                    Some(Ok(permission)) if permission.can_steer() => {
                        let accepted = AcceptedRequest {
                            request,
                            by: account.clone(),
                            edited_at: *edited_at,
                        };
                        if steering.already_acted(&accepted.request, accepted.edited_at) {
                            TickVerdict::AlreadyActed(accepted)
                        } else {
                            TickVerdict::Accepted(accepted)
                        }
                    }
                    Some(Ok(permission)) => TickVerdict::Ignored(IgnoredTick {
                        request,
                        by: account.clone(),
                        edited_at: *edited_at,
                        permission: permission.as_str().to_string(),
                    }),
                },
            };
            JudgedTick {
                key: read.key.clone(),
                ticked: read.ticked,
                verdict,
            }
        })
        .collect()
}

/// Every changed box waiting for a later pass, as a status pass leaves them: it acts on none
/// (only `recover`, holding the lease, does), so none is cleared.
pub fn all_waiting(changed: &[ReadBox], why: &str) -> Vec<JudgedTick> {
    changed
        .iter()
        .map(|read| JudgedTick {
            key: read.key.clone(),
            ticked: read.ticked,
            verdict: TickVerdict::Waiting {
                request: read.key.request(read.ticked),
                why: why.to_string(),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::test_support::at;

    fn changed(key: BoxKey) -> ReadBox {
        ReadBox {
            key,
            ticked: true,
            rendered_ticked: false,
        }
    }

    fn by(account: Option<&str>) -> Attribution {
        Attribution::By {
            account: account.map(str::to_string),
            edited_at: at("2026-12-01T10:00:00Z"),
        }
    }

    #[test]
    fn only_an_account_that_may_steer_is_acted_on_and_the_others_are_named() {
        let boxes = [
            changed(BoxKey::RetryNow("a".into())),
            changed(BoxKey::RetryNow("b".into())),
            changed(BoxKey::Pause),
            changed(BoxKey::ResumeNow("c".into())),
            changed(BoxKey::ReleaseHold("f".into())),
            changed(BoxKey::ResumeNow("d".into())),
        ];
        let attributions = [
            by(Some("ann")),
            by(Some("rob")),
            by(None),
            Attribution::Unknown("history cut".into()),
            by(Some("eve")),
            by(Some("mia")),
        ];
        assert_eq!(
            accounts_to_check(&attributions),
            ["ann", "eve", "mia", "rob"]
        );
        let permissions = BTreeMap::from([
            ("ann".to_string(), Ok(RepositoryPermission::Maintain)),
            ("rob".to_string(), Ok(RepositoryPermission::Triage)),
            ("eve".to_string(), Err("502".into())),
        ]);
        let judged = judge_ticks(&boxes, &attributions, &permissions, &Steering::default());
        let verdicts: Vec<&TickVerdict> = judged.iter().map(|tick| &tick.verdict).collect();
        assert!(matches!(verdicts[0], TickVerdict::Accepted(a) if a.by == "ann"));
        assert!(
            matches!(verdicts[1], TickVerdict::Ignored(i) if i.by == "rob" && i.permission == "triage")
        );
        assert!(matches!(verdicts[2], TickVerdict::Ignored(i) if i.by == GHOST));
        assert!(verdicts[3].keeps_tick());
        assert!(matches!(verdicts[4], TickVerdict::Waiting { why, .. } if why.contains("502")));
        assert!(
            matches!(verdicts[5], TickVerdict::Waiting { why, .. } if why.contains("not read"))
        );
    }

    #[test]
    fn a_tick_acted_on_before_is_not_acted_on_again() {
        let mut steering = Steering::default();
        let accepted = AcceptedRequest {
            request: Request::RetryNow("a".into()),
            by: "ann".into(),
            edited_at: at("2026-12-01T10:00:00Z"),
        };
        steering.apply(&accepted, 1, at("2026-12-01T10:01:00Z"));
        let judged = judge_ticks(
            &[changed(BoxKey::RetryNow("a".into()))],
            &[by(Some("ann"))],
            &BTreeMap::from([("ann".to_string(), Ok(RepositoryPermission::Write))]),
            &steering,
        );
        assert_eq!(judged[0].verdict, TickVerdict::AlreadyActed(accepted));
        assert!(!judged[0].verdict.keeps_tick());
    }
}
