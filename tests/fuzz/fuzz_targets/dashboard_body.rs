//! A dashboard issue's body as `recover` and `status` read it (anyone with access to the issue
//! writes it): any text reads as boxes without a panic, each box's request is the one its key
//! and tick ask, a box drawn again as klaud draws it reads back as the same box, and a body
//! whose boxes a person changed names exactly those.
#![no_main]

use klaud::core::dashboard::checkbox::{BoxKey, RenderedBox, changed_boxes, read_boxes};
use klaud::core::steering::Request;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    let boxes = read_boxes(body);
    let changed = changed_boxes(body);
    assert_eq!(
        changed.len(),
        boxes.values().filter(|read| read.changed()).count()
    );
    for (key, read) in &boxes {
        assert_eq!(&read.key, key);
        match (key, key.request(read.ticked)) {
            (BoxKey::Pause, Request::Pause) => assert!(read.ticked),
            (BoxKey::Pause, Request::Unpause) => assert!(!read.ticked),
            (BoxKey::RetryNow(a), Request::RetryNow(b))
            | (BoxKey::ResumeNow(a), Request::ResumeNow(b))
            | (BoxKey::ReleaseHold(a), Request::ReleaseHold(b)) => assert_eq!(a, &b),
            (BoxKey::RetryAftercare(a), Request::RetryAftercare(b)) => assert_eq!(*a, b),
            (key, request) => panic!("{key:?} asks {request:?}"),
        }
        // Drawn again by klaud, with the label a hostile body can give it, it reads back alike.
        let line = RenderedBox {
            key: key.clone(),
            rendered_ticked: read.rendered_ticked,
            shown_ticked: read.ticked,
            label: "a label".to_string(),
        }
        .line();
        let again = read_boxes(&line);
        assert_eq!(again.len(), 1, "{line}");
        assert_eq!(&again[key], read, "{line}");
    }
});
