//! The ledger document (contract §2a): klaud's durable state of sessions, family claims and the
//! recovery lease, with the pure operations every mode uses to change it.
//!
//! The document is versioned and has a published JSON Schema. It is stored by
//! `adapters::ledger_store` with compare-and-swap; every operation here is a pure function of the
//! document and its arguments, and repeating an operation that already took effect changes
//! nothing (a writer that lost a race re-decides on the fresh document).

use chrono::{DateTime, Duration, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::aftercare::{AftercareRecord, AftercareWork, SessionKind};
use super::execution::AgentRecord;
use super::outcome::Outcome;
use super::steering::Steering;

/// The document version this code writes. Older versions are read and upgraded: version 1
/// (klaud 0.1.0) named its `kept` entries' object and verdict in prose (`branch:<name>`,
/// `pull-request:<n>`, a reason starting `needs inspection: ` or `left alone: `); version 2 had
/// no session attempts (`attempts`, `resuming`), which version 3 adds with empty defaults;
/// version 3 had no dashboard state (`steering`, `last-selection`, `passes`), which version 4
/// adds empty; version 4 had no after-care (`aftercare`, a session's `kind` and `aftercare`
/// work), which version 5 adds empty, every session of kind `propose`.
pub const LEDGER_VERSION: u32 = 5;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
#[schemars(title = "klaud ledger")]
pub struct Ledger {
    /// Document version; a newer version is refused rather than misread.
    pub version: u32,
    /// Sessions, newest last. Finished ones are pruned after the longest cooldown, keeping the
    /// last one of each family.
    #[serde(default)]
    pub sessions: Vec<Session>,
    /// Families claimed for a session; at most one claim per family.
    #[serde(default)]
    pub claims: Vec<Claim>,
    /// The recovery pass allowed to do destructive work, if any.
    #[serde(default)]
    pub recovery_lease: Option<Lease>,
    /// What recovery examined and leaves alone while it stays where it was, so later passes
    /// need not read it again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<Kept>,
    /// What maintainers asked through the dashboard (contract §10).
    #[serde(default, skip_serializing_if = "Steering::is_default")]
    pub steering: Steering,
    /// What the last `select` that wrote the ledger started and held back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_selection: Option<LastSelection>,
    /// The last passes that changed anything, oldest first, the last [`PASSES_KEPT`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passes: Vec<PassRecord>,
    /// klaud's validated pull requests it looks after until they are merged or closed
    /// (contract §12).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aftercare: Vec<AftercareRecord>,
}

/// How many passes [`Ledger::passes`] keeps.
pub const PASSES_KEPT: usize = 5;

/// What one `select` started and held back, for the dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct LastSelection {
    pub run: u64,
    pub at: DateTime<Utc>,
    /// The candidates it started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selected: Vec<String>,
    /// The candidates it held back, in the order considered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deferred: Vec<Deferral>,
}

/// One candidate a selection held back and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Deferral {
    pub candidate: String,
    /// The decision code (`cooling-down`, `paused`, …).
    pub code: String,
    pub message: String,
}

/// One pass that changed something, and what it cost in requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PassRecord {
    /// The mode (`recover`, `select`).
    pub mode: String,
    pub run: u64,
    pub at: DateTime<Utc>,
    /// Requests up to the ledger write that recorded the pass.
    pub reads: u64,
    pub writes: u64,
    /// What it changed, in a few words.
    pub summary: String,
}

/// One agent session for one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Session {
    pub candidate: String,
    pub family: String,
    /// What the session is for: `propose` (left out), or an after-care `refresh` or `repair`.
    #[serde(default, skip_serializing_if = "SessionKind::is_propose")]
    pub kind: SessionKind,
    /// An after-care session's pull request and evidence, as `recover` saw them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aftercare: Option<AftercareWork>,
    /// Run id of the planner run that started it (its parent).
    pub parent_run: u64,
    /// `GITHUB_RUN_ATTEMPT` of the parent that claimed it; absent in documents written before
    /// attempts were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_attempt: Option<u32>,
    pub state: SessionState,
    pub started_at: DateTime<Utc>,
    #[serde(default)]
    pub finished_at: Option<DateTime<Utc>>,
    /// Set when the session is finished.
    #[serde(default)]
    pub outcome: Option<Outcome>,
    /// False when the agent step never ran: such a session earns no cooldown.
    #[serde(default = "agent_ran_by_default")]
    pub agent_ran: bool,
    #[serde(default)]
    pub pull_request: Option<u64>,
    /// An outcome the session reported before its parent ended, used when it is reconciled.
    #[serde(default)]
    pub pending_outcome: Option<Outcome>,
    /// The jobs that ran this session, oldest first (contract §9): each adopted by `session`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
    /// Set when recovery resumed the parked session: one job of the candidate workflow it
    /// dispatched may adopt it, and clears this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resuming: Option<Resuming>,
    /// Jobs that ran the agent and `finish` without a `session` step adopting them (the minimal
    /// flow, or a `session` step that failed before adopting): what their execution records
    /// said, oldest first, the last [`UNADOPTED_JOBS_KEPT`], so that their cost counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unadopted_jobs: Vec<UnadoptedJob>,
}

/// How many [`Session::unadopted_jobs`] a session keeps.
pub const UNADOPTED_JOBS_KEPT: usize = 20;

/// A job of the candidate workflow that no `session` step adopted, as `finish` recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct UnadoptedJob {
    /// The job's run (`GITHUB_RUN_ID`).
    pub run: u64,
    /// The run's attempt (`GITHUB_RUN_ATTEMPT`): a re-run job is another agent run.
    pub run_attempt: u32,
    /// When `finish` read the job's execution record.
    pub ended_at: DateTime<Utc>,
    /// What the agent's execution record said.
    pub agent: AgentRecord,
}

/// One job of the candidate workflow: its run and the run's attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobRef {
    pub run: u64,
    pub run_attempt: u32,
}

impl Session {
    /// Every agent run of the session whose execution record `finish` kept, with when its cost
    /// counts as recorded: the attempts `session` adopted (when their job ended, else when it
    /// was adopted) and the jobs nobody adopted.
    pub fn agent_runs(&self) -> impl Iterator<Item = (DateTime<Utc>, &AgentRecord)> {
        let adopted = self.attempts.iter().filter_map(|attempt| {
            let agent = attempt.agent.as_ref()?;
            Some((attempt.ended_at.unwrap_or(attempt.adopted_at), agent))
        });
        let unadopted = self
            .unadopted_jobs
            .iter()
            .map(|job| (job.ended_at, &job.agent));
        adopted.chain(unadopted)
    }
}

/// One job of a session, adopted by `session`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Attempt {
    /// 1 for the first job of the session.
    pub number: u32,
    /// The run id of the job (`GITHUB_RUN_ID`).
    pub run: u64,
    pub adopted_at: DateTime<Utc>,
    /// When the job's time is up (adoption plus `session.time-limit-minutes`).
    pub deadline: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<DateTime<Utc>>,
    /// How the job ended; absent while it runs (or when it died without anyone seeing it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<AttemptEnd>,
    /// The smoke and sweep runs seen on the session's branch when the job ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<u64>,
    /// The agent's notes during this job, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
    /// Notes of this job dropped from `notes` to keep the session's log bounded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub notes_folded: u32,
    /// What the agent's execution record said when `finish` ended the job (contract §10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentRecord>,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

/// How one job of a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AttemptEnd {
    /// `finish` recorded the session's outcome.
    Finished,
    /// The deadline passed without an outcome: `finish` parked the session to go on in a new job.
    TimeRanOut,
    /// The job ended without `finish` (killed, cancelled): recovery parked or ended the session.
    JobEnded,
}

impl AttemptEnd {
    /// The serde spelling, for logs and summaries.
    pub fn name(self) -> &'static str {
        match self {
            AttemptEnd::Finished => "finished",
            AttemptEnd::TimeRanOut => "time-ran-out",
            AttemptEnd::JobEnded => "job-ended",
        }
    }
}

/// One entry of a session's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Note {
    pub at: DateTime<Utc>,
    pub text: String,
}

/// A resume recovery dispatched, waiting for its job to adopt the session. It stays when the
/// session is parked again with no job having adopted it, `at` then being the first of those
/// dispatches (a dashboard *resume now* starts it afresh): recovery holds a session whose
/// resumes no job adopted for six hours.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Resuming {
    /// The recovery run that dispatched the candidate workflow.
    pub by_run: u64,
    /// When the first dispatch no job has adopted since was made.
    pub at: DateTime<Utc>,
}

fn agent_ran_by_default() -> bool {
    true
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SessionState {
    /// Started and not finished.
    Live,
    /// Approved but waiting for room under the cap.
    Parked,
    Finished,
}

/// A family held for one candidate by one parent run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Claim {
    pub family: String,
    pub candidate: String,
    pub parent_run: u64,
    pub claimed_at: DateTime<Utc>,
}

/// The recovery lease: held by one run until it releases it or is seen finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Lease {
    pub owner_run: u64,
    pub taken_at: DateTime<Utc>,
}

/// Something recovery leaves alone while it points at `sha`: a candidate branch whose pull
/// request a maintainer closed, a pull request with a maintainer's commit, a legacy lock ref that
/// names no run. When it moves or disappears, the entry is dropped and it is examined again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Kept {
    pub object: KeptObject,
    pub sha: String,
    /// What recovery decided about it, and keeps deciding while it stays where it is.
    pub verdict: KeptVerdict,
    pub reason: String,
    pub since: DateTime<Utc>,
}

/// What a [`Kept`] entry is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum KeptObject {
    /// A branch or legacy lock ref, by its name without `refs/heads/`.
    Branch(String),
    /// A pull request, by its number.
    PullRequest(u64),
}

impl std::fmt::Display for KeptObject {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeptObject::Branch(name) => write!(formatter, "branch {name}"),
            KeptObject::PullRequest(number) => write!(formatter, "#{number}"),
        }
    }
}

/// The verdict a [`Kept`] entry stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum KeptVerdict {
    /// It stays as it is (a maintainer-closed pull request's branch, a maintainer's commit).
    LeftAlone,
    /// A maintainer may be acting on it: nothing of it is touched.
    NeedsInspection,
}

/// Why the ledger text could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerReadError {
    #[error("ledger.json is not a valid ledger: {0}")]
    Invalid(String),
    #[error(
        "ledger.json has version {found}, newer than version {LEDGER_VERSION} that this klaud understands"
    )]
    NewerVersion { found: u32 },
}

/// Version 1 → 2: each `kept` entry's prose object and verdict become typed; everything else is
/// the same. (Version 2 → 3 only adds fields with empty defaults.)
fn upgrade_version_1(document: &mut serde_json::Value) -> Result<(), LedgerReadError> {
    let invalid = |what: String| LedgerReadError::Invalid(format!("version 1 kept entry: {what}"));
    if let Some(entries) = document
        .get_mut("kept")
        .and_then(serde_json::Value::as_array_mut)
    {
        for entry in entries {
            let object = entry["object"]
                .as_str()
                .ok_or_else(|| invalid("no object".into()))?
                .to_string();
            entry["object"] = if let Some(name) = object.strip_prefix("branch:") {
                serde_json::json!({ "branch": name })
            } else if let Some(number) = object.strip_prefix("pull-request:") {
                let number: u64 = number
                    .parse()
                    .map_err(|_| invalid(format!("object '{object}'")))?;
                serde_json::json!({ "pull-request": number })
            } else {
                return Err(invalid(format!("object '{object}'")));
            };
            let reason = entry["reason"].as_str().unwrap_or_default().to_string();
            let (verdict, reason) = match reason.strip_prefix("needs inspection: ") {
                Some(rest) => ("needs-inspection", rest.to_string()),
                None => (
                    "left-alone",
                    reason
                        .strip_prefix("left alone: ")
                        .unwrap_or(&reason)
                        .to_string(),
                ),
            };
            entry["verdict"] = serde_json::json!(verdict);
            entry["reason"] = serde_json::json!(reason);
        }
    }
    Ok(())
}

/// Why a family could not be claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimRefusal {
    /// Another candidate or run holds the family.
    ClaimedBy { candidate: String, parent_run: u64 },
    /// A live or parked session of the family exists.
    SessionOpen { candidate: String },
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger::empty()
    }
}

impl Ledger {
    pub fn empty() -> Self {
        Ledger {
            version: LEDGER_VERSION,
            sessions: Vec::new(),
            claims: Vec::new(),
            recovery_lease: None,
            kept: Vec::new(),
            steering: Steering::default(),
            last_selection: None,
            passes: Vec::new(),
            aftercare: Vec::new(),
        }
    }

    /// Reads the stored text; a blank file is an empty ledger.
    pub fn from_json(text: &str) -> Result<Self, LedgerReadError> {
        if text.trim().is_empty() {
            return Ok(Ledger::empty());
        }
        let version = serde_json::from_str::<serde_json::Value>(text)
            .map_err(|error| LedgerReadError::Invalid(error.to_string()))?
            .get("version")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| LedgerReadError::Invalid("no version".into()))?;
        if version > u64::from(LEDGER_VERSION) {
            return Err(LedgerReadError::NewerVersion {
                found: u32::try_from(version).unwrap_or(u32::MAX),
            });
        }
        if version < u64::from(LEDGER_VERSION) {
            let mut document: serde_json::Value = serde_json::from_str(text)
                .map_err(|error| LedgerReadError::Invalid(error.to_string()))?;
            if version == 1 {
                upgrade_version_1(&mut document)?;
            }
            document["version"] = serde_json::json!(LEDGER_VERSION);
            return serde_json::from_value(document)
                .map_err(|error| LedgerReadError::Invalid(error.to_string()));
        }
        serde_json::from_str(text).map_err(|error| LedgerReadError::Invalid(error.to_string()))
    }

    /// The stored text: pretty JSON with a trailing newline, so diffs on the state branch read
    /// well.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the ledger serializes") + "\n"
    }

    /// Sessions that count against the concurrent cap.
    pub fn live_sessions(&self) -> impl Iterator<Item = &Session> {
        self.sessions
            .iter()
            .filter(|session| session.state == SessionState::Live)
    }

    /// The open (live or parked) session of a family, if any.
    pub fn open_session_of_family(&self, family: &str) -> Option<&Session> {
        self.sessions
            .iter()
            .find(|session| session.family == family && session.state != SessionState::Finished)
    }

    pub fn claim_of_family(&self, family: &str) -> Option<&Claim> {
        self.claims.iter().find(|claim| claim.family == family)
    }

    /// Claims `family` for `candidate` by `parent_run` and opens its live session, atomically.
    /// Repeating a claim this run already holds changes nothing.
    pub fn claim_family(
        &mut self,
        candidate: &str,
        family: &str,
        parent_run: u64,
        now: DateTime<Utc>,
    ) -> Result<(), ClaimRefusal> {
        if let Some(claim) = self.claim_of_family(family) {
            if claim.candidate == candidate && claim.parent_run == parent_run {
                return Ok(());
            }
            return Err(ClaimRefusal::ClaimedBy {
                candidate: claim.candidate.clone(),
                parent_run: claim.parent_run,
            });
        }
        if let Some(session) = self.open_session_of_family(family) {
            return Err(ClaimRefusal::SessionOpen {
                candidate: session.candidate.clone(),
            });
        }
        self.claims.push(Claim {
            family: family.to_string(),
            candidate: candidate.to_string(),
            parent_run,
            claimed_at: now,
        });
        self.sessions.push(Session {
            candidate: candidate.to_string(),
            family: family.to_string(),
            parent_run,
            parent_attempt: None,
            state: SessionState::Live,
            started_at: now,
            finished_at: None,
            outcome: None,
            agent_ran: true,
            pull_request: None,
            pending_outcome: None,
            attempts: Vec::new(),
            resuming: None,
            unadopted_jobs: Vec::new(),
            kind: Default::default(),
            aftercare: None,
        });
        Ok(())
    }

    /// [`Ledger::claim_family`], recording the parent's run attempt on the live session (a
    /// repeated claim by a later attempt of the same run records that attempt).
    pub fn claim_family_in_attempt(
        &mut self,
        candidate: &str,
        family: &str,
        parent_run: u64,
        parent_attempt: u32,
        now: DateTime<Utc>,
    ) -> Result<(), ClaimRefusal> {
        self.claim_family(candidate, family, parent_run, now)?;
        if let Some(session) = self.sessions.iter_mut().rev().find(|session| {
            session.candidate == candidate
                && session.parent_run == parent_run
                && session.state == SessionState::Live
        }) {
            session.parent_attempt = Some(parent_attempt);
        }
        Ok(())
    }

    /// Finishes the open session of `candidate` with `outcome` and releases its family's claim.
    /// Returns false when the candidate has no open session (already finished: nothing to do).
    pub fn finish_session(
        &mut self,
        candidate: &str,
        outcome: Outcome,
        agent_ran: bool,
        now: DateTime<Utc>,
    ) -> bool {
        let Some(session) = self.sessions.iter_mut().rev().find(|session| {
            session.candidate == candidate && session.state != SessionState::Finished
        }) else {
            return false;
        };
        session.state = SessionState::Finished;
        session.outcome = Some(outcome);
        session.agent_ran = agent_ran;
        session.finished_at = Some(now);
        let family = session.family.clone();
        let parent_run = session.parent_run;
        self.claims
            .retain(|claim| !(claim.family == family && claim.parent_run == parent_run));
        true
    }

    /// The session of `candidate` a job speaks of: its open one, else its newest.
    pub fn session_of(&self, candidate: &str) -> Option<&Session> {
        self.session_index_of(candidate)
            .map(|index| &self.sessions[index])
    }

    fn session_index_of(&self, candidate: &str) -> Option<usize> {
        let mut of_candidate = self
            .sessions
            .iter()
            .enumerate()
            .filter(|(_, session)| session.candidate == candidate);
        of_candidate
            .clone()
            .rev()
            .find(|(_, session)| session.state != SessionState::Finished)
            .or_else(|| of_candidate.next_back())
            .map(|(index, _)| index)
    }

    /// Keeps what `job`'s execution record said on the session of `candidate`, once per job, so
    /// that its cost counts (contract §10): on the attempt the job adopted (attempt 1 of the
    /// run `session` adopted), else as an [`UnadoptedJob`]. Returns false when it was already
    /// kept or the candidate has no session.
    pub fn record_agent_run(
        &mut self,
        candidate: &str,
        job: JobRef,
        agent: &AgentRecord,
        now: DateTime<Utc>,
    ) -> bool {
        let Some(index) = self.session_index_of(candidate) else {
            return false;
        };
        let session = &mut self.sessions[index];
        let adopted = (job.run_attempt == 1)
            .then(|| session.attempts.iter_mut().rev().find(|a| a.run == job.run))
            .flatten();
        if let Some(attempt) = adopted {
            if attempt.agent.is_some() {
                return false;
            }
            attempt.agent = Some(agent.clone());
            return true;
        }
        let known = session
            .unadopted_jobs
            .iter()
            .any(|kept| kept.run == job.run && kept.run_attempt == job.run_attempt);
        if known {
            return false;
        }
        session.unadopted_jobs.push(UnadoptedJob {
            run: job.run,
            run_attempt: job.run_attempt,
            ended_at: now,
            agent: agent.clone(),
        });
        let excess = session
            .unadopted_jobs
            .len()
            .saturating_sub(UNADOPTED_JOBS_KEPT);
        session.unadopted_jobs.drain(..excess);
        true
    }

    /// Records a pass that changed something, keeping the last [`PASSES_KEPT`].
    pub fn record_pass(&mut self, pass: PassRecord) {
        self.passes
            .retain(|known| known.run != pass.run || known.mode != pass.mode);
        self.passes.push(pass);
        let excess = self.passes.len().saturating_sub(PASSES_KEPT);
        self.passes.drain(..excess);
    }

    /// The candidates of parked sessions, oldest first.
    pub fn parked_candidates(&self) -> Vec<&str> {
        self.sessions
            .iter()
            .filter(|session| session.state == SessionState::Parked)
            .map(|session| session.candidate.as_str())
            .collect()
    }

    /// Removes finished sessions that finished before `now - keep_for`, except the last finished
    /// session of each family (its outcome still says what happened to the family).
    pub fn prune(&mut self, now: DateTime<Utc>, keep_for: Duration) -> usize {
        let horizon = now - keep_for;
        let mut last_finished_of_family = std::collections::HashMap::new();
        for (index, session) in self.sessions.iter().enumerate() {
            if session.state == SessionState::Finished {
                let finished = session.finished_at.unwrap_or(session.started_at);
                let entry = last_finished_of_family
                    .entry(session.family.clone())
                    .or_insert((index, finished));
                if finished >= entry.1 {
                    *entry = (index, finished);
                }
            }
        }
        let keep: std::collections::HashSet<usize> = last_finished_of_family
            .values()
            .map(|(index, _)| *index)
            .collect();
        let before = self.sessions.len();
        let mut index = 0;
        self.sessions.retain(|session| {
            let this = index;
            index += 1;
            session.state != SessionState::Finished
                || keep.contains(&this)
                || session.finished_at.unwrap_or(session.started_at) >= horizon
        });
        let parked: Vec<String> = self
            .parked_candidates()
            .into_iter()
            .map(str::to_string)
            .collect();
        let parked: Vec<&str> = parked.iter().map(String::as_str).collect();
        self.steering.prune(&parked, now, keep_for);
        before - self.sessions.len()
    }
}

/// The published JSON Schema of `ledger.json`.
pub fn ledger_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Ledger)).expect("schema serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::test_support::at;

    #[test]
    fn a_blank_file_is_an_empty_ledger_and_round_trips() {
        let ledger = Ledger::from_json("").unwrap();
        assert_eq!(ledger, Ledger::empty());
        assert_eq!(Ledger::from_json(&ledger.to_json()).unwrap(), ledger);
    }

    #[test]
    fn a_newer_version_is_refused_not_misread() {
        let error = Ledger::from_json(r#"{"version": 6, "sessions": []}"#).unwrap_err();
        assert_eq!(error, LedgerReadError::NewerVersion { found: 6 });
    }

    #[test]
    fn a_version_4_ledger_reads_with_its_sessions_proposing_and_nothing_in_aftercare() {
        let ledger = Ledger::from_json(
            r#"{"version": 4, "sessions": [{"candidate": "a", "family": "f", "parent-run": 1,
                "state": "finished", "started-at": "2026-01-01T00:00:00Z",
                "finished-at": "2026-01-01T01:00:00Z", "outcome": "validated",
                "pull-request": 7}]}"#,
        )
        .unwrap();
        assert_eq!(ledger.version, LEDGER_VERSION);
        assert_eq!(ledger.sessions[0].kind, SessionKind::Propose);
        assert_eq!(ledger.sessions[0].aftercare, None);
        assert!(ledger.aftercare.is_empty());
        let written = ledger.to_json();
        assert!(!written.contains("\"kind\"") && !written.contains("\"aftercare\""));
        assert_eq!(Ledger::from_json(&written).unwrap(), ledger);
    }

    #[test]
    fn a_version_1_kept_entry_reads_as_its_object_and_verdict() {
        let ledger = Ledger::from_json(
            r#"{"version": 1, "kept": [
                {"object": "branch:klaud/auto-a", "sha": "1", "reason": "closed by ada", "since": "2026-01-01T00:00:00Z"},
                {"object": "pull-request:7", "sha": "2", "reason": "needs inspection: the head moved", "since": "2026-01-01T00:00:00Z"},
                {"object": "pull-request:8", "sha": "3", "reason": "left alone: #8 has a commit by ada", "since": "2026-01-01T00:00:00Z"}
            ]}"#,
        )
        .unwrap();
        assert_eq!(ledger.version, LEDGER_VERSION);
        let read: Vec<(KeptObject, KeptVerdict, &str)> = ledger
            .kept
            .iter()
            .map(|kept| (kept.object.clone(), kept.verdict, kept.reason.as_str()))
            .collect();
        assert_eq!(
            read,
            [
                (
                    KeptObject::Branch("klaud/auto-a".into()),
                    KeptVerdict::LeftAlone,
                    "closed by ada"
                ),
                (
                    KeptObject::PullRequest(7),
                    KeptVerdict::NeedsInspection,
                    "the head moved"
                ),
                (
                    KeptObject::PullRequest(8),
                    KeptVerdict::LeftAlone,
                    "#8 has a commit by ada"
                ),
            ]
        );
        assert!(matches!(
            Ledger::from_json(
                r#"{"version": 1, "kept": [{"object": "tag:x", "sha": "1", "reason": "r", "since": "2026-01-01T00:00:00Z"}]}"#
            ),
            Err(LedgerReadError::Invalid(message)) if message.contains("tag:x")
        ));
    }

    #[test]
    fn unknown_keys_are_invalid() {
        assert!(matches!(
            Ledger::from_json(r#"{"version": 1, "sesions": []}"#),
            Err(LedgerReadError::Invalid(_))
        ));
    }

    #[test]
    fn legacy_outcome_names_are_read_back() {
        let ledger = Ledger::from_json(
            r#"{"version": 1, "sessions": [{"candidate": "a", "family": "f", "parent-run": 1,
                "state": "finished", "started-at": "2026-11-01T00:00:00Z",
                "finished-at": "2026-11-01T01:00:00Z", "outcome": "readiness-blocked"}]}"#,
        )
        .unwrap();
        assert_eq!(ledger.sessions[0].outcome, Some(Outcome::MissingAssets));
        assert!(ledger.sessions[0].agent_ran);
    }

    #[test]
    fn a_family_is_claimed_once_and_repeating_the_claim_changes_nothing() {
        let mut ledger = Ledger::empty();
        let now = at("2026-11-30T10:00:00Z");
        ledger.claim_family("a", "f", 7, now).unwrap();
        let after_first = ledger.clone();
        ledger.claim_family("a", "f", 7, now).unwrap();
        assert_eq!(ledger, after_first);
        assert_eq!(
            ledger.claim_family("b", "f", 8, now),
            Err(ClaimRefusal::ClaimedBy {
                candidate: "a".into(),
                parent_run: 7
            })
        );
        assert_eq!(ledger.live_sessions().count(), 1);
    }

    #[test]
    fn a_claim_records_the_attempt_and_documents_without_one_still_read() {
        let mut ledger = Ledger::empty();
        let now = at("2026-11-30T10:00:00Z");
        ledger.claim_family_in_attempt("a", "f", 7, 1, now).unwrap();
        assert_eq!(ledger.sessions[0].parent_attempt, Some(1));
        ledger.claim_family_in_attempt("a", "f", 7, 2, now).unwrap();
        assert_eq!(
            ledger.sessions.len(),
            1,
            "a later attempt repeats the claim"
        );
        assert_eq!(ledger.sessions[0].parent_attempt, Some(2));
        assert!(ledger.to_json().contains("\"parent-attempt\": 2"));
        let old = Ledger::from_json(
            r#"{"version": 1, "sessions": [{"candidate": "a", "family": "f", "parent-run": 1,
                "state": "live", "started-at": "2026-11-01T00:00:00Z"}]}"#,
        )
        .unwrap();
        assert_eq!(old.sessions[0].parent_attempt, None);
        assert!(!old.to_json().contains("parent-attempt"));
    }

    #[test]
    fn finishing_releases_the_claim_and_keeps_the_outcome() {
        let mut ledger = Ledger::empty();
        let now = at("2026-11-30T10:00:00Z");
        ledger.claim_family("a", "f", 7, now).unwrap();
        assert!(ledger.finish_session("a", Outcome::Failed, true, now));
        assert!(!ledger.finish_session("a", Outcome::Failed, true, now));
        assert!(ledger.claims.is_empty());
        assert_eq!(ledger.sessions[0].outcome, Some(Outcome::Failed));
        ledger.claim_family("b", "f", 8, now).unwrap();
    }

    #[test]
    fn pruning_keeps_open_sessions_recent_ones_and_the_last_of_each_family() {
        let mut ledger = Ledger::empty();
        let old = at("2026-10-01T00:00:00Z");
        let recent = at("2026-11-29T00:00:00Z");
        for (candidate, family, when) in [
            ("a", "f", old),
            ("b", "f", old),
            ("c", "g", old),
            ("d", "h", recent),
        ] {
            ledger.claim_family(candidate, family, 1, when).unwrap();
            ledger.finish_session(candidate, Outcome::Failed, true, when);
        }
        ledger.claim_family("e", "f", 2, recent).unwrap();
        let removed = ledger.prune(at("2026-11-30T00:00:00Z"), Duration::days(7));
        let kept: Vec<&str> = ledger
            .sessions
            .iter()
            .map(|s| s.candidate.as_str())
            .collect();
        assert_eq!(removed, 1);
        assert_eq!(kept, ["b", "c", "d", "e"]);
    }
}
