//! The functional core: pure decisions from plain data. No IO, no clock, no environment, no
//! async: what a mode needs (including "now") is passed in.

pub mod aftercare;
pub mod baseline;
pub mod candidate;
pub mod cooldown;
pub mod cost;
pub mod dashboard;
pub mod discovery;
pub mod execution;
pub mod finish;
pub mod finish_issue;
pub mod finish_supersede;
pub mod github_state;
pub mod health;
pub mod install;
pub mod ledger;
pub mod outcome;
pub mod outcome_file;
pub mod ownership;
pub mod plan;
pub mod policy;
pub mod prepare_review;
pub mod recover;
pub mod review;
pub mod select;
pub mod session;
pub mod snapshot;
pub mod status;
pub mod steering;
pub mod text;
pub mod wake;

/// What the unit tests of the core share.
#[cfg(test)]
pub(crate) mod test_support {
    use chrono::{DateTime, Utc};

    /// An RFC 3339 time as UTC.
    pub(crate) fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .expect("an RFC 3339 time")
            .with_timezone(&Utc)
    }
}
