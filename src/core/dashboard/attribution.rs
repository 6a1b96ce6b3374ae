//! Who changed a box: the edit history (GitHub's `userContentEdits`, each revision's
//! text and editor). A box's change belongs to the editor of the last revision that brought it
//! to its current state; klaud's rewrites in between keep a waiting tick as it was, so they do
//! not hide who made it. When the history read does not reach that revision, or no revision
//! explains the box, nobody is named and the tick waits (it is never acted on by guess).

use chrono::{DateTime, Utc};

use super::checkbox::{BoxKey, ReadBox, read_boxes};

/// One revision of the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// `None` for a deleted account.
    pub editor: Option<String>,
    pub edited_at: DateTime<Utc>,
    /// The revision's text; `None` when GitHub did not give it.
    pub body: Option<String>,
}

/// The edits read, oldest first, and how many GitHub holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EditHistory {
    pub edits: Vec<Edit>,
    pub total: u64,
}

/// Who changed a box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attribution {
    /// The editor of the revision that made the change (`None`: a deleted account).
    By {
        account: Option<String>,
        edited_at: DateTime<Utc>,
    },
    /// Nobody can be named, and why.
    Unknown(String),
}

/// The author of each changed box in `changed`, from `history` and klaud's account `bot`: the
/// editor of the last revision that brought the box to its current state. klaud's own
/// revisions never do (they draw a box as klaud renders it, or keep a tick waiting as it was),
/// so one that appears to is not taken for a person's.
pub fn attribute(changed: &[ReadBox], history: &EditHistory, bot: &str) -> Vec<Attribution> {
    changed
        .iter()
        .map(|read| attribute_box(&read.key, read.ticked, history, bot))
        .collect()
}

fn attribute_box(key: &BoxKey, ticked: bool, history: &EditHistory, bot: &str) -> Attribution {
    let state = |edit: &Edit| -> Option<Option<bool>> {
        let body = edit.body.as_deref()?;
        Some(read_boxes(body).get(key).map(|read| read.ticked))
    };
    for pair in history.edits.windows(2).rev() {
        let (Some(before), Some(after)) = (state(&pair[0]), state(&pair[1])) else {
            return Attribution::Unknown(format!(
                "a revision of {} has no text in the edit history",
                pair[1].edited_at.to_rfc3339()
            ));
        };
        if after == Some(ticked) && before != Some(ticked) {
            let by_bot = pair[1]
                .editor
                .as_deref()
                .is_some_and(|editor| editor.eq_ignore_ascii_case(bot));
            if by_bot {
                return Attribution::Unknown(
                    "klaud's own revision made this change, not a person's".to_string(),
                );
            }
            return Attribution::By {
                account: pair[1].editor.clone(),
                edited_at: pair[1].edited_at,
            };
        }
    }
    if history.total > history.edits.len() as u64 {
        Attribution::Unknown(format!(
            "the issue has {} edits and the one that made this change is not among the {} read",
            history.total,
            history.edits.len()
        ))
    } else {
        Attribution::Unknown("no revision in the issue's edit history made this change".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::dashboard::checkbox::changed_boxes;
    use crate::core::test_support::at;

    const KLAUD: &str =
        "- [ ] pause <!-- klaud:pause:off -->\n- [ ] retry c <!-- klaud:retry-now:c -->\n";

    fn edit(editor: &str, time: &str, body: &str) -> Edit {
        Edit {
            editor: Some(editor.into()),
            edited_at: at(time),
            body: Some(body.into()),
        }
    }

    fn history(edits: Vec<Edit>) -> EditHistory {
        EditHistory {
            total: edits.len() as u64,
            edits,
        }
    }

    fn both_ticked() -> String {
        KLAUD
            .replace("[ ] pause", "[x] pause")
            .replace("[ ] retry", "[x] retry")
    }

    #[test]
    fn each_tick_belongs_to_the_editor_who_made_it() {
        let rob = KLAUD.replace("[ ] pause", "[x] pause");
        let edits = vec![
            edit("Klaud-Cold", "2026-12-01T08:00:00Z", KLAUD),
            edit("reader-rob", "2026-12-01T09:00:00Z", &rob),
            edit("maintainer-ann", "2026-12-01T10:00:00Z", &both_ticked()),
        ];
        let changed = changed_boxes(&both_ticked());
        let who = attribute(&changed, &history(edits), "klaud-cold");
        assert_eq!(
            who,
            [
                Attribution::By {
                    account: Some("maintainer-ann".into()),
                    edited_at: at("2026-12-01T10:00:00Z")
                },
                Attribution::By {
                    account: Some("reader-rob".into()),
                    edited_at: at("2026-12-01T09:00:00Z")
                },
            ]
        );
    }

    #[test]
    fn a_tick_untouched_by_a_later_edit_keeps_its_author() {
        let ann = KLAUD.replace("[ ] retry", "[x] retry");
        let edits = vec![
            edit("Klaud-Cold", "2026-12-01T08:00:00Z", KLAUD),
            edit("maintainer-ann", "2026-12-01T09:00:00Z", &ann),
            edit(
                "reader-rob",
                "2026-12-01T10:00:00Z",
                &format!("{ann}\nmore text"),
            ),
        ];
        let changed = changed_boxes(&ann);
        assert_eq!(
            attribute(&changed, &history(edits), "Klaud-Cold"),
            [Attribution::By {
                account: Some("maintainer-ann".into()),
                edited_at: at("2026-12-01T09:00:00Z")
            }]
        );
    }

    #[test]
    fn a_tick_cleared_by_klaud_and_made_again_belongs_to_the_second_editor() {
        let ann = KLAUD.replace("[ ] retry", "[x] retry");
        let edits = vec![
            edit("Klaud-Cold", "2026-12-01T07:00:00Z", KLAUD),
            edit("maintainer-ann", "2026-12-01T08:00:00Z", &ann),
            edit("Klaud-Cold", "2026-12-01T09:00:00Z", KLAUD),
            edit("reader-rob", "2026-12-01T10:00:00Z", &ann),
        ];
        let changed = changed_boxes(&ann);
        assert_eq!(
            attribute(&changed, &history(edits), "Klaud-Cold"),
            [Attribution::By {
                account: Some("reader-rob".into()),
                edited_at: at("2026-12-01T10:00:00Z")
            }]
        );
    }

    #[test]
    fn klauds_rewrite_keeping_a_waiting_tick_does_not_hide_who_made_it() {
        let ann = KLAUD.replace("[ ] retry", "[x] retry");
        let kept = format!("{ann}\nrewritten by klaud with the tick kept");
        let edits = vec![
            edit("Klaud-Cold", "2026-12-01T07:00:00Z", KLAUD),
            edit("maintainer-ann", "2026-12-01T08:00:00Z", &ann),
            edit("Klaud-Cold", "2026-12-01T09:00:00Z", &kept),
        ];
        assert_eq!(
            attribute(&changed_boxes(&kept), &history(edits), "Klaud-Cold"),
            [Attribution::By {
                account: Some("maintainer-ann".into()),
                edited_at: at("2026-12-01T08:00:00Z")
            }]
        );
        // A tick klaud itself appears to make is nobody's.
        let forged = vec![
            edit("Klaud-Cold", "2026-12-01T07:00:00Z", KLAUD),
            edit("Klaud-Cold", "2026-12-01T09:00:00Z", &ann),
        ];
        assert!(matches!(
            &attribute(&changed_boxes(&ann), &history(forged), "Klaud-Cold")[..],
            [Attribution::Unknown(_)]
        ));
    }

    #[test]
    fn a_history_that_does_not_reach_the_change_names_nobody() {
        let ann = KLAUD.replace("[ ] retry", "[x] retry");
        let mut read = history(vec![edit("maintainer-ann", "2026-12-01T09:00:00Z", &ann)]);
        read.total = 250;
        let who = attribute(&changed_boxes(&ann), &read, "Klaud-Cold");
        assert!(
            matches!(&who[..], [Attribution::Unknown(why)] if why.contains("250 edits")),
            "{who:?}"
        );
        let empty = attribute(&changed_boxes(&ann), &EditHistory::default(), "Klaud-Cold");
        assert!(matches!(&empty[..], [Attribution::Unknown(_)]));
    }

    #[test]
    fn a_revision_without_text_or_an_unexplained_change_names_nobody() {
        let ann = KLAUD.replace("[ ] retry", "[x] retry");
        let mut textless = edit("maintainer-ann", "2026-12-01T09:00:00Z", &ann);
        textless.body = None;
        let edits = vec![edit("Klaud-Cold", "2026-12-01T08:00:00Z", KLAUD), textless];
        assert!(matches!(
            &attribute(&changed_boxes(&ann), &history(edits), "Klaud-Cold")[..],
            [Attribution::Unknown(_)]
        ));
        let only_klaud = vec![edit("Klaud-Cold", "2026-12-01T08:00:00Z", KLAUD)];
        assert!(matches!(
            &attribute(&changed_boxes(&ann), &history(only_klaud), "Klaud-Cold")[..],
            [Attribution::Unknown(_)]
        ));
    }
}
