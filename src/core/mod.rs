//! The functional core: pure decisions from plain data. No IO, no clock, no environment, no
//! async: what a mode needs (including "now") is passed in.

pub mod baseline;
pub mod candidate;
pub mod cost;
pub mod execution;
pub mod finish;
pub mod github_state;
pub mod install;
pub mod ledger;
pub mod outcome;
pub mod outcome_file;
pub mod ownership;
pub mod plan;
pub mod policy;
pub mod prepare_review;
pub mod recover;
pub mod select;
pub mod session;
pub mod snapshot;
pub mod status;
pub mod text;
pub mod wake;
