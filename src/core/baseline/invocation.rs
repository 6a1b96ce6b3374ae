//! Producer invocations: which runs a pass makes, how their output is read and split back per
//! candidate, and when a run is retried without the no-evals flag (contract §3.2).
//!
//! Candidates sharing a producer head share its checkout. Among them, those whose arguments
//! differ only in the values after `--config-keys` share one invocation: the producer's
//! `test-config` prints the entries of each key in the order the keys were given, and copies the
//! key's image, model, model prefix, precision, framework and runner into every entry, so the
//! batched output is the concatenation of the per-key outputs and splits back exactly at the
//! points where that signature changes. When the number of signature runs differs from the number
//! of keys (two adjacent keys with one signature, a key without entries), the split is refused
//! and the members run one by one instead: a batch never guesses.

use serde_json::Value;

use super::{Deferral, DeferralCode};
use crate::core::candidate::ProducerCall;

/// The producer option whose values are batched (the producer takes several keys after one
/// occurrence; a second occurrence would replace the first).
pub const CONFIG_KEYS_OPTION: &str = "--config-keys";

/// Entry fields that the producer copies from the config key into every entry it prints.
pub const KEY_SIGNATURE_FIELDS: [&str; 6] = [
    "image",
    "model",
    "model-prefix",
    "precision",
    "framework",
    "runner",
];

/// Whether candidates that differ only in config keys share one invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batching {
    /// One invocation per head and argument template (the normal mode).
    ConfigKeys,
    /// One invocation per distinct argument list (what a pass without batching would do).
    Off,
}

/// All producer work at one head: one checkout, these invocations in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadWork {
    pub head: String,
    pub invocations: Vec<ProducerInvocation>,
}

/// One producer run (the no-evals flag is appended when it runs) and the candidates it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerInvocation {
    pub head: String,
    /// The argv after the entrypoint, without the no-evals flag.
    pub args: Vec<String>,
    /// The keys after `--config-keys` when the invocation batches several argument lists.
    pub batched_keys: Option<Vec<String>>,
    pub members: Vec<InvocationMember>,
}

/// A candidate served by an invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvocationMember {
    /// The candidate's position in the candidates file.
    pub candidate: usize,
    /// The candidate's own arguments.
    pub args: Vec<String>,
    /// The candidate's own config keys, when the invocation is batched.
    pub config_keys: Vec<String>,
}

/// Arguments split around their config keys.
struct KeyedArguments {
    /// The arguments with the keys removed.
    template: Vec<String>,
    /// Where the keys stood (just after `--config-keys`).
    position: usize,
    keys: Vec<String>,
}

/// Finds the values of the single `--config-keys` option; `None` when the arguments cannot be
/// batched (no such option, several, or no values).
fn keyed_arguments(args: &[String]) -> Option<KeyedArguments> {
    let mut occurrences = args
        .iter()
        .enumerate()
        .filter(|(_, arg)| arg.starts_with(CONFIG_KEYS_OPTION));
    let (option_at, option) = occurrences.next()?;
    if occurrences.next().is_some() || option != CONFIG_KEYS_OPTION {
        return None;
    }
    let position = option_at + 1;
    let count = args[position..]
        .iter()
        .take_while(|arg| !arg.starts_with('-'))
        .count();
    if count == 0 {
        return None;
    }
    let keys = args[position..position + count].to_vec();
    let mut template = args[..position].to_vec();
    template.extend_from_slice(&args[position + count..]);
    Some(KeyedArguments {
        template,
        position,
        keys,
    })
}

/// Groups the candidates' producer calls into per-head work, batching config keys when allowed.
/// `calls` pairs each candidate's position with its call. Heads, invocations and keys keep the
/// order in which they first appear.
pub fn plan_producer_work(calls: &[(usize, &ProducerCall)], batching: Batching) -> Vec<HeadWork> {
    let mut work: Vec<HeadWork> = Vec::new();
    for (candidate, call) in calls {
        let head_index = match work.iter().position(|head| head.head == call.head) {
            Some(index) => index,
            None => {
                work.push(HeadWork {
                    head: call.head.clone(),
                    invocations: Vec::new(),
                });
                work.len() - 1
            }
        };
        let invocations = &mut work[head_index].invocations;
        let keyed = match batching {
            Batching::ConfigKeys => keyed_arguments(&call.args),
            Batching::Off => None,
        };
        match keyed {
            Some(keyed) => add_to_batch(invocations, *candidate, call, keyed),
            None => add_unbatched(invocations, *candidate, call),
        }
    }
    work
}

fn add_unbatched(invocations: &mut Vec<ProducerInvocation>, candidate: usize, call: &ProducerCall) {
    let member = InvocationMember {
        candidate,
        args: call.args.clone(),
        config_keys: Vec::new(),
    };
    match invocations
        .iter_mut()
        .find(|invocation| invocation.batched_keys.is_none() && invocation.args == call.args)
    {
        Some(invocation) => invocation.members.push(member),
        None => invocations.push(ProducerInvocation {
            head: call.head.clone(),
            args: call.args.clone(),
            batched_keys: None,
            members: vec![member],
        }),
    }
}

fn add_to_batch(
    invocations: &mut Vec<ProducerInvocation>,
    candidate: usize,
    call: &ProducerCall,
    keyed: KeyedArguments,
) {
    let member = InvocationMember {
        candidate,
        args: call.args.clone(),
        config_keys: keyed.keys.clone(),
    };
    let same_template = |invocation: &ProducerInvocation| {
        invocation.batched_keys.is_some()
            && keyed_arguments(&invocation.args).is_some_and(|existing| {
                existing.template == keyed.template && existing.position == keyed.position
            })
    };
    let index = match invocations.iter().position(same_template) {
        Some(index) => index,
        None => {
            invocations.push(ProducerInvocation {
                head: call.head.clone(),
                args: Vec::new(),
                batched_keys: Some(Vec::new()),
                members: Vec::new(),
            });
            invocations.len() - 1
        }
    };
    let invocation = &mut invocations[index];
    let keys = invocation.batched_keys.as_mut().expect("a batch has keys");
    for key in &keyed.keys {
        if !keys.contains(key) {
            keys.push(key.clone());
        }
    }
    let mut args = keyed.template;
    args.splice(keyed.position..keyed.position, keys.iter().cloned());
    invocation.args = args;
    invocation.members.push(member);
}

impl ProducerInvocation {
    /// True when members asked for different arguments, so the output must be split.
    pub fn needs_split(&self) -> bool {
        self.members
            .iter()
            .any(|member| member.args != self.members[0].args)
    }

    /// The same work without batching: one invocation per distinct member argument list.
    pub fn unbatched(&self) -> Vec<ProducerInvocation> {
        let mut invocations: Vec<ProducerInvocation> = Vec::new();
        for member in &self.members {
            let call = ProducerCall {
                head: self.head.clone(),
                args: member.args.clone(),
            };
            add_unbatched(&mut invocations, member.candidate, &call);
        }
        invocations
    }
}

/// Why a batched output could not be split back per candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitRefused {
    pub signature_runs: usize,
    pub keys: usize,
}

/// For each member (in order), the indices into `entries` of the entries a run with the
/// member's own arguments would have printed, in that run's order.
pub fn entries_per_member(
    invocation: &ProducerInvocation,
    entries: &[Value],
) -> Result<Vec<Vec<usize>>, SplitRefused> {
    let everything: Vec<usize> = (0..entries.len()).collect();
    if !invocation.needs_split() {
        return Ok(vec![everything; invocation.members.len()]);
    }
    let keys = invocation
        .batched_keys
        .as_ref()
        .expect("members with different arguments share only a batch");
    let runs = signature_runs(entries);
    if runs.len() != keys.len() {
        return Err(SplitRefused {
            signature_runs: runs.len(),
            keys: keys.len(),
        });
    }
    Ok(invocation
        .members
        .iter()
        .map(|member| {
            member
                .config_keys
                .iter()
                .flat_map(|key| {
                    let run = keys
                        .iter()
                        .position(|batched| batched == key)
                        .unwrap_or_else(|| unreachable!("every member key is in the batch"));
                    runs[run].clone()
                })
                .collect()
        })
        .collect())
}

/// Maximal runs of consecutive entries with one key signature.
fn signature_runs(entries: &[Value]) -> Vec<std::ops::Range<usize>> {
    let signature = |entry: &Value| -> Vec<Value> {
        KEY_SIGNATURE_FIELDS
            .iter()
            .map(|field| entry.get(field).cloned().unwrap_or(Value::Null))
            .collect()
    };
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        match runs.last_mut() {
            Some(run) if signature(&entries[run.start]) == signature(entry) => run.end = index + 1,
            _ => runs.push(index..index + 1),
        }
    }
    runs
}

/// What a finished (or killed) producer run showed; stderr is reduced to its last line, which is
/// compared and never reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerRunFacts {
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub last_stderr_line: Option<String>,
}

/// What to do after the run with the no-evals flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlagRunVerdict {
    /// Exit 0: read its output.
    Succeeded,
    /// The producer predates the flag: run once more without it, keep only throughput rows.
    RerunWithoutFlag,
    /// Any other failure: no rerun.
    Failed(Deferral),
}

/// Judges the run made with the no-evals flag appended.
pub fn judge_flag_run(facts: &ProducerRunFacts, no_evals_flag: &str) -> FlagRunVerdict {
    if facts.timed_out {
        return FlagRunVerdict::Failed(Deferral::fixed(DeferralCode::ProducerTimeout));
    }
    if facts.exit == Some(0) {
        return FlagRunVerdict::Succeeded;
    }
    let rejected = facts.exit.is_some()
        && facts
            .last_stderr_line
            .as_deref()
            .is_some_and(|line| rejects_flag(line, no_evals_flag));
    if rejected {
        FlagRunVerdict::RerunWithoutFlag
    } else {
        FlagRunVerdict::Failed(exit_deferral(facts, ""))
    }
}

/// Judges the rerun without the flag; `Ok` means read its output.
pub fn judge_rerun(facts: &ProducerRunFacts, no_evals_flag: &str) -> Result<(), Deferral> {
    if facts.timed_out {
        return Err(Deferral::fixed(DeferralCode::ProducerTimeout));
    }
    if facts.exit == Some(0) {
        return Ok(());
    }
    Err(exit_deferral(
        facts,
        &format!(" after the rerun without {no_evals_flag}"),
    ))
}

fn exit_deferral(facts: &ProducerRunFacts, suffix: &str) -> Deferral {
    let kind = match facts.exit {
        Some(code) => format!("the producer exited with code {code}{suffix}"),
        None => format!("the producer was ended by a signal{suffix}"),
    };
    Deferral::with_detail(DeferralCode::ProducerFailed, &kind)
}

/// argparse's verdict on an unknown option, e.g.
/// `generate_sweep_configs.py: error: unrecognized arguments: --no-evals`. The usage text above
/// it wraps with the terminal width, so only the last line is read, and the flag must be one of
/// the listed arguments exactly (not a prefix of one).
pub fn rejects_flag(last_stderr_line: &str, flag: &str) -> bool {
    const VERDICT: &str = "unrecognized arguments:";
    match last_stderr_line.find(VERDICT) {
        Some(at) => last_stderr_line[at + VERDICT.len()..]
            .split_whitespace()
            .any(|argument| argument == flag),
        None => false,
    }
}

/// Reads producer stdout: a JSON array of objects (the matrix entries).
pub fn read_producer_output(
    stdout: &str,
    truncated: bool,
    limit_bytes: usize,
) -> Result<Vec<Value>, Deferral> {
    let invalid =
        |detail: String| Deferral::with_detail(DeferralCode::ProducerOutputInvalid, &detail);
    if truncated {
        return Err(invalid(format!(
            "the producer printed more than {limit_bytes} bytes"
        )));
    }
    let document: Value = serde_json::from_str(stdout)
        .map_err(|error| invalid(format!("the producer output is not JSON: {error}")))?;
    let Value::Array(entries) = document else {
        return Err(invalid(
            "the producer output is not a JSON array".to_string(),
        ));
    };
    if let Some(index) = entries.iter().position(|entry| !entry.is_object()) {
        return Err(invalid(format!("producer entry {index} is not an object")));
    }
    Ok(entries)
}

/// Whether an entry is an evaluation row (`run-eval: true` or `eval-only: true`), which a
/// producer run without the no-evals flag may print and a throughput baseline never matches.
pub fn is_evaluation_entry(entry: &Value) -> bool {
    ["run-eval", "eval-only"]
        .iter()
        .any(|field| entry.get(field) == Some(&Value::Bool(true)))
}

#[cfg(test)]
#[path = "invocation_tests.rs"]
mod tests;
