//! The ledger part of the benchmark scenario: its 50 sessions as plain data (candidate, family,
//! parent run, live/parked/finished, outcome, times), and writing a serialized ledger document
//! onto the state branch. The document's format belongs to the ledger module; this file only
//! supplies the facts and the write.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::clock::{DAY, HOUR, MINUTE, Timestamp};
use super::prng::SplitMix64;
use super::scenario::{BOT, LEDGER_PATH, candidate_branch, candidate_id, family_of};
use super::state::{PullState, RepoState};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionState {
    Live,
    Parked,
    Finished,
}

/// A ledger session as plain data, for whoever writes the ledger document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioSession {
    pub candidate: String,
    pub family: String,
    pub parent_run_id: u64,
    pub state: SessionState,
    pub outcome: Option<String>,
    pub started_at: Timestamp,
    pub finished_at: Option<Timestamp>,
    pub pull_request: Option<u64>,
}

/// Puts `ledger.json` on `branch` (created as an orphan branch when missing) as the bot.
pub fn write_ledger(state: &mut RepoState, branch: &str, serialized_ledger: &str) -> String {
    let now = state.now();
    state.commit_files_on_branch(
        branch,
        &[(LEDGER_PATH.to_string(), Some(serialized_ledger.to_string()))],
        "bench: seed ledger",
        BOT,
        now,
    )
}

/// The 50 ledger sessions: 8 live (cand-00..07), 4 parked (cand-08..11), 38 finished
/// (cand-18, cand-19 validated and cand-20..55) spread over 14 days.
pub fn sessions(
    state: &RepoState,
    random: &mut SplitMix64,
    now: Timestamp,
    live_parents: &[u64; 2],
    open_numbers: &BTreeMap<usize, u64>,
) -> Vec<ScenarioSession> {
    let wave_before = |at: Timestamp| -> u64 {
        state
            .runs
            .values()
            .filter(|run| {
                run.event == "schedule" && run.created_at <= at && run.status == "completed"
            })
            .max_by_key(|run| (run.created_at, run.id))
            .map(|run| run.id)
            .unwrap_or(0)
    };
    let closed_pull = |index: usize| -> Option<u64> {
        state
            .pulls
            .values()
            .filter(|pull| {
                pull.head_ref == candidate_branch(index) && pull.state == PullState::Closed
            })
            .map(|pull| pull.number)
            .max()
    };
    let mut sessions = Vec::new();
    for index in 0..8 {
        let parent = live_parents[index / 4];
        let started_at = state.runs[&parent].created_at.plus(3 * MINUTE);
        sessions.push(ScenarioSession {
            candidate: candidate_id(index),
            family: family_of(index),
            parent_run_id: parent,
            state: SessionState::Live,
            outcome: None,
            started_at,
            finished_at: None,
            pull_request: open_numbers.get(&index).copied(),
        });
    }
    for index in 8..12 {
        let started_at = now.minus(random.range(6, 40) as i64 * HOUR);
        sessions.push(ScenarioSession {
            candidate: candidate_id(index),
            family: family_of(index),
            parent_run_id: wave_before(started_at),
            state: SessionState::Parked,
            outcome: None,
            started_at,
            finished_at: None,
            pull_request: open_numbers.get(&index).copied(),
        });
    }
    let mut outcomes: Vec<&str> = Vec::new();
    for (outcome, count) in [
        ("validated", 8),
        ("no-capacity", 8),
        ("missing-assets", 6),
        ("closed-by-maintainer", 4),
        ("incompatible", 4),
        ("no-outcome", 3),
        ("inconclusive", 3),
    ] {
        outcomes.extend(std::iter::repeat_n(outcome, count));
    }
    random.shuffle(&mut outcomes);
    let finished: Vec<(usize, &str)> = [(18, "validated"), (19, "validated")]
        .into_iter()
        .chain((20..56).zip(outcomes))
        .collect();
    let spacing = 14 * DAY / finished.len() as i64;
    for (slot, (index, outcome)) in finished.into_iter().enumerate() {
        let finished_at = now.minus(slot as i64 * spacing + random.range(60, 3600) as i64);
        let started_at = finished_at.minus(random.range(2, 10) as i64 * HOUR);
        sessions.push(ScenarioSession {
            candidate: candidate_id(index),
            family: family_of(index),
            parent_run_id: wave_before(started_at),
            state: SessionState::Finished,
            outcome: Some(outcome.to_string()),
            started_at,
            finished_at: Some(finished_at),
            pull_request: open_numbers
                .get(&index)
                .copied()
                .or_else(|| closed_pull(index)),
        });
    }
    sessions
}
