//! Baseline verification decisions (contract §3.2, §6, §7), all pure:
//!
//! - [`invocation`]: which producer runs a pass makes (one per head and argument template, config
//!   keys batched), how a batched output is split back per candidate, when to rerun without the
//!   no-evals flag, and how producer stdout is read;
//! - [`matching`]: the projection of published rows and producer entries onto one workload
//!   identity, and the per-candidate verdict;
//! - [`resolve`]: the baselines of discovered candidates, looked up in the public feeds (contract
//!   §11): which candidates the review lets through, which published rows are the family's, each
//!   row's producer run and head, and the producer's arguments at that head;
//! - this module: the stable deferral codes and their sanitized messages.

pub mod invocation;
pub mod matching;
pub mod resolve;

use serde::Serialize;

use crate::core::text::bounded;

/// Longest free-text detail a deferral message carries (contract §7).
pub const DETAIL_LIMIT: usize = 300;

/// Why a candidate's baseline was not verified. The kebab-case names are public and stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeferralCode {
    /// The candidate carries no baseline.
    NoBaseline,
    /// The producer head is not a commit of the repository at `repo-path`.
    ProducerHeadMissing,
    /// `git worktree add` of the producer head failed.
    CheckoutFailed,
    /// None of `producer.entrypoints` exists at the producer head.
    NoEntrypoint,
    /// The producer could not be started, or exited non-zero for another reason than rejecting
    /// the no-evals flag (or also after the rerun without it).
    ProducerFailed,
    /// The producer ran past `producer.timeout-seconds` and was killed.
    ProducerTimeout,
    /// The producer's stdout is not a JSON array of matrix entries (or exceeds the size bound).
    ProducerOutputInvalid,
    /// A published point lacks a field the matching needs.
    InvalidBaselinePoint,
    /// No published point matches a producer entry.
    UnmatchedBaseline,
    /// A published point matches more than one producer entry.
    AmbiguousBaseline,
    /// A published point matches a producer entry in everything but its image.
    ImageMismatch,
    /// The review did not let the candidate proceed (its own decision, or another candidate's of
    /// its family, is `duplicate` or `uncertain`).
    NotProceeding,
    /// The review is invalid, so no candidate is verified (select's `invalid-review-output`).
    InvalidReviewOutput,
    /// A discovered candidate without a review decision naming its display model, and
    /// `discovery.models` names none for its model prefix.
    NoDisplayModel,
    /// A public feed (benchmarks, workflow-info) could not be read.
    FeedFailed,
    /// No published row of the source's date belongs to the candidate's family.
    NoPublishedBaseline,
    /// A published row's producer run is not one run of this repository with exactly one head.
    UnprovenBaseline,
    /// The published rows come from more than one producer head.
    ProducerHeadsDiffer,
    /// The producer head holds no runners file, or no master config, where the layout expects.
    ProducerConfigsMissing,
}

impl DeferralCode {
    /// Every code, in the order reports list them.
    pub const ALL: [DeferralCode; 19] = [
        DeferralCode::NoBaseline,
        DeferralCode::ProducerHeadMissing,
        DeferralCode::CheckoutFailed,
        DeferralCode::NoEntrypoint,
        DeferralCode::ProducerFailed,
        DeferralCode::ProducerTimeout,
        DeferralCode::ProducerOutputInvalid,
        DeferralCode::InvalidBaselinePoint,
        DeferralCode::UnmatchedBaseline,
        DeferralCode::AmbiguousBaseline,
        DeferralCode::ImageMismatch,
        DeferralCode::NotProceeding,
        DeferralCode::InvalidReviewOutput,
        DeferralCode::NoDisplayModel,
        DeferralCode::FeedFailed,
        DeferralCode::NoPublishedBaseline,
        DeferralCode::UnprovenBaseline,
        DeferralCode::ProducerHeadsDiffer,
        DeferralCode::ProducerConfigsMissing,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DeferralCode::NoBaseline => "no-baseline",
            DeferralCode::ProducerHeadMissing => "producer-head-missing",
            DeferralCode::CheckoutFailed => "checkout-failed",
            DeferralCode::NoEntrypoint => "no-entrypoint",
            DeferralCode::ProducerFailed => "producer-failed",
            DeferralCode::ProducerTimeout => "producer-timeout",
            DeferralCode::ProducerOutputInvalid => "producer-output-invalid",
            DeferralCode::InvalidBaselinePoint => "invalid-baseline-point",
            DeferralCode::UnmatchedBaseline => "unmatched-baseline",
            DeferralCode::AmbiguousBaseline => "ambiguous-baseline",
            DeferralCode::ImageMismatch => "image-mismatch",
            DeferralCode::NotProceeding => "not-proceeding",
            DeferralCode::InvalidReviewOutput => "invalid-review-output",
            DeferralCode::NoDisplayModel => "no-display-model",
            DeferralCode::FeedFailed => "feed-failed",
            DeferralCode::NoPublishedBaseline => "no-published-baseline",
            DeferralCode::UnprovenBaseline => "unproven-baseline",
            DeferralCode::ProducerHeadsDiffer => "producer-heads-differ",
            DeferralCode::ProducerConfigsMissing => "producer-configs-missing",
        }
    }

    /// The fixed public message of a verification outcome, or the kind of a failure.
    pub fn fixed_message(self) -> &'static str {
        match self {
            DeferralCode::NoBaseline => "the candidate carries no baseline to verify",
            DeferralCode::ProducerHeadMissing => {
                "the producer head is not a commit of the repository at repo-path (a shallow checkout lacks it)"
            }
            DeferralCode::CheckoutFailed => "the producer head could not be checked out",
            DeferralCode::NoEntrypoint => {
                "none of producer.entrypoints exists at the producer head"
            }
            DeferralCode::ProducerFailed => "the producer failed",
            DeferralCode::ProducerTimeout => "the producer did not finish in time",
            DeferralCode::ProducerOutputInvalid => {
                "the producer output is not a JSON array of matrix entries"
            }
            DeferralCode::InvalidBaselinePoint => {
                "a published point lacks a field the matching needs"
            }
            DeferralCode::UnmatchedBaseline => {
                "no published point matches an entry of the producer output"
            }
            DeferralCode::AmbiguousBaseline => {
                "a published point matches more than one entry of the producer output"
            }
            DeferralCode::ImageMismatch => {
                "a published point matches a producer entry except for its image"
            }
            DeferralCode::NotProceeding => "the review did not let the candidate proceed",
            DeferralCode::InvalidReviewOutput => "the review is invalid, so nothing is verified",
            DeferralCode::NoDisplayModel => {
                "no display model to look the published baseline up with (review baseline-model or discovery.models)"
            }
            DeferralCode::FeedFailed => "a public feed could not be read",
            DeferralCode::NoPublishedBaseline => {
                "no published row of the source's date belongs to the candidate's family"
            }
            DeferralCode::UnprovenBaseline => {
                "a published row's producer run is not one run of this repository with one head"
            }
            DeferralCode::ProducerHeadsDiffer => {
                "the published rows come from more than one producer head"
            }
            DeferralCode::ProducerConfigsMissing => {
                "the producer head holds no runners file or master config where expected"
            }
        }
    }
}

impl std::fmt::Display for DeferralCode {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A deferral as `baselines.json` records it: `{"code", "message"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Deferral {
    pub code: DeferralCode,
    pub message: String,
}

impl Deferral {
    /// The code with its fixed message.
    pub fn fixed(code: DeferralCode) -> Self {
        Deferral {
            code,
            message: code.fixed_message().to_string(),
        }
    }

    /// The code with a detail klaud wrote itself (never child output), cut to
    /// [`DETAIL_LIMIT`] characters.
    pub fn with_detail(code: DeferralCode, detail: &str) -> Self {
        Deferral {
            code,
            message: bounded(detail, DETAIL_LIMIT),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_serializes_as_its_public_name() {
        for code in DeferralCode::ALL {
            assert_eq!(
                serde_json::to_value(code).unwrap(),
                serde_json::Value::String(code.as_str().to_string())
            );
        }
    }

    #[test]
    fn details_are_cut_to_the_contract_limit() {
        let deferral = Deferral::with_detail(DeferralCode::ProducerOutputInvalid, &"x".repeat(500));
        assert_eq!(deferral.message.chars().count(), DETAIL_LIMIT + 1);
        assert!(deferral.message.ends_with('…'));
    }
}
