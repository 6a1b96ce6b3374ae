//! The functional core: pure decisions from plain data. No IO, no clock, no environment, no
//! async: what a mode needs (including "now") is passed in.

pub mod install;
pub mod outcome;
