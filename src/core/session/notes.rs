//! The session log (contract §9, `note`): the agent's dated entries, kept in the ledger's attempt
//! records and shown as one comment on the session's pull request, found by its marker and
//! updated in place. An entry is at most [`NOTE_LIMIT`] characters; the oldest entries are folded
//! into a count when the comment would pass [`COMMENT_LIMIT`] (GitHub refuses bodies over 65,536).
//! The ledger keeps exactly what the comment shows, so a resumed agent reads the same log.

use chrono::{DateTime, SecondsFormat, Utc};

use crate::core::ledger::{Note, Session};
use crate::core::plan::{Action, ActionGroup, LedgerExpectation, MarkedComment, PullRequestCheck};
use crate::core::policy::Policy;
use crate::core::snapshot::PullRequestFact;

/// Characters one entry may have; a longer text is cut and says so.
pub const NOTE_LIMIT: usize = 4_000;

/// Characters the log comment may have, under GitHub's 65,536 with room to spare.
pub const COMMENT_LIMIT: usize = 60_000;

/// Why a note cannot be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteRefusal {
    #[error("the note is empty")]
    Empty,
    #[error(
        "run {run} runs no attempt of this session (a note is written from the job that `session` adopted)"
    )]
    NoAttemptOfRun { run: u64 },
}

/// Why the session log has no comment to write now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoLogComment {
    #[error("the session has no pull request yet")]
    NoPullRequest,
    #[error("#{0} comes from a fork")]
    FromAFork(u64),
    #[error("#{0} is not the bot's")]
    NotTheBots(u64),
    #[error("#{0} is closed")]
    Closed(u64),
    #[error("#{0} was handed off to maintainers")]
    HandedOff(u64),
}

/// What adding a note did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteAdded {
    /// The attempt the entry went to.
    pub attempt: u32,
    /// Characters cut from the text to keep the entry bounded (0 when none).
    pub cut: usize,
    /// Entries folded (over all attempts) to keep the log bounded, this time.
    pub folded: u32,
}

/// The marker that finds the session's log comment on its pull request.
pub fn log_marker(candidate: &str) -> String {
    format!("<!-- klaud:session-log candidate={candidate} -->")
}

/// The entry's text as stored: control characters other than line breaks and tabs dropped,
/// trimmed, and cut to [`NOTE_LIMIT`] characters with a line that says how many were cut.
pub fn bounded_entry(text: &str) -> (String, usize) {
    let cleaned: String = text
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .collect();
    let cleaned = cleaned.trim();
    let total = cleaned.chars().count();
    if total <= NOTE_LIMIT {
        return (cleaned.to_string(), 0);
    }
    let suffix_room = 40;
    let kept: String = cleaned.chars().take(NOTE_LIMIT - suffix_room).collect();
    let cut = total - (NOTE_LIMIT - suffix_room);
    (format!("{kept}\n… ({cut} characters cut)"), cut)
}

/// Adds an entry to the attempt of `run` in `session`, folding the oldest entries while the log
/// comment would be too long.
pub fn add_note(
    session: &mut Session,
    run: u64,
    text: &str,
    now: DateTime<Utc>,
) -> Result<NoteAdded, NoteRefusal> {
    let (text, cut) = bounded_entry(text);
    if text.is_empty() {
        return Err(NoteRefusal::Empty);
    }
    let attempt = session
        .attempts
        .iter_mut()
        .rev()
        .find(|attempt| attempt.run == run)
        .ok_or(NoteRefusal::NoAttemptOfRun { run })?;
    attempt.notes.push(Note { at: now, text });
    let number = attempt.number;
    let mut folded = 0;
    while render_log(session).chars().count() > COMMENT_LIMIT {
        let Some(oldest) = session
            .attempts
            .iter_mut()
            .find(|attempt| !attempt.notes.is_empty())
        else {
            break;
        };
        oldest.notes.remove(0);
        oldest.notes_folded += 1;
        folded += 1;
    }
    Ok(NoteAdded {
        attempt: number,
        cut,
        folded,
    })
}

/// The log comment's body: the marker, then each attempt with its entries, oldest first.
/// Entry text is quoted and cannot end the quote, forge the marker or hide as a comment.
pub fn render_log(session: &Session) -> String {
    let mut body = log_marker(&session.candidate);
    body.push_str(&format!(
        "\n### klaud session log: `{}`\n\nNotes the agent left while it worked, oldest first. klaud updates this comment in place.\n",
        session.candidate
    ));
    for attempt in &session.attempts {
        body.push_str(&format!(
            "\n**Attempt {}** (run {}, from {} to the deadline {}{})\n",
            attempt.number,
            attempt.run,
            shown_time(attempt.adopted_at),
            shown_time(attempt.deadline),
            attempt
                .end
                .map(|end| format!("; ended: {}", end.name()))
                .unwrap_or_default()
        ));
        if attempt.notes_folded > 0 {
            body.push_str(&format!(
                "\n_{} earlier entries folded to keep this log short._\n",
                attempt.notes_folded
            ));
        }
        for note in &attempt.notes {
            body.push_str(&format!("\n- {}\n", shown_time(note.at)));
            for line in note.text.lines() {
                body.push_str("  > ");
                body.push_str(&line.replace("<!--", "<\u{200b}!--"));
                body.push('\n');
            }
        }
    }
    body
}

/// The write of the log comment on the session's pull request, behind a re-check that it is
/// still open, the bot's and not handed off; `Err` says why there is no comment to write (the
/// entry is in the ledger all the same, and the next note writes the whole log).
pub fn log_comment_group(
    session: &Session,
    pull: Option<&PullRequestFact>,
    policy: &Policy,
) -> Result<ActionGroup, NoLogComment> {
    let pull = pull.ok_or(NoLogComment::NoPullRequest)?;
    if !pull.from_this_repository {
        return Err(NoLogComment::FromAFork(pull.number));
    }
    if pull.author.as_deref() != Some(policy.bot.as_str()) {
        return Err(NoLogComment::NotTheBots(pull.number));
    }
    if !pull.open {
        return Err(NoLogComment::Closed(pull.number));
    }
    if pull
        .labels
        .iter()
        .any(|label| label == &policy.handoff_label)
    {
        return Err(NoLogComment::HandedOff(pull.number));
    }
    Ok(ActionGroup {
        subject: session.candidate.clone(),
        candidate: Some(session.candidate.clone()),
        pull_request_check: Some(PullRequestCheck::open_by_the_bot(policy, pull.number)),
        destructive: false,
        ledger_expectation: LedgerExpectation::Nothing,
        independent: false,
        actions: vec![Action::PostMarkedComment {
            pull_request: pull.number,
            comment: MarkedComment::SessionLog,
            marker: log_marker(&session.candidate),
            body: render_log(session),
        }],
    })
}

fn shown_time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ledger::{Attempt, Ledger};
    use crate::core::test_support::at;

    fn session_with_attempt(run: u64) -> Session {
        let mut ledger = Ledger::empty();
        ledger
            .claim_family("a", "f", run, at("2026-12-01T08:00:00Z"))
            .unwrap();
        let mut session = ledger.sessions.remove(0);
        session.attempts.push(Attempt {
            number: 1,
            run,
            adopted_at: at("2026-12-01T08:00:00Z"),
            deadline: at("2026-12-01T13:30:00Z"),
            ended_at: None,
            end: None,
            runs: Vec::new(),
            notes: Vec::new(),
            notes_folded: 0,
            agent: None,
        });
        session
    }

    #[test]
    fn an_entry_is_dated_bounded_and_goes_to_the_runs_attempt() {
        let mut session = session_with_attempt(7);
        let now = at("2026-12-01T09:00:00Z");
        let added = add_note(&mut session, 7, "  smoke passed\n", now).unwrap();
        assert_eq!((added.attempt, added.cut, added.folded), (1, 0, 0));
        assert_eq!(session.attempts[0].notes[0].text, "smoke passed");
        let long = "x".repeat(NOTE_LIMIT + 100);
        let added = add_note(&mut session, 7, &long, now).unwrap();
        assert_eq!(added.cut, 140);
        assert!(session.attempts[0].notes[1].text.chars().count() <= NOTE_LIMIT);
        assert_eq!(
            add_note(&mut session, 8, "x", now),
            Err(NoteRefusal::NoAttemptOfRun { run: 8 })
        );
        assert_eq!(
            add_note(&mut session, 7, " \u{7}\n", now),
            Err(NoteRefusal::Empty)
        );
    }

    #[test]
    fn the_log_stays_under_the_comment_limit_by_folding_the_oldest() {
        let mut session = session_with_attempt(7);
        let now = at("2026-12-01T09:00:00Z");
        for index in 0..40 {
            add_note(
                &mut session,
                7,
                &format!("{index} {}", "y".repeat(3_900)),
                now,
            )
            .unwrap();
        }
        let body = render_log(&session);
        assert!(body.chars().count() <= COMMENT_LIMIT);
        let attempt = &session.attempts[0];
        assert!(attempt.notes_folded > 0);
        assert_eq!(attempt.notes_folded as usize + attempt.notes.len(), 40);
        assert!(attempt.notes.last().unwrap().text.starts_with("39 "));
        assert!(body.contains(&format!("{} earlier entries folded", attempt.notes_folded)));
    }

    #[test]
    fn entry_text_cannot_forge_the_marker() {
        let mut session = session_with_attempt(7);
        let now = at("2026-12-01T09:00:00Z");
        add_note(&mut session, 7, &log_marker("a"), now).unwrap();
        let body = render_log(&session);
        assert_eq!(body.matches(&log_marker("a")).count(), 1);
        assert!(body.starts_with(&log_marker("a")));
    }
}
