//! The day's requests as tables: per hour of the simulated day (reads, writes, each token's),
//! per mode (invocations, requests, per invocation) and per token (the day, the peak hour, the
//! mean hour against the target), klaud's steps apart from the simulated agent's requests.

use std::collections::BTreeMap;

use super::aftercare::{Figures, Tally};
use super::steps::{StepRecord, Token};

/// The requests that make the workflow token's (and every token's) peak hour acceptable: a
/// quarter of the workflow token's 1,000 requests per hour per repository.
pub const PEAK_HOUR_TARGET: usize = 250;

/// How the agent's requests are counted apart.
const AGENT: &str = "the simulated agent";

/// How an after-care session's steps are named.
pub const AFTERCARE_STEPS: &str = "(after-care)";

#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    reads: usize,
    writes: usize,
}

impl Counts {
    fn total(self) -> usize {
        self.reads + self.writes
    }

    fn add(&mut self, write: bool) {
        if write {
            self.writes += 1;
        } else {
            self.reads += 1;
        }
    }
}

/// One hour of the day: klaud's requests, each token's, and the agent's.
#[derive(Debug, Clone, Default)]
struct Hour {
    klaud: Counts,
    by_token: BTreeMap<Token, Counts>,
    agent: Counts,
}

/// The peak hour and the mean of a figure over the 24 hours.
fn peak_and_mean(hours: &[Hour], figure: impl Fn(&Hour) -> usize) -> (usize, usize, f64) {
    let (peak_hour, peak) = hours
        .iter()
        .enumerate()
        .map(|(hour, counts)| (hour, figure(counts)))
        .max_by_key(|&(hour, value)| (value, std::cmp::Reverse(hour)))
        .unwrap_or((0, 0));
    let mean = hours.iter().map(&figure).sum::<usize>() as f64 / hours.len() as f64;
    (peak_hour, peak, mean)
}

/// Prints the day's tables for `scenario`; returns each token's peak hour.
pub fn print(scenario: &str, records: &[StepRecord]) -> BTreeMap<Token, usize> {
    let mut hours = vec![Hour::default(); 24];
    let mut modes: BTreeMap<&str, (usize, Counts)> = BTreeMap::new();
    for record in records {
        let hour = &mut hours[(record.minute / 60) as usize];
        let mode = modes.entry(record.kind).or_default();
        mode.0 += 1;
        for request in &record.requests {
            mode.1.add(request.write);
            if record.kind == AGENT {
                hour.agent.add(request.write);
                continue;
            }
            hour.klaud.add(request.write);
            if let Some(token) = request.token {
                hour.by_token.entry(token).or_default().add(request.write);
            } else {
                panic!(
                    "a request of {} with a token the fake does not know",
                    record.kind
                );
            }
        }
    }
    let token_total =
        |hour: &Hour, token: Token| hour.by_token.get(&token).map_or(0, |c| c.total());

    println!("\n## {scenario}: requests per hour of the simulated day (klaud's steps)\n");
    println!(
        "| hour | reads | writes | total | bot token | workflow token | the simulated agent |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (index, hour) in hours.iter().enumerate() {
        println!(
            "| {index:02}:00 | {} | {} | {} | {} | {} | {} |",
            hour.klaud.reads,
            hour.klaud.writes,
            hour.klaud.total(),
            token_total(hour, Token::Bot),
            token_total(hour, Token::Workflow),
            hour.agent.total(),
        );
    }
    let (peak_hour, peak, mean) = peak_and_mean(&hours, |hour| hour.klaud.total());
    let (_, peak_reads, mean_reads) = peak_and_mean(&hours, |hour| hour.klaud.reads);
    let (_, peak_writes, mean_writes) = peak_and_mean(&hours, |hour| hour.klaud.writes);
    println!(
        "\n{scenario}: peak hour {peak_hour:02}:00 with {peak} requests ({} reads, {} writes); \
         mean {mean:.1} per hour ({mean_reads:.1} reads, {mean_writes:.1} writes); the most \
         reads in an hour {peak_reads}, the most writes {peak_writes}",
        hours[peak_hour].klaud.reads, hours[peak_hour].klaud.writes,
    );

    println!("\n## {scenario}: per mode\n");
    println!("| step | invocations | reads | writes | total | per invocation |");
    println!("|---|---|---|---|---|---|");
    let mut day = Counts::default();
    let mut invocations = 0;
    for (kind, (count, counts)) in &modes {
        if *kind == AGENT {
            continue;
        }
        day.reads += counts.reads;
        day.writes += counts.writes;
        invocations += count;
        println!(
            "| {kind} | {count} | {} | {} | {} | {:.1} |",
            counts.reads,
            counts.writes,
            counts.total(),
            counts.total() as f64 / *count as f64
        );
    }
    println!(
        "| all of klaud's steps | {invocations} | {} | {} | {} | {:.1} |",
        day.reads,
        day.writes,
        day.total(),
        day.total() as f64 / invocations.max(1) as f64
    );
    if let Some((count, counts)) = modes.get(AGENT) {
        println!(
            "| ({AGENT}: drafts opened, not klaud's) | {count} | {} | {} | {} | {:.1} |",
            counts.reads,
            counts.writes,
            counts.total(),
            counts.total() as f64 / *count as f64
        );
    }

    println!("\n## {scenario}: per token (klaud's steps)\n");
    println!("| token | requests in the day | peak hour | mean hour | peak ≤ {PEAK_HOUR_TARGET} |");
    println!("|---|---|---|---|---|");
    let mut peaks = BTreeMap::new();
    for token in [Token::Bot, Token::Workflow] {
        let (peak_hour, peak, mean) = peak_and_mean(&hours, |hour| token_total(hour, token));
        let day: usize = hours.iter().map(|hour| token_total(hour, token)).sum();
        println!(
            "| {} | {day} | {peak} ({peak_hour:02}:00) | {mean:.1} | {} |",
            token.name(),
            if peak <= PEAK_HOUR_TARGET {
                "met"
            } else {
                "not met"
            }
        );
        peaks.insert(token, peak);
    }
    peaks
}

/// Prints the day's after-care: the troubles, the sessions started by kind with their outcomes,
/// their agent cost and their steps' requests beside the day's other sessions, what was
/// superseded and what waits for a maintainer.
pub fn aftercare(scenario: &str, tally: &Tally, figures: &Figures, records: &[StepRecord]) {
    println!("\n## {scenario}: after-care\n");
    for trouble in &tally.troubles {
        println!("- {trouble}");
    }
    if let Some((candidate, number)) = &tally.seeded {
        println!("- seeded: #{number} ({candidate}), an older validated pull request of a family");
    }
    let mut requests: BTreeMap<&str, Counts> = BTreeMap::new();
    for record in records {
        let group = if record.kind.ends_with(AFTERCARE_STEPS) {
            "after-care"
        } else if record.kind == AGENT {
            continue;
        } else {
            "other"
        };
        for request in &record.requests {
            requests.entry(group).or_default().add(request.write);
        }
    }
    println!(
        "\n| session kind | started by recover | sessions played | outcomes | agent cost recorded |"
    );
    println!("|---|---|---|---|---|");
    for (kind, kind_figures) in &figures.kinds {
        let outcomes: Vec<String> = kind_figures
            .outcomes
            .iter()
            .map(|(outcome, count)| format!("{count} {outcome}"))
            .collect();
        println!(
            "| {kind} | {} | {} | {} | ${:.2} |",
            if kind.is_aftercare() {
                kind_figures.started.to_string()
            } else {
                "-".into()
            },
            kind_figures.sessions,
            outcomes.join(", "),
            kind_figures.cost_usd
        );
    }
    let aftercare = requests.get("after-care").copied().unwrap_or_default();
    let other = requests.get("other").copied().unwrap_or_default();
    println!(
        "\n{scenario}: the after-care sessions' steps (session, notes, check-stops, finish) sent {} \
         requests ({} reads, {} writes), {:.1}% of klaud's {} in the day",
        aftercare.total(),
        aftercare.reads,
        aftercare.writes,
        100.0 * aftercare.total() as f64 / (aftercare.total() + other.total()).max(1) as f64,
        aftercare.total() + other.total()
    );
    println!(
        "{scenario}: repair sessions were given {} failed job(s), {} with the end of its log",
        tally.evidence, tally.log_tails
    );
    println!(
        "{scenario}: superseded by finish: {:?}; closed as superseded by recover: {}",
        tally.superseded_by_finish, tally.closed_by_recover
    );
    println!(
        "{scenario}: waiting for a maintainer at the end of the day: {:?}; watched: {}",
        figures.needs_maintainer, figures.watched
    );
    for (why, passes) in &tally.not_started {
        println!("{scenario}: a session due and not started in {passes} pass(es): {why}");
    }
}
