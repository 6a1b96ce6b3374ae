//! What klaud does next about one after-care pull request (contract §12), from its record, its
//! health and the settings at a given now: the one rule `recover` acts on and `status` and the
//! dashboard show. The §5 guards, the cap, the one-per-family rule, the budget and the pause are
//! `recover`'s to check before anything starts.

use chrono::{DateTime, Duration, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use super::{AftercareRecord, AftercareState, SessionKind};
use crate::core::github_state::{MergeStateStatus, Mergeable};
use crate::core::health::{Health, PullRequestHealth};
use crate::core::policy::{AftercareSettings, RefreshWhen, RepairWhen};

/// What comes next for one after-care pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "next")]
pub enum AftercareNext {
    /// Nothing calls for a session: klaud keeps watching.
    Watch,
    /// An after-care session of its own is open.
    SessionOpen,
    /// A session of this kind is due.
    Start { kind: SessionKind },
    /// A session of this kind is due once the wait ends.
    Wait {
        kind: Option<SessionKind>,
        wait: AftercareWait,
    },
    /// A session is due, but it has used every session it may have: it is to wait for a
    /// maintainer.
    SessionsUsedUp { kind: SessionKind, used: u32 },
    /// It waits for a maintainer (*retry after-care* grants one more session).
    WaitsForMaintainer,
    /// It is to be closed as superseded by the newer pull request.
    Close { by: u64 },
    /// A guard failed earlier: klaud never touches it again.
    Left,
}

/// Why a session that may be due does not start yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "because")]
pub enum AftercareWait {
    /// GitHub has not computed whether it conflicts (it does so lazily): never acted on in the
    /// pass that sees it.
    MergeabilityUnknown,
    /// A check failed and another is still running: a repair waits for them all.
    ChecksRunning,
    /// Its checks could not all be read.
    ChecksUnknown,
    /// Its last after-care session started less than `aftercare.cooldown-hours` ago.
    Cooldown { until: DateTime<Utc> },
}

impl std::fmt::Display for AftercareWait {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AftercareWait::MergeabilityUnknown => {
                formatter.write_str("GitHub has not computed its mergeability yet")
            }
            AftercareWait::ChecksRunning => {
                formatter.write_str("a check failed and another is still running")
            }
            AftercareWait::ChecksUnknown => formatter.write_str("its checks could not all be read"),
            AftercareWait::Cooldown { until } => write!(
                formatter,
                "its last after-care session started less than the cooldown ago (until {})",
                until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
        }
    }
}

impl std::fmt::Display for AftercareNext {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AftercareNext::Watch => formatter.write_str("watching"),
            AftercareNext::SessionOpen => formatter.write_str("an after-care session is open"),
            AftercareNext::Start { kind } => write!(formatter, "starts a {kind} session"),
            AftercareNext::Wait {
                kind: Some(kind),
                wait,
            } => write!(formatter, "a {kind} waits: {wait}"),
            AftercareNext::Wait { kind: None, wait } => write!(formatter, "waits: {wait}"),
            AftercareNext::SessionsUsedUp { kind, used } => write!(
                formatter,
                "a {kind} is due but it has used its {used} after-care sessions: waits for a maintainer"
            ),
            AftercareNext::WaitsForMaintainer => formatter.write_str("waits for a maintainer"),
            AftercareNext::Close { by } => write!(formatter, "closes it: superseded by #{by}"),
            AftercareNext::Left => formatter.write_str("left for good: a guard failed"),
        }
    }
}

/// What comes next for `record`, whose pull request has `health`, with an after-care session
/// of its own open or not. Its state decides first (left, superseded, waiting for a
/// maintainer, a session open); then a conflict (or being behind, when configured) calls for a
/// `refresh` and failed checks for a `repair`, the refresh first, each only when configured;
/// a due session waits for GitHub's mergeability, for the checks still running and for the
/// cooldown, and is refused past the sessions allowed.
pub fn next_for(
    record: &AftercareRecord,
    health: &PullRequestHealth,
    session_open: bool,
    settings: &AftercareSettings,
    now: DateTime<Utc>,
) -> AftercareNext {
    match record.state {
        AftercareState::Left { .. } => return AftercareNext::Left,
        AftercareState::Superseded { by, .. } => return AftercareNext::Close { by },
        AftercareState::NeedsMaintainer { .. } => return AftercareNext::WaitsForMaintainer,
        AftercareState::Watched if session_open => return AftercareNext::SessionOpen,
        AftercareState::Watched => {}
    }
    let kind = match due_kind(health, settings) {
        Ok(Some(kind)) => kind,
        Ok(None) => return AftercareNext::Watch,
        Err((kind, wait)) => return AftercareNext::Wait { kind, wait },
    };
    let used = record.sessions_used;
    if used >= record.sessions_allowed(settings) {
        return AftercareNext::SessionsUsedUp { kind, used };
    }
    let cooldown = Duration::hours(i64::from(settings.cooldown_hours));
    if let Some(until) = record
        .last_started_at
        .map(|started| started + cooldown)
        .filter(|until| *until > now)
    {
        return AftercareNext::Wait {
            kind: Some(kind),
            wait: AftercareWait::Cooldown { until },
        };
    }
    AftercareNext::Start { kind }
}

/// The kind of session the pull request's health calls for, if any; `Err` when one may be
/// due but cannot be told or must wait.
fn due_kind(
    health: &PullRequestHealth,
    settings: &AftercareSettings,
) -> Result<Option<SessionKind>, (Option<SessionKind>, AftercareWait)> {
    let refresh_on = settings.refresh != RefreshWhen::Never;
    if refresh_on && health.mergeable == Mergeable::Unknown {
        return Err((None, AftercareWait::MergeabilityUnknown));
    }
    let behind =
        settings.refresh == RefreshWhen::Behind && health.merge_state == MergeStateStatus::Behind;
    if refresh_on && (health.mergeable == Mergeable::Conflicting || behind) {
        return Ok(Some(SessionKind::Refresh));
    }
    if settings.repair == RepairWhen::Never {
        return Ok(None);
    }
    match health.health {
        Health::Failing => Ok(Some(SessionKind::Repair)),
        Health::FailingRunning => Err((Some(SessionKind::Repair), AftercareWait::ChecksRunning)),
        Health::Unknown => Err((None, AftercareWait::ChecksUnknown)),
        Health::NoSweep | Health::SweepSkipped | Health::Running | Health::Passing => Ok(None),
    }
}
