//! Session outcomes (contract §4): their public names, the legacy names read back under them, the
//! cooldown each one earns by default, and the status label each one shows.
//!
//! This is the single table every mode consults; nothing else maps outcome names.

use std::fmt;
use std::str::FromStr;

/// How a session ended. The `Display` form is the public name written to files and the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    Validated,
    NoCapacity,
    MissingAssets,
    WeightsMissing,
    Incompatible,
    Inconclusive,
    Failed,
    NoOutcome,
    ClosedByMaintainer,
    Handoff,
    Duplicate,
    Retired,
    AlreadyUpdated,
}

/// The cooldown an outcome earns unless the configuration overrides it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultCooldown {
    /// Retried on the next wave.
    None,
    /// The configured default (`cooldown-days`).
    ConfiguredDefault,
    /// A fixed number of days for the candidate.
    Days(f64),
    /// A fixed number of days for every candidate of the family.
    FamilyDays(f64),
    /// Not selectable while its pull request stays open.
    WhilePullRequestOpen,
}

/// Which display-only status label a pull request carries for an outcome or state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StatusLabel {
    InProgress,
    Parked,
    Finished,
    Infra,
    Incompatible,
    Error,
    Retired,
    /// An after-care pull request that waits for a maintainer (contract §12).
    NeedsMaintainer,
}

/// What cleanup does with the candidate branch after the session ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchOnCleanup {
    /// Kept, and the pull request is marked ready for review.
    KeptReady,
    /// Deleted when it is the bot's and unmoved.
    Deleted,
    /// Left exactly as the maintainer left it.
    LeftAsIs,
}

impl Outcome {
    /// Every outcome, in the order of the contract's table.
    pub const ALL: [Outcome; 13] = [
        Outcome::Validated,
        Outcome::NoCapacity,
        Outcome::MissingAssets,
        Outcome::WeightsMissing,
        Outcome::Incompatible,
        Outcome::Inconclusive,
        Outcome::Failed,
        Outcome::NoOutcome,
        Outcome::ClosedByMaintainer,
        Outcome::Handoff,
        Outcome::Duplicate,
        Outcome::Retired,
        Outcome::AlreadyUpdated,
    ];

    /// The public name.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Validated => "validated",
            Outcome::NoCapacity => "no-capacity",
            Outcome::MissingAssets => "missing-assets",
            Outcome::WeightsMissing => "weights-missing",
            Outcome::Incompatible => "incompatible",
            Outcome::Inconclusive => "inconclusive",
            Outcome::Failed => "failed",
            Outcome::NoOutcome => "no-outcome",
            Outcome::ClosedByMaintainer => "closed-by-maintainer",
            Outcome::Handoff => "handoff",
            Outcome::Duplicate => "duplicate",
            Outcome::Retired => "retired",
            Outcome::AlreadyUpdated => "already-updated",
        }
    }

    /// What the outcome means, for the agent (the outcome schema, the session context) and
    /// readers of the receipt.
    pub fn meaning(self) -> &'static str {
        match self {
            Outcome::Validated => {
                "the change works: a sweep run succeeded on the pull request's exact head"
            }
            Outcome::NoCapacity => {
                "no runner or hardware was available to test it; retried next wave"
            }
            Outcome::MissingAssets => "assets the runs need (images, datasets) are not available",
            Outcome::WeightsMissing => "the model weights are not available",
            Outcome::Incompatible => "the configuration cannot work with this candidate",
            Outcome::Inconclusive => "the runs finished but do not say whether the change works",
            Outcome::Failed => "the change does not work: smoke or sweep runs failed",
            Outcome::NoOutcome => "the session ended without deciding",
            Outcome::ClosedByMaintainer => "a maintainer closed the pull request",
            Outcome::Handoff => "a maintainer took the pull request over",
            Outcome::Duplicate => "another pull request already makes this change",
            Outcome::Retired => "the candidate is no longer wanted",
            Outcome::AlreadyUpdated => "the published configuration already has this change",
        }
    }

    /// Names written by the reference implementation that are read back as this outcome.
    pub fn legacy_names(self) -> &'static [&'static str] {
        match self {
            Outcome::NoCapacity => &["capacity-deferred"],
            Outcome::MissingAssets => &["readiness-blocked"],
            Outcome::Inconclusive => &["uncertain"],
            Outcome::NoOutcome => &["unexpected-error"],
            Outcome::ClosedByMaintainer => &["aborted"],
            _ => &[],
        }
    }

    /// Reads a public or legacy name. Reading is idempotent: `parse(o.name()) == o`.
    pub fn parse(name: &str) -> Option<Outcome> {
        Outcome::ALL
            .into_iter()
            .find(|outcome| outcome.name() == name || outcome.legacy_names().contains(&name))
    }

    pub fn default_cooldown(self) -> DefaultCooldown {
        match self {
            Outcome::NoCapacity => DefaultCooldown::None,
            Outcome::MissingAssets | Outcome::WeightsMissing => DefaultCooldown::Days(7.0),
            Outcome::ClosedByMaintainer => DefaultCooldown::FamilyDays(7.0),
            Outcome::Handoff => DefaultCooldown::WhilePullRequestOpen,
            Outcome::Validated
            | Outcome::Incompatible
            | Outcome::Inconclusive
            | Outcome::Failed
            | Outcome::NoOutcome
            | Outcome::Duplicate
            | Outcome::Retired
            | Outcome::AlreadyUpdated => DefaultCooldown::ConfiguredDefault,
        }
    }

    /// The status label a finished session's pull request shows, if any.
    pub fn status_label(self) -> Option<StatusLabel> {
        match self {
            Outcome::Validated => Some(StatusLabel::Finished),
            Outcome::NoCapacity | Outcome::MissingAssets | Outcome::WeightsMissing => {
                Some(StatusLabel::Infra)
            }
            Outcome::Incompatible => Some(StatusLabel::Incompatible),
            Outcome::Inconclusive | Outcome::Failed | Outcome::NoOutcome => {
                Some(StatusLabel::Error)
            }
            Outcome::Duplicate | Outcome::Retired | Outcome::AlreadyUpdated => {
                Some(StatusLabel::Retired)
            }
            Outcome::ClosedByMaintainer | Outcome::Handoff => None,
        }
    }

    pub fn branch_on_cleanup(self) -> BranchOnCleanup {
        match self {
            Outcome::Validated => BranchOnCleanup::KeptReady,
            Outcome::ClosedByMaintainer | Outcome::Handoff => BranchOnCleanup::LeftAsIs,
            _ => BranchOnCleanup::Deleted,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// The error of reading an unknown outcome name; it lists the accepted names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown outcome '{name}'; outcomes: {}", Outcome::ALL.map(Outcome::name).join(", "))]
pub struct UnknownOutcome {
    pub name: String,
}

impl FromStr for Outcome {
    type Err = UnknownOutcome;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Outcome::parse(name).ok_or_else(|| UnknownOutcome {
            name: name.to_string(),
        })
    }
}

impl StatusLabel {
    pub const ALL: [StatusLabel; 8] = [
        StatusLabel::InProgress,
        StatusLabel::Parked,
        StatusLabel::Finished,
        StatusLabel::Infra,
        StatusLabel::Incompatible,
        StatusLabel::Error,
        StatusLabel::Retired,
        StatusLabel::NeedsMaintainer,
    ];

    /// The key naming this label in the configuration's `labels.status` map.
    pub fn key(self) -> &'static str {
        match self {
            StatusLabel::InProgress => "in-progress",
            StatusLabel::Parked => "parked",
            StatusLabel::Finished => "finished",
            StatusLabel::Infra => "infra",
            StatusLabel::Incompatible => "incompatible",
            StatusLabel::Error => "error",
            StatusLabel::Retired => "retired",
            StatusLabel::NeedsMaintainer => "needs-maintainer",
        }
    }

    /// The InferenceX label name.
    pub fn default_name(self) -> &'static str {
        match self {
            StatusLabel::InProgress => "klaud-in-progress",
            StatusLabel::Parked => "klaud-parked",
            StatusLabel::Finished => "klaud-finished",
            StatusLabel::Infra => "klaud-infra",
            StatusLabel::Incompatible => "klaud-incompatible",
            StatusLabel::Error => "klaud-error",
            StatusLabel::Retired => "klaud-retired",
            StatusLabel::NeedsMaintainer => "klaud-needs-maintainer",
        }
    }
}

impl serde::Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Reads public and legacy names, so documents written by the reference implementation load.
impl<'de> serde::Deserialize<'de> for Outcome {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Outcome::parse(&name).ok_or_else(|| serde::de::Error::custom(UnknownOutcome { name }))
    }
}

impl schemars::JsonSchema for Outcome {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Outcome".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Outcome::ALL
            .iter()
            .flat_map(|o| std::iter::once(o.name()).chain(o.legacy_names().iter().copied()))
            .collect();
        schemars::json_schema!({
            "description": "An outcome name; legacy names are read back as their new names.",
            "type": "string",
            "enum": names,
        })
    }
}

#[cfg(test)]
mod properties;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_public_name_reads_back_as_itself() {
        for outcome in Outcome::ALL {
            assert_eq!(Outcome::parse(outcome.name()), Some(outcome));
            assert_eq!(outcome.to_string().parse::<Outcome>(), Ok(outcome));
        }
    }

    #[test]
    fn legacy_names_read_back_under_their_new_names() {
        let table = [
            ("capacity-deferred", Outcome::NoCapacity),
            ("readiness-blocked", Outcome::MissingAssets),
            ("uncertain", Outcome::Inconclusive),
            ("unexpected-error", Outcome::NoOutcome),
            ("aborted", Outcome::ClosedByMaintainer),
        ];
        for (legacy, outcome) in table {
            assert_eq!(Outcome::parse(legacy), Some(outcome), "{legacy}");
        }
    }

    #[test]
    fn no_name_is_claimed_by_two_outcomes() {
        let mut names: Vec<&str> = Outcome::ALL
            .iter()
            .flat_map(|o| std::iter::once(o.name()).chain(o.legacy_names().iter().copied()))
            .collect();
        let total = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), total);
    }

    #[test]
    fn an_unknown_name_is_an_error_listing_the_outcomes() {
        let error = "succeeded".parse::<Outcome>().unwrap_err();
        assert!(error.to_string().contains("unknown outcome 'succeeded'"));
        assert!(error.to_string().contains("closed-by-maintainer"));
    }

    #[test]
    fn outcomes_serialize_by_name_and_read_legacy_names() {
        assert_eq!(
            serde_json::to_string(&Outcome::NoCapacity).unwrap(),
            "\"no-capacity\""
        );
        let read: Outcome = serde_json::from_str("\"capacity-deferred\"").unwrap();
        assert_eq!(read, Outcome::NoCapacity);
        assert!(serde_json::from_str::<Outcome>("\"bogus\"").is_err());
    }

    #[test]
    fn contract_cooldowns_and_labels() {
        assert_eq!(
            Outcome::NoCapacity.default_cooldown(),
            DefaultCooldown::None
        );
        assert_eq!(
            Outcome::WeightsMissing.default_cooldown(),
            DefaultCooldown::Days(7.0)
        );
        assert_eq!(
            Outcome::ClosedByMaintainer.default_cooldown(),
            DefaultCooldown::FamilyDays(7.0)
        );
        assert_eq!(Outcome::ClosedByMaintainer.status_label(), None);
        assert_eq!(
            Outcome::Validated.status_label(),
            Some(StatusLabel::Finished)
        );
        assert_eq!(
            Outcome::ClosedByMaintainer.branch_on_cleanup(),
            BranchOnCleanup::LeftAsIs
        );
    }
}
