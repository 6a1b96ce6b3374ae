//! Seeded fault injection and GitHub's primary rate limit.
//!
//! A random fault is decided by hashing the seed with the request's method, path and query and
//! with how many times that same request was seen before, so a seed replays the same faults for
//! the same sequence of requests even when unrelated requests interleave differently. Rules
//! ("fail the Nth request matching this method and path pattern") count matching requests.
//! A fault either replaces the answer before the request is handled or, for writes, after the
//! write took effect (the client sees an error although the change happened).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::prng::{fingerprint, mix};

/// What to inject. All rates are probabilities in `[0, 1]`; everything defaults to off.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultConfig {
    pub seed: u64,
    /// Share of requests answered 502 or 503 before being handled.
    pub server_error_rate: f64,
    /// Share of requests answered with a secondary rate limit before being handled.
    pub secondary_rate_limit_rate: f64,
    /// 403 (GitHub's usual answer) or 429.
    pub secondary_rate_limit_status: u16,
    /// The `Retry-After` of secondary rate limits, in seconds.
    pub retry_after_seconds: u64,
    /// Share of writes (POST/PUT/PATCH/DELETE, GraphQL mutations but not queries) answered 502
    /// after the write was applied.
    pub server_error_after_write_rate: f64,
    /// Latency added to every request, plus up to `latency_jitter_ms` more.
    pub latency_ms: u64,
    pub latency_jitter_ms: u64,
    /// Deterministic faults, checked before the random ones.
    pub rules: Vec<FaultRule>,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            seed: 0,
            server_error_rate: 0.0,
            secondary_rate_limit_rate: 0.0,
            secondary_rate_limit_status: 403,
            retry_after_seconds: 60,
            server_error_after_write_rate: 0.0,
            latency_ms: 0,
            latency_jitter_ms: 0,
            rules: Vec::new(),
        }
    }
}

/// Fail the `nth` (1-based) request matching `method` and `path`, and the `times - 1` matching
/// requests after it, with `status`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRule {
    /// `GET`, `POST`, …; `None` matches every method.
    #[serde(default)]
    pub method: Option<String>,
    /// A pattern over the path without query, where `*` matches any characters (`/` included):
    /// `/repos/*/pulls/*/comments`.
    pub path: String,
    pub nth: u64,
    #[serde(default = "one")]
    pub times: u64,
    pub status: u16,
    #[serde(default)]
    pub timing: FaultTiming,
    /// For 403/429: sent as `Retry-After` and answered as a secondary rate limit.
    #[serde(default)]
    pub retry_after_seconds: Option<u64>,
}

fn one() -> u64 {
    1
}

impl FaultRule {
    /// Fails the `nth` (1-based) `method` request to `path` with `status`, before handling it.
    pub fn nth(method: &str, path: &str, nth: u64, status: u16) -> Self {
        FaultRule {
            method: Some(method.to_string()),
            path: path.to_string(),
            nth,
            times: 1,
            status,
            timing: FaultTiming::BeforeHandling,
            retry_after_seconds: None,
        }
    }

    /// Applies the request, then answers with the fault (a write takes effect unseen).
    pub fn after_handling(mut self) -> Self {
        self.timing = FaultTiming::AfterHandling;
        self
    }

    /// Fails this many matching requests in a row.
    pub fn times(mut self, times: u64) -> Self {
        self.times = times;
        self
    }

    /// Answers as a secondary rate limit with this `Retry-After`.
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after_seconds = Some(seconds);
        self
    }
}

impl FaultConfig {
    /// No random faults, only these rules.
    pub fn rules(rules: Vec<FaultRule>) -> Self {
        FaultConfig {
            rules,
            ..FaultConfig::default()
        }
    }
}

/// When an injected fault replaces the answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultTiming {
    /// The request is not handled at all.
    #[default]
    BeforeHandling,
    /// The request is handled (a write takes effect), then the answer is replaced.
    AfterHandling,
}

/// Why a request got an injected answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    ServerError,
    SecondaryRateLimit,
    PrimaryRateLimit,
    Rule,
}

/// A fault chosen for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedFault {
    pub kind: FaultKind,
    pub status: u16,
    pub retry_after_seconds: Option<u64>,
    pub timing: FaultTiming,
}

/// What happens to one request: its latency and maybe a fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultPlan {
    pub latency_ms: u64,
    pub fault: Option<PlannedFault>,
}

/// The fault configuration with its counters.
#[derive(Debug, Default)]
pub struct FaultEngine {
    pub config: FaultConfig,
    occurrences: HashMap<String, u64>,
    rule_matches: Vec<u64>,
}

impl FaultEngine {
    pub fn new(config: FaultConfig) -> Self {
        let rule_matches = vec![0; config.rules.len()];
        FaultEngine {
            config,
            occurrences: HashMap::new(),
            rule_matches,
        }
    }

    /// Decides the fate of one request (`write`: whether it changes anything, see
    /// [`LoggedRequest::is_write`](super::server::LoggedRequest::is_write)).
    pub fn plan(
        &mut self,
        method: &str,
        path: &str,
        path_and_query: &str,
        write: bool,
    ) -> FaultPlan {
        let request_key = format!("{method} {path_and_query}");
        let occurrence = self.occurrences.entry(request_key.clone()).or_insert(0);
        *occurrence += 1;
        let draw_base = mix(self.config.seed ^ fingerprint(&request_key) ^ mix(*occurrence));
        let mut draws = super::prng::SplitMix64::new(draw_base);
        let latency_ms = self.config.latency_ms
            + match self.config.latency_jitter_ms {
                0 => 0,
                jitter => draws.next_u64() % (jitter + 1),
            };
        if let Some(fault) = self.matching_rule(method, path) {
            return FaultPlan {
                latency_ms,
                fault: Some(fault),
            };
        }
        let roll = draws.next_unit();
        let config = &self.config;
        let fault = if roll < config.server_error_rate {
            Some(PlannedFault {
                kind: FaultKind::ServerError,
                status: if draws.next_u64().is_multiple_of(2) {
                    502
                } else {
                    503
                },
                retry_after_seconds: None,
                timing: FaultTiming::BeforeHandling,
            })
        } else if roll < config.server_error_rate + config.secondary_rate_limit_rate {
            Some(PlannedFault {
                kind: FaultKind::SecondaryRateLimit,
                status: config.secondary_rate_limit_status,
                retry_after_seconds: Some(config.retry_after_seconds),
                timing: FaultTiming::BeforeHandling,
            })
        } else if write && draws.chance(config.server_error_after_write_rate) {
            Some(PlannedFault {
                kind: FaultKind::ServerError,
                status: 502,
                retry_after_seconds: None,
                timing: FaultTiming::AfterHandling,
            })
        } else {
            None
        };
        FaultPlan { latency_ms, fault }
    }

    fn matching_rule(&mut self, method: &str, path: &str) -> Option<PlannedFault> {
        let mut chosen = None;
        for (index, rule) in self.config.rules.iter().enumerate() {
            let method_matches = rule
                .method
                .as_deref()
                .is_none_or(|wanted| wanted.eq_ignore_ascii_case(method));
            if !method_matches || !glob_matches(&rule.path, path) {
                continue;
            }
            self.rule_matches[index] += 1;
            let seen = self.rule_matches[index];
            if chosen.is_none() && seen >= rule.nth && seen < rule.nth.saturating_add(rule.times) {
                chosen = Some(PlannedFault {
                    kind: FaultKind::Rule,
                    status: rule.status,
                    retry_after_seconds: rule.retry_after_seconds,
                    timing: rule.timing,
                });
            }
        }
        chosen
    }
}

pub fn is_write(method: &str) -> bool {
    !matches!(method, "GET" | "HEAD" | "OPTIONS")
}

/// `*` matches any run of characters, everything else itself.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (index, part) in parts.iter().enumerate() {
        if index == 0 {
            let Some(after) = rest.strip_prefix(part) else {
                return false;
            };
            rest = after;
        } else if index == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(position) => rest = &rest[position + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// The body GitHub sends with an injected status.
pub fn fault_body(fault: &PlannedFault) -> serde_json::Value {
    use super::errors::docs;
    let (message, documentation_url) = match (fault.status, fault.retry_after_seconds) {
        (403 | 429, Some(_)) => (
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 0000:0000:0000000:0000000:00000000.",
            docs::SECONDARY_RATE_LIMITS,
        ),
        (500, _) => ("Server Error", docs::REST),
        (502, _) => ("Server Error", docs::REST),
        (503, _) => ("Service Unavailable", docs::REST),
        (504, _) => (
            "We couldn't respond to your request in time. Sorry about that. Please try resubmitting your request and contact us if the problem persists.",
            docs::REST,
        ),
        (401, _) => ("Bad credentials", docs::REST),
        (403, None) => ("Resource not accessible by integration", docs::REST),
        (404, _) => ("Not Found", docs::REST),
        (409, _) => ("Conflict", docs::REST),
        (422, _) => ("Validation Failed", docs::REST),
        _ => ("Injected fault", docs::REST),
    };
    serde_json::json!({
        "message": message,
        "documentation_url": documentation_url,
        "status": fault.status.to_string(),
    })
}

/// The primary rate limit's starting point.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitConfig {
    pub limit: u64,
    /// Requests left before the primary limit answers 403.
    pub remaining: u64,
    /// Seconds from now until the window resets (`x-ratelimit-reset`).
    pub reset_in_seconds: i64,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig {
            limit: 5000,
            remaining: 5000,
            reset_in_seconds: 3600,
        }
    }
}

/// One resource's window (`core` for REST, `graphql`).
#[derive(Clone, Debug)]
pub struct RateWindow {
    pub limit: u64,
    pub used: u64,
    pub reset_epoch: i64,
}

impl RateWindow {
    pub fn new(config: &RateLimitConfig, now_epoch: i64) -> Self {
        RateWindow {
            limit: config.limit,
            used: config.limit.saturating_sub(config.remaining),
            reset_epoch: now_epoch + config.reset_in_seconds,
        }
    }

    pub fn remaining(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }

    /// Counts one request; `false` when the window is exhausted (nothing is counted then).
    pub fn consume(&mut self) -> bool {
        if self.remaining() == 0 {
            return false;
        }
        self.used += 1;
        true
    }
}
