//! After-care in the day (contract §12): what happens to some of the day's validated pull
//! requests after their session ends, the after-care sessions the recovery passes start on them,
//! and what the day keeps of it for the report.
//!
//! - **Troubles** ([`TROUBLES`]): some minutes after a validated session's `finish`, its pull
//!   request conflicts with its base (a maintainer merges a change to the same file into `main`;
//!   the fake says `CONFLICTING`) or a check fails on its head (a `ci.yml` run on the head whose
//!   `lint` job failed, its log kept by the fake). The next recovery pass starts a `refresh` or a
//!   `repair` session when the cap has room; each trouble says how that session ends.
//! - **A superseded pull request**: the day's candidates come from the InferenceX families, which
//!   have no pull request of klaud before the day, so no family has an older validated one when a
//!   newer candidate of it is validated. When a wave claims the candidate at
//!   [`SUPERSEDING_CLAIM`] (it ends `validated`), the repository is given what yesterday would
//!   have left: an older candidate of the same family (`<id>-previous`) validated a day ago, its
//!   bot-only branch and ready pull request labelled `klaud-finished` with a successful sweep on
//!   its head, its finished session and its after-care record (watched) in the ledger. The newer
//!   session's `finish` supersedes it.
//! - An after-care session a recovery pass started is played as a resumed one is, in the
//!   candidate run the pass dispatched: `session`, the agent's commit on the branch (a
//!   `refresh` merges the base and the fake says mergeable again; a `repair` fixes the failed
//!   job), a sweep run on the new head for a `validated` ending, 3 `note`s, 10 `check-stop`s and
//!   `finish`; its steps are counted apart (`session (after-care)`, …).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::fake_github::scenario::{self, BOT, MAINTAINERS, SWEEP_WORKFLOW};
use super::fake_github::{CommitSpec, JobSpec, Mergeability, PullRequestSpec, PullState, RunSpec};
use super::{Day, Event, Played, support};
use klaud::core::aftercare::{AftercareState, SessionKind};
use klaud::core::ledger::{Ledger, Session, SessionState};
use klaud::core::outcome::Outcome;

/// What happens to a validated pull request after its session ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trouble {
    /// A maintainer merges a change to the same file into `main`: it conflicts.
    Conflict,
    /// A `ci.yml` run on its head fails in its `lint` job.
    FailedCheck,
}

/// The troubles of the day: the claimed session (in claim order, one that ends `validated`)
/// whose pull request it hits, the trouble, the minutes after that session's `finish`, and how
/// the after-care session it calls for ends.
pub const TROUBLES: [(usize, Trouble, u32, &str); 3] = [
    (0, Trouble::Conflict, 25, "validated"),
    (2, Trouble::FailedCheck, 20, "validated"),
    (6, Trouble::Conflict, 25, "failed"),
];

/// The claimed session (in claim order, one that ends `validated`) whose family is given an
/// older validated pull request for its `finish` to supersede.
pub const SUPERSEDING_CLAIM: usize = 8;

/// How long an after-care session runs, in minutes.
pub const AFTERCARE_DURATION: u32 = 90;

/// The failed `lint` job's log: the repair session is given its last lines.
const LINT_LOG: &str = "\
2026-01-01T00:00:01.0000000Z ##[group]Run ruff check .
2026-01-01T00:00:02.0000000Z configs/tuned.yaml:12: duplicate key `max-num-seqs`
2026-01-01T00:00:02.1000000Z Found 1 error.
2026-01-01T00:00:02.2000000Z ##[endgroup]
2026-01-01T00:00:02.3000000Z ##[error]Process completed with exit code 1.
";

/// What the day keeps of after-care.
#[derive(Default)]
pub struct Tally {
    /// The after-care sessions the recovery passes started, by kind.
    pub started: BTreeMap<SessionKind, usize>,
    /// How each candidate's next after-care session ends, set by its trouble.
    pub planned: BTreeMap<String, &'static str>,
    /// The troubles as they happened, for the report.
    pub troubles: Vec<String>,
    /// The pull requests `finish` superseded.
    pub superseded_by_finish: Vec<u64>,
    /// Superseded pull requests a recovery pass closed.
    pub closed_by_recover: usize,
    /// The older pull request seeded for superseding: its candidate and number.
    pub seeded: Option<(String, u64)>,
    /// The failed jobs repair sessions were given, and how many came with a log tail.
    pub evidence: usize,
    pub log_tails: usize,
    /// Recovery passes that found a session due and started none, with why (the reason's
    /// first words).
    pub not_started: BTreeMap<String, usize>,
}

/// The after-care figures at the end of the day, from the ledger.
pub struct Figures {
    /// Per kind: started, ended by outcome, the agent cost recorded.
    pub kinds: BTreeMap<SessionKind, KindFigures>,
    /// Pull requests waiting for a maintainer (`klaud-needs-maintainer`).
    pub needs_maintainer: Vec<u64>,
    /// Pull requests watched at the end of the day.
    pub watched: usize,
}

#[derive(Default)]
pub struct KindFigures {
    pub started: usize,
    pub sessions: usize,
    pub outcomes: BTreeMap<String, usize>,
    pub cost_usd: f64,
}

impl Day {
    /// The trouble of claimed session `index`'s pull request, if it has one, scheduled from
    /// its `finish` at `minute`.
    pub(super) fn schedule_trouble(&mut self, minute: u32, index: usize) {
        let played = &self.sessions[index];
        if played.outcome != "validated" || played.kind != SessionKind::Propose {
            return;
        }
        let Some(claim) = played.claim else {
            return;
        };
        if let Some(&(_, _, after, _)) = TROUBLES.iter().find(|trouble| trouble.0 == claim) {
            self.at(minute + after, Event::Trouble(index));
        }
    }

    /// Claimed session `index`'s pull request gets its trouble.
    pub(super) fn trouble(&mut self, minute: u32, index: usize) {
        let played = &self.sessions[index];
        let claim = played.claim.expect("a claimed session");
        let &(_, trouble, _, ends) = TROUBLES
            .iter()
            .find(|trouble| trouble.0 == claim)
            .expect("its trouble");
        let candidate = played.candidate.clone();
        let number = played.pull_request.expect("a validated pull request");
        let branch = format!("{}{candidate}", scenario::BRANCH_PREFIX);
        self.server().with_state(|state| match trouble {
            Trouble::Conflict => {
                state.push_commits(
                    "main",
                    vec![
                        CommitSpec::by(MAINTAINERS[0])
                            .message(&format!("Tune {candidate} by hand"))
                            .file(&format!("tuned/{candidate}.yaml"), "tuned: by hand\n"),
                    ],
                );
                state.set_mergeability(number, Mergeability::Conflicting, false);
            }
            Trouble::FailedCheck => {
                let head = state.pulls[&number].head_sha.clone();
                let run = state.add_run(RunSpec {
                    workflow: "ci.yml".into(),
                    head_branch: Some(branch),
                    head_sha: Some(head),
                    event: "pull_request".into(),
                    status: "completed".into(),
                    conclusion: Some("failure".into()),
                    actor: Some(BOT.into()),
                    jobs: vec![
                        JobSpec::completed("lint", "failure"),
                        JobSpec::completed("unit tests", "success"),
                    ],
                    ..RunSpec::default()
                });
                let lint = state
                    .jobs_of_run(run)
                    .iter()
                    .find(|job| job.name == "lint")
                    .expect("the lint job")
                    .id;
                state.set_job_log(lint, LINT_LOG);
            }
        });
        self.aftercare.troubles.push(format!(
            "{:02}:{:02} #{number} ({candidate}): {}",
            minute / 60,
            minute % 60,
            match trouble {
                Trouble::Conflict => "conflicts with main",
                Trouble::FailedCheck => "a check failed on its head",
            }
        ));
        self.aftercare.planned.insert(candidate, ends);
    }

    /// The after-care sessions `recover` (its `recover.json` in `directory`) started, each
    /// played in the candidate run the pass dispatched from `minute`.
    pub(super) fn play_aftercare_started(&mut self, minute: u32, record: &Value, started: usize) {
        let candidates: Vec<String> = record["applied"]["aftercare-started"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|id| id.as_str().map(str::to_string))
            .collect();
        assert_eq!(
            candidates.len(),
            started,
            "aftercare-started and recover.json's started sessions differ"
        );
        let decisions = record["plan"]["aftercare"].as_array().cloned();
        for decision in decisions.iter().flatten() {
            let decided = decision["decided"].as_str().unwrap_or_default();
            if decided == "closed" {
                self.aftercare.closed_by_recover += 1;
            }
            if decided == "not-started" {
                let reason = decision["reason"].as_str().unwrap_or_default();
                let why = reason
                    .split_once("not started: ")
                    .map_or(reason, |(_, why)| why);
                let head = why.split([':', '(']).next().unwrap_or(why).trim();
                *self
                    .aftercare
                    .not_started
                    .entry(head.to_string())
                    .or_default() += 1;
            }
        }
        for candidate in candidates {
            let kind = decisions
                .iter()
                .flatten()
                .find(|decision| {
                    decision["candidate"] == candidate.as_str() && decision["decided"] == "started"
                })
                .and_then(|decision| decision["kind"].as_str())
                .map(|kind| match kind {
                    "refresh" => SessionKind::Refresh,
                    "repair" => SessionKind::Repair,
                    other => panic!("an after-care session of kind {other}"),
                })
                .expect("the started session's kind");
            *self.aftercare.started.entry(kind).or_default() += 1;
            let run = self.dispatched_run(&candidate);
            let outcome = self
                .aftercare
                .planned
                .remove(&candidate)
                .unwrap_or("validated");
            let index = self.sessions.len();
            self.sessions.push(Played {
                candidate,
                run,
                wave: None,
                claim: None,
                kind,
                outcome,
                duration: AFTERCARE_DURATION,
                context_file: String::new(),
                outcome_file: String::new(),
                pull_request: None,
            });
            self.at(minute + 5, Event::SessionStarts(index));
        }
    }

    /// What a `repair` session's `session.json` gives it: its failed jobs, and those with the
    /// end of their log.
    pub(super) fn count_evidence(&mut self, context: &Value) {
        for evidence in context["evidence"].as_array().into_iter().flatten() {
            self.aftercare.evidence += 1;
            if evidence["log"]["state"] == "tail" {
                self.aftercare.log_tails += 1;
            }
        }
    }

    /// The agent's work in after-care session `index`: a `refresh` merges the base into the
    /// branch (and GitHub computes it mergeable again), a `repair` fixes the failed job; an
    /// agent that ends otherwise pushes nothing.
    pub(super) fn aftercare_agent_works(&mut self, index: usize) {
        let played = &self.sessions[index];
        if played.outcome != "validated" {
            return;
        }
        let (candidate, kind) = (played.candidate.clone(), played.kind);
        let number = played.pull_request.expect("the after-care pull request");
        let branch = format!("{}{candidate}", scenario::BRANCH_PREFIX);
        self.server().with_state(|state| {
            let commit = match kind {
                SessionKind::Refresh => CommitSpec::by(BOT)
                    .message("Merge main: keep the tuning of both sides")
                    .file(&format!("tuned/{candidate}.yaml"), "tuned: merged\n"),
                _ => CommitSpec::by(BOT)
                    .message("Fix lint: drop the duplicate key")
                    .file(&format!("tuned/{candidate}.yaml"), "tuned: fixed\n"),
            };
            state.push_commits(&branch, vec![commit]);
            if kind == SessionKind::Refresh {
                state.set_mergeability(number, Mergeability::Mergeable, false);
            }
        });
    }

    /// The claimed `candidate` of `family` at claim `claim`: when it is the superseding one,
    /// the repository is given an older validated pull request of its family (see the module
    /// doc).
    pub(super) fn seed_older_pull_request(&mut self, claim: usize, candidate: &str, family: &str) {
        if claim != SUPERSEDING_CLAIM {
            return;
        }
        let older = format!("{candidate}-previous");
        let branch = format!("{}{older}", scenario::BRANCH_PREFIX);
        let number = self.server().with_state(|state| {
            let yesterday = state.now().minus(86_400);
            let number = state.add_pull_request(PullRequestSpec {
                title: format!("klaud: tune {older}"),
                body: Some(format!("Candidate `{older}`.")),
                author: BOT.into(),
                head_ref: branch.clone(),
                draft: false,
                labels: vec!["klaud-finished".into()],
                commits: vec![
                    CommitSpec::by(BOT)
                        .message(&format!("klaud: tune {older}"))
                        .file(&format!("tuned/{older}.yaml"), "tuned: true\n"),
                ],
                created_at: Some(yesterday.minus(3 * 3600)),
                ..PullRequestSpec::default()
            });
            let head = state.pulls[&number].head_sha.clone();
            state.add_run(RunSpec {
                workflow: SWEEP_WORKFLOW.into(),
                head_branch: Some(branch.clone()),
                head_sha: Some(head.clone()),
                event: "pull_request".into(),
                status: "completed".into(),
                conclusion: Some("success".into()),
                actor: Some(BOT.into()),
                created_at: Some(yesterday.minus(3600)),
                jobs: vec![JobSpec::completed("sweep", "success")],
                ..RunSpec::default()
            });
            let text = state
                .read_file(scenario::STATE_BRANCH, scenario::LEDGER_PATH)
                .expect("the ledger");
            let mut ledger = Ledger::from_json(&text).expect("a ledger");
            let validated_at = support::time(yesterday);
            ledger.sessions.push(Session {
                candidate: older.clone(),
                family: family.to_string(),
                parent_run: 1,
                parent_attempt: None,
                state: SessionState::Finished,
                started_at: support::time(yesterday.minus(3 * 3600)),
                finished_at: Some(validated_at),
                outcome: Some(Outcome::Validated),
                agent_ran: true,
                pull_request: Some(number),
                pending_outcome: None,
                attempts: Vec::new(),
                resuming: None,
                unadopted_jobs: Vec::new(),
                kind: SessionKind::Propose,
                aftercare: None,
            });
            ledger.record_validated(&older, family, number, Some(&head), validated_at);
            state.put_file(
                scenario::STATE_BRANCH,
                scenario::LEDGER_PATH,
                &ledger.to_json(),
            );
            if let Some(record) =
                state.read_file(scenario::STATE_BRANCH, &format!("records/{candidate}.json"))
            {
                let mut record: Value = serde_json::from_str(&record).expect("a JSON record");
                record["id"] = json!(older);
                state.put_file(
                    scenario::STATE_BRANCH,
                    &format!("records/{older}.json"),
                    &record.to_string(),
                );
            }
            number
        });
        self.aftercare.seeded = Some((older, number));
    }

    /// What after-care left at the end of the day, as contract §12 says: each pull request
    /// whose after-care session ended `validated` ready with `klaud-finished`, each whose session
    /// ended otherwise an open draft with its branch labelled `klaud-needs-maintainer`, and the
    /// superseded one closed with its branch deleted.
    pub(super) fn check_aftercare_ends(&self) {
        let aftercare: Vec<(&str, u64)> = self
            .sessions
            .iter()
            .filter(|played| played.kind.is_aftercare())
            .map(|played| {
                let number = played.pull_request.expect("the after-care pull request");
                (played.outcome, number)
            })
            .collect();
        let superseded = self.aftercare.superseded_by_finish.clone();
        self.server().with_state(|state| {
            for (outcome, number) in aftercare {
                let pull = &state.pulls[&number];
                let has = |label: &str| pull.labels.iter().any(|l| l == label);
                assert_eq!(pull.state, PullState::Open, "#{number} stays open");
                if outcome == "validated" {
                    assert!(
                        !pull.draft && has("klaud-finished"),
                        "#{number} is ready again"
                    );
                } else {
                    assert!(
                        pull.draft
                            && has("klaud-needs-maintainer")
                            && state.branch_sha(&pull.head_ref).is_some(),
                        "#{number} waits for a maintainer as an open draft with its branch"
                    );
                }
            }
            for number in superseded {
                let pull = &state.pulls[&number];
                assert_eq!(pull.state, PullState::Closed, "#{number} is closed");
                assert!(
                    state.branch_sha(&pull.head_ref).is_none(),
                    "#{number}'s branch is deleted"
                );
            }
        });
    }

    /// The after-care figures at the end of the day, from the ledger.
    pub(super) fn aftercare_figures(&self) -> Figures {
        let ledger = self.server().with_state(|state| {
            let text = state
                .read_file(scenario::STATE_BRANCH, scenario::LEDGER_PATH)
                .expect("the ledger");
            Ledger::from_json(&text).expect("a ledger")
        });
        let mut kinds: BTreeMap<SessionKind, KindFigures> = BTreeMap::new();
        for (kind, started) in &self.aftercare.started {
            kinds.entry(*kind).or_default().started = *started;
        }
        // Every session of the day: the propose sessions' figures beside the after-care ones.
        let played: Vec<&str> = self.sessions.iter().map(|s| s.candidate.as_str()).collect();
        for session in ledger
            .sessions
            .iter()
            .filter(|session| played.contains(&session.candidate.as_str()))
            .filter(|session| !session.attempts.is_empty())
        {
            let figures = kinds.entry(session.kind).or_default();
            figures.sessions += 1;
            let outcome = match (&session.state, session.outcome) {
                (SessionState::Finished, Some(outcome)) => outcome.name().to_string(),
                (state, _) => format!("{state:?}").to_lowercase(),
            };
            *figures.outcomes.entry(outcome).or_default() += 1;
            figures.cost_usd += session
                .agent_runs()
                .filter_map(|(_, agent)| agent.cost_usd)
                .sum::<f64>();
        }
        let needs_maintainer = ledger
            .aftercare
            .iter()
            .filter(|record| matches!(record.state, AftercareState::NeedsMaintainer { .. }))
            .map(|record| record.pull_request)
            .collect();
        let watched = ledger
            .aftercare
            .iter()
            .filter(|record| record.state == AftercareState::Watched)
            .count();
        Figures {
            kinds,
            needs_maintainer,
            watched,
        }
    }
}
