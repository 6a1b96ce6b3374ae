//! The dashboard's *After-care* section (contract §12): each validated pull request klaud looks
//! after on one line, with its health, the sessions it used of those it may have and what klaud
//! does next (`status`'s view of its record, `next_for`'s value); a pull request that waits for
//! a maintainer carries the *retry after-care* box, which grants it one more session.

use super::{DashboardView, Section, code, drawn, text};
use crate::core::aftercare::AftercareView;
use crate::core::dashboard::checkbox::BoxKey;
use crate::core::health::PullRequestHealth;

/// The after-care pull requests: those waiting for a maintainer first, then the others in the
/// pull requests' order.
pub(super) fn aftercare_section(view: &DashboardView<'_>) -> Section {
    let rows = in_aftercare(view);
    let mut section = Section::new(format!("After-care: {} pull requests", rows.len()));
    section.empty = Some("No validated pull request is in after-care.".to_string());
    if !rows.is_empty() {
        section.intro.push(
            "Validated pull requests klaud keeps mergeable until they are merged or closed. \
             Tick *retry after-care* to grant one that waits for a maintainer one more session."
                .to_string(),
        );
    }
    for (pull, aftercare) in rows {
        section.rows.push(aftercare_line(view, pull, aftercare));
    }
    section
}

/// The boxes the section draws.
pub(super) fn aftercare_keys(view: &DashboardView<'_>) -> impl Iterator<Item = BoxKey> {
    in_aftercare(view)
        .into_iter()
        .filter(|(_, aftercare)| aftercare.needs_maintainer())
        .map(|(pull, _)| BoxKey::RetryAftercare(pull.number))
}

fn in_aftercare<'a>(view: &DashboardView<'a>) -> Vec<(&'a PullRequestHealth, &'a AftercareView)> {
    let mut rows: Vec<(&PullRequestHealth, &AftercareView)> = view
        .report
        .health
        .pull_requests
        .iter()
        .filter_map(|pull| pull.aftercare.as_ref().map(|aftercare| (pull, aftercare)))
        .collect();
    rows.sort_by_key(|(_, aftercare)| !aftercare.needs_maintainer());
    rows
}

fn aftercare_line(
    view: &DashboardView<'_>,
    pull: &PullRequestHealth,
    aftercare: &AftercareView,
) -> String {
    let mut health = pull.health.name().to_string();
    for (flag, on) in [("conflicting", pull.conflicting), ("behind", pull.behind)] {
        if on {
            health.push_str(&format!(", {flag}"));
        }
    }
    let link = format!(
        "[#{number}]({url}/pull/{number})",
        number = pull.number,
        url = view.repository_url
    );
    let facts = format!(
        "{} — {health} — {}",
        code(&pull.candidate),
        text(&aftercare.to_string())
    );
    if !aftercare.needs_maintainer() {
        return format!("- {link} {facts}");
    }
    drawn(
        view,
        BoxKey::RetryAftercare(pull.number),
        false,
        format!("retry after-care of {link} — {facts}"),
    )
}
