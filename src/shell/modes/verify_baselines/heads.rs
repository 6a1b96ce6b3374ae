//! The producer work of verify-baselines: every distinct head once, concurrently (bounded), each
//! in its own checkout; invocations served from the cache when possible; the no-evals fallback;
//! batched outputs split back per candidate (or rerun one by one when the split is refused).
//!
//! A head's work never reports directly: it returns its log, so that lines of concurrent heads
//! do not interleave (a producer's stderr must stay inside its own stop-commands fence).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use tokio::task::JoinSet;

use crate::adapters::producer::{Checkout, CheckoutFailure, CheckoutRemoval, ProducerSetup};
use crate::adapters::producer_cache::{CACHE_FORMAT, CachedProducerOutput, ProducerCache};
use crate::core::baseline::invocation::{
    FlagRunVerdict, HeadWork, ProducerInvocation, ProducerRunFacts, entries_per_member,
    judge_flag_run, judge_rerun, read_producer_output,
};
use crate::core::baseline::{Deferral, DeferralCode};

/// How the producer work of a pass is done.
#[derive(Debug, Clone)]
pub struct ProducerWorkOptions {
    pub setup: ProducerSetup,
    /// `None` runs every invocation (no reads, no writes).
    pub cache: Option<ProducerCache>,
    /// `producer.no-evals-flag`; empty means no flag and no fallback.
    pub no_evals_flag: String,
    /// Heads worked on at once.
    pub parallel_heads: usize,
}

/// A line for the step log, in the order the head's work produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEvent {
    Info(String),
    Warning(String),
    /// Output of a child (git or the producer): logged inside a stop-commands fence only.
    ChildStderr {
        title: String,
        text: String,
    },
}

/// One producer process, as `baselines.json` lists it under `producer-runs`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProducerRunRecord {
    pub head: String,
    /// The argv after the entrypoint as run (with the no-evals flag when it was appended).
    pub args: Vec<String>,
    /// `null` when the producer could not start, timed out or was ended by a signal.
    pub exit: Option<i32>,
    /// True for the rerun without the no-evals flag.
    pub fallback: bool,
    pub seconds: f64,
}

/// A candidate's share of a producer output: the entries a run with its own arguments prints.
#[derive(Debug, Clone, PartialEq)]
pub struct ProducerShare {
    pub entrypoint: String,
    pub fallback: bool,
    pub entries: Vec<Value>,
}

/// What the producer work gives one candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum ProducerResult {
    Share(ProducerShare),
    Deferred {
        entrypoint: Option<String>,
        fallback: bool,
        deferral: Deferral,
    },
}

/// Everything the work on one head produced.
#[derive(Debug, Clone, Default)]
pub struct HeadOutcome {
    pub head: String,
    pub log: Vec<LogEvent>,
    pub runs: Vec<ProducerRunRecord>,
    /// Invocations answered from the cache.
    pub cached_invocations: usize,
    /// `(candidate position, result)`.
    pub results: Vec<(usize, ProducerResult)>,
}

/// Works on every head, at most `parallel_heads` at once; `on_finished` sees each head's
/// outcome as soon as it is done. Outcomes are returned in the order of `work`.
pub async fn run_producer_work(
    work: Vec<HeadWork>,
    options: &ProducerWorkOptions,
    mut on_finished: impl FnMut(&HeadOutcome),
) -> Vec<HeadOutcome> {
    let options = Arc::new(options.clone());
    let limit = options.parallel_heads.max(1);
    let mut pending = work.into_iter().enumerate();
    let mut running = JoinSet::new();
    let mut started: HashMap<tokio::task::Id, (usize, HeadWork)> = HashMap::new();
    let mut finished: Vec<(usize, HeadOutcome)> = Vec::new();
    loop {
        while running.len() < limit {
            let Some((position, head)) = pending.next() else {
                break;
            };
            let handle = running.spawn(work_on_head(head.clone(), Arc::clone(&options)));
            started.insert(handle.id(), (position, head));
        }
        let Some(joined) = running.join_next_with_id().await else {
            break;
        };
        let (position, outcome) = match joined {
            Ok((id, outcome)) => (started.remove(&id).map_or(0, |(at, _)| at), outcome),
            Err(error) => {
                let (position, head) = started.remove(&error.id()).expect("a started head");
                (position, crashed_head(&head))
            }
        };
        on_finished(&outcome);
        finished.push((position, outcome));
    }
    finished.sort_by_key(|(position, _)| *position);
    finished.into_iter().map(|(_, outcome)| outcome).collect()
}

/// A head whose work panicked: its candidates are deferred, the others go on.
fn crashed_head(work: &HeadWork) -> HeadOutcome {
    let deferral = Deferral::with_detail(
        DeferralCode::ProducerFailed,
        "the producer work on this head ended unexpectedly",
    );
    let mut outcome = HeadOutcome {
        head: work.head.clone(),
        ..HeadOutcome::default()
    };
    outcome.log.push(LogEvent::Warning(format!(
        "the producer work on head {} ended unexpectedly",
        work.head
    )));
    for invocation in &work.invocations {
        defer_members(&mut outcome, invocation, None, false, &deferral);
    }
    outcome
}

async fn work_on_head(work: HeadWork, options: Arc<ProducerWorkOptions>) -> HeadOutcome {
    let mut outcome = HeadOutcome {
        head: work.head.clone(),
        ..HeadOutcome::default()
    };
    let mut uncached: VecDeque<ProducerInvocation> = VecDeque::new();
    let mut queue: VecDeque<ProducerInvocation> = work.invocations.into();
    while let Some(invocation) = queue.pop_front() {
        if !serve_from_cache(&options, &invocation, &mut outcome, &mut queue) {
            uncached.push_back(invocation);
        }
    }
    if uncached.is_empty() {
        return outcome;
    }

    let checked_out = options
        .setup
        .with_checkout(&work.head, async |checkout: &Checkout| {
            work_in_checkout(&options, checkout, &mut uncached, &mut outcome).await
        })
        .await;

    match checked_out {
        Ok(((), removal)) => report_removal(&mut outcome, &work.head, removal),
        Err(failure) => {
            let deferral = describe_checkout_failure(&mut outcome, &work.head, failure);
            for invocation in uncached.drain(..) {
                defer_members(&mut outcome, &invocation, None, false, &deferral);
            }
        }
    }
    outcome
}

/// Runs the invocations that were not cached, in the checkout of their head.
async fn work_in_checkout(
    options: &ProducerWorkOptions,
    checkout: &Checkout,
    uncached: &mut VecDeque<ProducerInvocation>,
    outcome: &mut HeadOutcome,
) {
    outcome.log.push(LogEvent::Info(format!(
        "checked out producer head {} at {}",
        checkout.head,
        checkout.path.display()
    )));
    let Some(entrypoint) = checkout.first_existing_entrypoint(&options.setup.entrypoints) else {
        let deferral = Deferral::fixed(DeferralCode::NoEntrypoint);
        for invocation in uncached.drain(..) {
            defer_members(outcome, &invocation, None, false, &deferral);
        }
        return;
    };
    while let Some(invocation) = uncached.pop_front() {
        if serve_from_cache(options, &invocation, outcome, uncached) {
            continue;
        }
        match run_invocation(options, checkout, &entrypoint, &invocation, outcome).await {
            Ok((fallback, entries)) => {
                store_in_cache(
                    options,
                    &invocation,
                    &entrypoint,
                    fallback,
                    &entries,
                    outcome,
                );
                distribute(
                    &invocation,
                    &entrypoint,
                    fallback,
                    &entries,
                    outcome,
                    uncached,
                );
            }
            // One candidate's bad arguments must not defer the others of its batch (a timeout
            // is not retried per candidate: it would cost a timeout each).
            Err((_, deferral))
                if invocation.needs_split() && deferral.code != DeferralCode::ProducerTimeout =>
            {
                outcome.log.push(LogEvent::Info(format!(
                    "the batched invocation at {} failed ({}): running its {} argument lists one by one",
                    invocation.head,
                    deferral.message,
                    invocation.members.len()
                )));
                uncached.extend(invocation.unbatched());
            }
            Err((fallback, deferral)) => {
                defer_members(outcome, &invocation, Some(&entrypoint), fallback, &deferral);
            }
        }
    }
}

/// Answers `invocation` from the cache; false when it is not cached.
fn serve_from_cache(
    options: &ProducerWorkOptions,
    invocation: &ProducerInvocation,
    outcome: &mut HeadOutcome,
    queue: &mut VecDeque<ProducerInvocation>,
) -> bool {
    let Some(cache) = &options.cache else {
        return false;
    };
    let Some(record) = cache.read(&invocation.head, &invocation.args, &options.no_evals_flag)
    else {
        return false;
    };
    outcome.cached_invocations += 1;
    outcome.log.push(LogEvent::Info(format!(
        "producer output of {} {} read from the cache",
        invocation.head,
        invocation.args.join(" ")
    )));
    distribute(
        invocation,
        &record.entrypoint,
        record.fallback,
        &record.entries,
        outcome,
        queue,
    );
    true
}

fn store_in_cache(
    options: &ProducerWorkOptions,
    invocation: &ProducerInvocation,
    entrypoint: &str,
    fallback: bool,
    entries: &[Value],
    outcome: &mut HeadOutcome,
) {
    let Some(cache) = &options.cache else {
        return;
    };
    let record = CachedProducerOutput {
        format: CACHE_FORMAT,
        head: invocation.head.clone(),
        args: invocation.args.clone(),
        no_evals_flag: options.no_evals_flag.clone(),
        entrypoint: entrypoint.to_string(),
        fallback,
        entries: entries.to_vec(),
    };
    if let Err(error) = cache.write(&record) {
        outcome.log.push(LogEvent::Warning(format!(
            "cannot cache the producer output of {}: {error}",
            invocation.head
        )));
    }
}

/// Gives every member its share, or queues the members' own invocations when the batched output
/// cannot be split exactly.
fn distribute(
    invocation: &ProducerInvocation,
    entrypoint: &str,
    fallback: bool,
    entries: &[Value],
    outcome: &mut HeadOutcome,
    queue: &mut VecDeque<ProducerInvocation>,
) {
    match entries_per_member(invocation, entries) {
        Ok(shares) => {
            for (member, indices) in invocation.members.iter().zip(shares) {
                let share = ProducerShare {
                    entrypoint: entrypoint.to_string(),
                    fallback,
                    entries: indices
                        .iter()
                        .map(|index| entries[*index].clone())
                        .collect(),
                };
                outcome
                    .results
                    .push((member.candidate, ProducerResult::Share(share)));
            }
        }
        Err(refused) => {
            outcome.log.push(LogEvent::Info(format!(
                "the batched output of {} config keys at {} shows {} key signatures: running the {} argument lists one by one",
                refused.keys,
                invocation.head,
                refused.signature_runs,
                invocation.members.len()
            )));
            queue.extend(invocation.unbatched());
        }
    }
}

fn defer_members(
    outcome: &mut HeadOutcome,
    invocation: &ProducerInvocation,
    entrypoint: Option<&str>,
    fallback: bool,
    deferral: &Deferral,
) {
    for member in &invocation.members {
        outcome.results.push((
            member.candidate,
            ProducerResult::Deferred {
                entrypoint: entrypoint.map(str::to_string),
                fallback,
                deferral: deferral.clone(),
            },
        ));
    }
}

/// Runs one invocation with the no-evals flag, and once more without it when the producer
/// predates the flag. `Ok((fallback, entries))`, or the deferral (with whether the fallback ran).
async fn run_invocation(
    options: &ProducerWorkOptions,
    checkout: &Checkout,
    entrypoint: &str,
    invocation: &ProducerInvocation,
    outcome: &mut HeadOutcome,
) -> Result<(bool, Vec<Value>), (bool, Deferral)> {
    let flag = options.no_evals_flag.as_str();
    let limit = options.setup.stdout_limit;
    let mut args = invocation.args.clone();
    if !flag.is_empty() {
        args.push(flag.to_string());
    }
    let first = run_once(options, checkout, entrypoint, &args, false, outcome)
        .await
        .map_err(|deferral| (false, deferral))?;
    let verdict = if flag.is_empty() {
        match judge_rerun(&first.facts, flag) {
            Ok(()) => FlagRunVerdict::Succeeded,
            Err(deferral) => FlagRunVerdict::Failed(deferral),
        }
    } else {
        judge_flag_run(&first.facts, flag)
    };
    match verdict {
        FlagRunVerdict::Succeeded => read_producer_output(&first.stdout, first.truncated, limit)
            .map(|entries| (false, entries))
            .map_err(|deferral| (false, deferral)),
        FlagRunVerdict::Failed(deferral) => Err((false, deferral)),
        FlagRunVerdict::RerunWithoutFlag => {
            outcome.log.push(LogEvent::Info(format!(
                "the producer at {} rejects {flag}: running it again without the flag and keeping only throughput rows",
                invocation.head
            )));
            let rerun = run_once(
                options,
                checkout,
                entrypoint,
                &invocation.args,
                true,
                outcome,
            )
            .await
            .map_err(|deferral| (true, deferral))?;
            judge_rerun(&rerun.facts, flag).map_err(|deferral| (true, deferral))?;
            read_producer_output(&rerun.stdout, rerun.truncated, limit)
                .map(|entries| (true, entries))
                .map_err(|deferral| (true, deferral))
        }
    }
}

struct FinishedRun {
    facts: ProducerRunFacts,
    stdout: String,
    truncated: bool,
}

async fn run_once(
    options: &ProducerWorkOptions,
    checkout: &Checkout,
    entrypoint: &str,
    args: &[String],
    fallback: bool,
    outcome: &mut HeadOutcome,
) -> Result<FinishedRun, Deferral> {
    outcome.log.push(LogEvent::Info(format!(
        "$ {} {entrypoint} {}   (at {})",
        options.setup.interpreter.to_string_lossy(),
        args.join(" "),
        checkout.head
    )));
    let started = Instant::now();
    let result = options.setup.run_producer(checkout, entrypoint, args).await;
    let mut record = ProducerRunRecord {
        head: checkout.head.clone(),
        args: args.to_vec(),
        exit: None,
        fallback,
        seconds: started.elapsed().as_secs_f64(),
    };
    let output = match result {
        Ok(output) => output,
        Err(error) => {
            outcome.runs.push(record);
            return Err(Deferral::with_detail(
                DeferralCode::ProducerFailed,
                &format!("the producer could not be started ({})", error.kind()),
            ));
        }
    };
    record.exit = if output.timed_out { None } else { output.exit };
    outcome.runs.push(record);
    outcome.log.push(LogEvent::ChildStderr {
        title: format!("producer stderr ({})", checkout.head),
        text: output.stderr.clone(),
    });
    Ok(FinishedRun {
        facts: ProducerRunFacts {
            exit: output.exit,
            timed_out: output.timed_out,
            last_stderr_line: output.last_stderr_line().map(str::to_string),
        },
        stdout: output.stdout,
        truncated: output.stdout_truncated,
    })
}

fn describe_checkout_failure(
    outcome: &mut HeadOutcome,
    head: &str,
    failure: CheckoutFailure,
) -> Deferral {
    match failure {
        CheckoutFailure::HeadMissing { git_stderr } => {
            outcome.log.push(LogEvent::Warning(format!(
                "producer head {head} is not a commit of repo-path"
            )));
            outcome.log.push(LogEvent::ChildStderr {
                title: "git rev-parse stderr".into(),
                text: git_stderr,
            });
            Deferral::fixed(DeferralCode::ProducerHeadMissing)
        }
        CheckoutFailure::AddFailed { exit, git_stderr } => {
            outcome.log.push(LogEvent::ChildStderr {
                title: "git worktree add stderr".into(),
                text: git_stderr,
            });
            let kind = match exit {
                Some(code) => format!("git worktree add exited with code {code}"),
                None => "git worktree add did not finish".to_string(),
            };
            Deferral::with_detail(DeferralCode::CheckoutFailed, &kind)
        }
        CheckoutFailure::Unavailable(error) => Deferral::with_detail(
            DeferralCode::CheckoutFailed,
            &format!("git could not check out the head ({})", error.kind()),
        ),
    }
}

fn report_removal(outcome: &mut HeadOutcome, head: &str, removal: CheckoutRemoval) {
    match removal {
        CheckoutRemoval::Removed => outcome
            .log
            .push(LogEvent::Info(format!("removed the checkout of {head}"))),
        CheckoutRemoval::RemovedByHand { git_stderr } => {
            outcome.log.push(LogEvent::Warning(format!(
                "git worktree remove failed for {head}: deleted the checkout and pruned it instead"
            )));
            outcome.log.push(LogEvent::ChildStderr {
                title: "git worktree remove stderr".into(),
                text: git_stderr,
            });
        }
        CheckoutRemoval::Failed(message) => outcome.log.push(LogEvent::Warning(format!(
            "the checkout of {head} could not be removed: {message}"
        ))),
    }
}
