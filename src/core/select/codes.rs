//! select's public codes (contract §3a): what became of a candidate (`selected` or the code of
//! the reason it was not), why the whole selection was deferred, and a reason's code and
//! message. Each code has one spelling, used in `selection.json`, `candidate.json`, the log and
//! the summary alike.

use std::fmt;

use serde::{Serialize, Serializer};

use super::baselines::BaselineCode;
use crate::core::text::bounded;

/// What happened to one candidate: `selected`, or the public code of the reason it was not
/// (contract §3a). [`Decision::code`] is the one spelling of each: `selection.json`,
/// `candidate.json`, the log, the summary and the table of `docs/modes/select.md` all use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Decision {
    Selected,
    /// The whole selection was deferred: the review is invalid.
    InvalidReviewOutput,
    /// The whole selection was deferred: a listing could not be read to its end.
    ListingIncomplete,
    /// The whole selection was deferred: the dashboard's pause is ticked.
    Paused,
    /// The whole selection was deferred: the agent runs of the last 24 hours used up the daily
    /// budget.
    BudgetExhausted,
    ReviewDuplicate,
    ReviewUncertain,
    Occupied,
    CoolingDown,
    BaselineDeferred,
    NoCapacity,
    CapacityUnavailable,
    OverCap,
    ClaimLost,
}

impl Decision {
    pub const ALL: [Decision; 14] = [
        Decision::Selected,
        Decision::InvalidReviewOutput,
        Decision::ListingIncomplete,
        Decision::Paused,
        Decision::BudgetExhausted,
        Decision::ReviewDuplicate,
        Decision::ReviewUncertain,
        Decision::Occupied,
        Decision::CoolingDown,
        Decision::BaselineDeferred,
        Decision::NoCapacity,
        Decision::CapacityUnavailable,
        Decision::OverCap,
        Decision::ClaimLost,
    ];

    pub fn code(self) -> &'static str {
        match self {
            Decision::Selected => "selected",
            Decision::InvalidReviewOutput => "invalid-review-output",
            Decision::ListingIncomplete => "listing-incomplete",
            Decision::Paused => "paused",
            Decision::BudgetExhausted => "budget-exhausted",
            Decision::ReviewDuplicate => "review-duplicate",
            Decision::ReviewUncertain => "review-uncertain",
            Decision::Occupied => "occupied",
            Decision::CoolingDown => "cooling-down",
            Decision::BaselineDeferred => "baseline-deferred",
            Decision::NoCapacity => "no-capacity",
            Decision::CapacityUnavailable => "capacity-unavailable",
            Decision::OverCap => "over-cap",
            Decision::ClaimLost => "claim-lost",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.code())
    }
}

impl Serialize for Decision {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}

/// Why the whole selection was deferred (`deferred-reason` of `selection.json`): one of the
/// decisions, spelled as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectionDeferral {
    InvalidReviewOutput,
    ListingIncomplete,
    Paused,
    BudgetExhausted,
    CapacityUnavailable,
}

impl SelectionDeferral {
    pub fn code(self) -> &'static str {
        self.decision().code()
    }

    /// The decision every affected candidate gets.
    pub fn decision(self) -> Decision {
        match self {
            SelectionDeferral::InvalidReviewOutput => Decision::InvalidReviewOutput,
            SelectionDeferral::ListingIncomplete => Decision::ListingIncomplete,
            SelectionDeferral::Paused => Decision::Paused,
            SelectionDeferral::BudgetExhausted => Decision::BudgetExhausted,
            SelectionDeferral::CapacityUnavailable => Decision::CapacityUnavailable,
        }
    }
}

impl fmt::Display for SelectionDeferral {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.code())
    }
}

impl Serialize for SelectionDeferral {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}

/// The code of a [`Reason`]: the decision it explains, or for `baseline-deferred` the
/// verification's code. Serialized as its code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReasonCode {
    Decision(Decision),
    Baseline(BaselineCode),
}

impl ReasonCode {
    pub fn code(&self) -> &str {
        match self {
            ReasonCode::Decision(decision) => decision.code(),
            ReasonCode::Baseline(baseline) => baseline.code(),
        }
    }
}

impl From<Decision> for ReasonCode {
    fn from(decision: Decision) -> Self {
        ReasonCode::Decision(decision)
    }
}

impl From<BaselineCode> for ReasonCode {
    fn from(baseline: BaselineCode) -> Self {
        ReasonCode::Baseline(baseline)
    }
}

impl fmt::Display for ReasonCode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.code())
    }
}

impl Serialize for ReasonCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}

/// A stable code and a sanitized message of at most a few hundred characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub code: ReasonCode,
    pub message: String,
}

impl Reason {
    pub fn new(code: impl Into<ReasonCode>, message: impl AsRef<str>) -> Self {
        Reason {
            code: code.into(),
            message: bounded(message.as_ref(), 300),
        }
    }
}
