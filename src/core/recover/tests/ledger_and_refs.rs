//! Resuming under the cap, claims, the recovery lease, groups dropped on a changed ledger,
//! legacy lock refs, the rounds of details and the inspection budget.

use super::*;

#[test]
fn parked_sessions_resume_oldest_first_while_under_the_cap() {
    let mut world = World::new();
    world.running_planner(
        RUNNING_PARENT,
        &[
            "Run candidate l0",
            "Run candidate l1",
            "Run candidate l2",
            "Run candidate l3",
        ],
    );
    for live in ["l0", "l1", "l2", "l3"] {
        world.session(live, SessionState::Live, RUNNING_PARENT, None);
    }
    for (index, parked) in ["p0", "p1", "p2"].into_iter().enumerate() {
        let number = 20 + index as u64;
        world.bot_draft(parked, number);
        if parked != "p2" {
            world.pull(number).labels = vec!["klaud-parked".into()];
        }
        world
            .session(parked, SessionState::Parked, FINISHED_PARENT, Some(number))
            .started_at = hours_ago(30 - index as i64);
    }
    world.snapshot.default_branch = Some(Ok("main".into()));

    let plan = world.plan();

    assert_eq!(plan.with_verdict(Verdict::Resumed), ["p0"]);
    assert_eq!(plan.with_verdict(Verdict::Parked), ["p1", "p2"]);
    assert_eq!(
        actions(&plan, "p0"),
        [
            "dispatch klaud-candidate.yml on main for candidate p0",
            "set status label klaud-in-progress on #20",
        ]
    );
    assert!(actions(&plan, "p1").is_empty());
    assert_eq!(
        actions(&plan, "p2"),
        ["set status label klaud-parked on #22"],
        "a parked draft shows klaud-parked"
    );

    // Another pass resumed p1 meanwhile: the cap holds on the ledger as written.
    let mut fresh = world.snapshot.ledger.clone();
    let p1 = fresh
        .sessions
        .iter_mut()
        .find(|s| s.candidate == "p1")
        .unwrap();
    p1.state = SessionState::Live;
    let (written, grants, _) = decide_first_write(&fresh, &plan, &write_settings());
    assert!(grants.resumed.is_empty());
    assert_eq!(grants.refused_resumes[0].0, "p0");
    assert!(written.is_none());
    let resume_group = report(&plan, "p0").group.unwrap();
    assert!(!grants.groups_cleared[resume_group]);
}

#[test]
fn a_used_up_daily_budget_resumes_nothing_and_says_the_figures() {
    let mut world = World::new();
    world.bot_draft("p0", 20);
    world.pull(20).labels = vec!["klaud-parked".into()];
    let parked = world.session("p0", SessionState::Parked, FINISHED_PARENT, Some(20));
    parked.attempts.push(crate::core::ledger::Attempt {
        number: 1,
        run: 71,
        adopted_at: hours_ago(7),
        deadline: hours_ago(2),
        ended_at: Some(hours_ago(2)),
        end: Some(crate::core::ledger::AttemptEnd::TimeRanOut),
        runs: Vec::new(),
        notes: Vec::new(),
        notes_folded: 0,
        agent: Some(crate::core::execution::AgentRecord {
            cost_usd: Some(10.0),
            ..Default::default()
        }),
    });
    world.snapshot.default_branch = Some(Ok("main".into()));
    world.policy.daily_budget_usd = Some(10.0);

    let plan = world.plan();

    assert_eq!(plan.with_verdict(Verdict::Parked), ["p0"]);
    assert_eq!(
        report(&plan, "p0").reason,
        "budget-exhausted: nothing is resumed: $10.00 recorded in the last 24 hours, budget $10.00"
    );
    assert!(actions(&plan, "p0").is_empty(), "it keeps its parked label");

    world.policy.daily_budget_usd = Some(10.5);
    assert_eq!(world.plan().with_verdict(Verdict::Resumed), ["p0"]);
}

/// A parked session of `p0` with its draft whose resumes no job has adopted since
/// `hours_unadopted` ago.
fn unadopted_resumes(hours_unadopted: i64) -> World {
    let mut world = World::new();
    world.bot_draft("p0", 20);
    world.pull(20).labels = vec!["klaud-parked".into()];
    world
        .session("p0", SessionState::Parked, FINISHED_PARENT, Some(20))
        .resuming = Some(crate::core::ledger::Resuming {
        by_run: FINISHED_PARENT,
        at: hours_ago(hours_unadopted),
    });
    world.snapshot.default_branch = Some(Ok("main".into()));
    world
}

#[test]
fn resumes_no_job_adopted_for_six_hours_are_held_until_the_dashboard_asks_again() {
    assert_eq!(
        unadopted_resumes(5).plan().with_verdict(Verdict::Resumed),
        ["p0"],
        "five hours: dispatched again"
    );

    let mut world = unadopted_resumes(6);
    let plan = world.plan();
    assert_eq!(plan.with_verdict(Verdict::Parked), ["p0"]);
    assert_eq!(
        report(&plan, "p0").reason,
        format!(
            "held: no job has adopted a resume of it since {} (the candidate workflow's runs end \
             before `session`); tick resume now on the dashboard to try again",
            hours_ago(6).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )
    );
    assert!(
        actions(&plan, "p0").is_empty(),
        "no dispatch; it keeps its label"
    );

    // A maintainer's *resume now*: dispatched again, and the six hours start afresh.
    world.snapshot.ledger.steering.resume_first.insert(
        "p0".into(),
        crate::core::steering::Mark {
            by: "maintainer-ann".into(),
            at: hours_ago(1),
        },
    );
    let plan = world.plan();
    assert_eq!(plan.with_verdict(Verdict::Resumed), ["p0"]);
    let (written, grants, _) = decide_first_write(&world.snapshot.ledger, &plan, &write_settings());
    assert_eq!(grants.resumed.len(), 1);
    let session = &written.unwrap().sessions[0];
    assert_eq!(session.state, SessionState::Live);
    assert_eq!(
        session.resuming,
        Some(crate::core::ledger::Resuming {
            by_run: OWN_RUN,
            at: now(),
        })
    );
}

#[test]
fn a_resume_no_job_adopted_keeps_the_time_of_the_first_dispatch() {
    let world = unadopted_resumes(2);
    let plan = world.plan();
    let (written, _, _) = decide_first_write(&world.snapshot.ledger, &plan, &write_settings());
    let resumed = written.unwrap().sessions[0].clone();
    assert_eq!(
        resumed.resuming,
        Some(crate::core::ledger::Resuming {
            by_run: OWN_RUN,
            at: hours_ago(2),
        }),
        "dispatched again, counted from the first dispatch"
    );

    // The dispatched run ends before `session`, and so does the pass that dispatched it (here
    // the world's finished parent): the next pass parks the session again, and the resume
    // stays recorded.
    let mut next = World::new();
    next.bot_draft("p0", 20);
    next.snapshot.ledger.sessions.push(resumed);
    next.snapshot.ledger.sessions[0].parent_run = FINISHED_PARENT;
    next.snapshot.ledger.sessions[0]
        .attempts
        .push(crate::core::ledger::Attempt {
            number: 1,
            run: 71,
            adopted_at: hours_ago(9),
            deadline: hours_ago(4),
            ended_at: Some(hours_ago(4)),
            end: Some(crate::core::ledger::AttemptEnd::TimeRanOut),
            runs: Vec::new(),
            notes: Vec::new(),
            notes_folded: 0,
            agent: None,
        });
    let plan = next.plan();
    assert_eq!(plan.with_verdict(Verdict::Parked), ["p0"], "{plan:?}");
    let (written, _, _) = decide_first_write(&next.snapshot.ledger, &plan, &write_settings());
    let parked = &written.unwrap().sessions[0];
    assert_eq!(parked.state, SessionState::Parked);
    assert_eq!(parked.resuming.as_ref().map(|r| r.at), Some(hours_ago(2)));
}

#[test]
fn claims_are_released_after_cleanup_but_not_while_the_parent_runs() {
    let mut world = World::new();
    world.bot_draft("a", 7);
    world.session("a", SessionState::Live, FINISHED_PARENT, Some(7));
    world.claim("a", FINISHED_PARENT);
    world.running_planner(RUNNING_PARENT, &["Run candidate b"]);
    world.session("b", SessionState::Live, RUNNING_PARENT, None);
    world.claim("b", RUNNING_PARENT);

    let plan = world.plan();

    assert_eq!(plan.ledger.claim_releases.len(), 1);
    let release = &plan.ledger.claim_releases[0];
    assert_eq!(release.candidate, "a");
    assert_eq!(release.after_group, report(&plan, "a").group);

    let (written, grants, _) = decide_first_write(&world.snapshot.ledger, &plan, &write_settings());
    let written = written.unwrap();
    assert!(grants.lease_held);
    assert_eq!(
        written.claims.len(),
        2,
        "claims are released by the last write"
    );
    let (last, _) = decide_second_write(
        &written,
        OWN_RUN,
        &plan.ledger.claim_releases,
        (&[], &[]),
        None,
    );
    let last = last.unwrap();
    assert_eq!(last.claims.len(), 1);
    assert_eq!(last.recovery_lease, None);
}

#[test]
fn the_lease_of_a_running_pass_is_never_taken_and_a_finished_owners_is() {
    let mut world = World::new();
    world.bot_draft("a", 7);
    world.running_planner(RUNNING_PARENT, &[]);
    world.snapshot.ledger.recovery_lease = Some(Lease {
        owner_run: RUNNING_PARENT,
        taken_at: hours_ago(30),
    });

    let plan = world.plan();
    assert!(matches!(
        plan.ledger.lease,
        LeaseStanding::HeldBy {
            owner_run: RUNNING_PARENT,
            ..
        }
    ));
    let (written, grants, _) = decide_first_write(&world.snapshot.ledger, &plan, &write_settings());
    assert!(written.is_none());
    assert!(!grants.lease_held);
    assert!(
        grants
            .lease_refusal
            .unwrap()
            .contains(&RUNNING_PARENT.to_string())
    );
    assert!(grants.groups_cleared.iter().all(|cleared| !cleared));

    world.snapshot.ledger.recovery_lease = Some(Lease {
        owner_run: FINISHED_PARENT,
        taken_at: hours_ago(1),
    });
    let plan = world.plan();
    assert_eq!(
        plan.ledger.lease,
        LeaseStanding::OwnerFinished {
            owner_run: FINISHED_PARENT
        }
    );
    let (written, grants, _) = decide_first_write(&world.snapshot.ledger, &plan, &write_settings());
    assert!(grants.lease_held);
    assert_eq!(written.unwrap().recovery_lease.unwrap().owner_run, OWN_RUN);
}

#[test]
fn a_group_is_dropped_when_the_ledger_gained_an_open_session_meanwhile() {
    let mut world = World::new();
    world.bot_draft("a", 7);
    let plan = world.plan();
    let mut fresh = world.snapshot.ledger.clone();
    fresh.claim_family("a", "family-a", 4_000, now()).unwrap();
    let (_, grants, _) = decide_first_write(&fresh, &plan, &write_settings());
    assert!(grants.lease_held);
    assert_eq!(grants.groups_cleared, [false]);
}

#[test]
fn legacy_lock_refs_go_when_their_parent_finished() {
    let mut world = World::new();
    world.running_planner(RUNNING_PARENT, &[]);
    for (name, sha) in [
        (format!("klaud/recovery-{FINISHED_PARENT}5-a"), "s1"),
        (format!("klaud/recovery-{RUNNING_PARENT}-b"), "s2"),
        ("klaud/claim-c".to_string(), "s3"),
        ("klaud/claim-d".to_string(), "s4"),
        ("klaud/state".to_string(), "s5"),
    ] {
        world.snapshot.refs.items.push(RefFact {
            name,
            sha: sha.into(),
        });
    }
    world
        .snapshot
        .commit_messages
        .insert("s3".into(), Ok(format!("claim c for run {RUNNING_PARENT}")));
    world
        .snapshot
        .commit_messages
        .insert("s4".into(), Ok("claim d".into()));

    let plan = world.plan();

    let deletions: Vec<String> = plan
        .groups
        .iter()
        .flat_map(|group| &group.actions)
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        deletions,
        ["delete legacy lock ref klaud/recovery-10005-a (if still at s1)"]
    );
    assert_eq!(plan.refs.lock_refs_of_running_runs, 2);
    assert_eq!(plan.refs.lock_refs_kept, 1, "claim-d names no run");
    assert!(plan.groups[0].destructive && plan.groups[0].independent);
}

#[test]
fn the_decision_asks_for_commits_then_for_sweeps_of_bot_only_drafts() {
    let mut world = World::new();
    world.bot_draft("a", 7);
    world.snapshot.commits.clear();
    world.snapshot.sweeps.clear();
    let needs = details_needed(&world.snapshot, &world.policy, &context());
    assert_eq!(needs.commits.into_iter().collect::<Vec<_>>(), [7]);
    assert!(needs.sweeps.is_empty());

    world.snapshot.commits.insert(
        7,
        Ok(CommitsFact {
            commits: vec![commit(&sha("a", "head"), BOT)],
            complete: true,
        }),
    );
    let needs = details_needed(&world.snapshot, &world.policy, &context());
    assert_eq!(needs.sweeps.into_iter().collect::<Vec<_>>(), [branch("a")]);
    assert_eq!(
        report(&world.plan(), "a").verdict,
        Verdict::Skipped,
        "unread: left as it is"
    );
}

#[test]
fn inspections_stop_at_their_budget_and_kept_objects_cost_nothing() {
    let mut world = World::new();
    for candidate in ["a", "b", "c"] {
        world
            .session(candidate, SessionState::Finished, FINISHED_PARENT, Some(1))
            .outcome = Some(Outcome::Failed);
        world.snapshot.refs.items.push(RefFact {
            name: branch(candidate),
            sha: sha(candidate, "head"),
        });
    }
    world.snapshot.ledger.kept.push(Kept {
        object: KeptObject::Branch("klaud/auto-a".into()),
        sha: sha("a", "head"),
        verdict: KeptVerdict::LeftAlone,
        reason: "closed by a maintainer".into(),
        since: hours_ago(50),
    });
    let context = RecoveryContext {
        inspections: 2,
        ..context()
    };
    let needs = details_needed(&world.snapshot, &world.policy, &context);
    assert_eq!(
        needs.issues.len(),
        1,
        "one branch fits the budget of two reads"
    );
    let plan = recover(&world.snapshot, &world.policy, &context);
    assert_eq!(plan.refs.branches_kept, 1);
    assert_eq!(plan.refs.deferred, 1);
}

#[test]
fn a_ledger_written_by_both_writes_is_consistent() {
    let mut world = World::new();
    world.bot_draft("a", 7);
    world.session("a", SessionState::Live, FINISHED_PARENT, Some(7));
    world.claim("a", FINISHED_PARENT);
    let plan = world.plan();
    let (first, grants, message) =
        decide_first_write(&world.snapshot.ledger, &plan, &write_settings());
    let first = first.unwrap();
    assert!(message.contains("took the recovery lease") && message.contains("a: no-outcome"));
    assert_eq!(grants.recorded.len(), 1);
    let session = &first.sessions[0];
    assert_eq!(session.state, SessionState::Finished);
    assert_eq!(session.outcome, Some(Outcome::NoOutcome));
    let (last, _) = decide_second_write(
        &first,
        OWN_RUN,
        &plan.ledger.claim_releases,
        (&[], &[]),
        None,
    );
    let last = last.unwrap();
    assert!(last.claims.is_empty() && last.recovery_lease.is_none());
    let round_trip = Ledger::from_json(&last.to_json()).unwrap();
    assert_eq!(round_trip, last);
}
