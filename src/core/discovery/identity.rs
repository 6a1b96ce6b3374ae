//! Identities of discovery (contract §11): canonical JSON (keys sorted, no whitespace, non-ASCII
//! escaped as `\uXXXX`), `identity(x)` — the lowercase hex SHA-256 of `x` as canonical JSON —
//! and the ids built from it: a discovered candidate's id and the reference system's coarse id of
//! a family. They are the reference system's, so a repository moving to klaud keeps its branches
//! and claims.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// `value` as canonical JSON: object keys sorted by code point, no whitespace, every character
/// outside printable ASCII escaped as `\uXXXX` (lowercase hex; a surrogate pair beyond the Basic
/// Multilingual Plane), numbers in their shortest round-trip form.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => out.push_str(&value.to_string()),
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(&fields[key.as_str()], out);
            }
            out.push('}');
        }
    }
}

fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            ' '..='~' => out.push(character),
            _ => {
                let mut units = [0u16; 2];
                for unit in character.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// The lowercase hex SHA-256 of `value` as canonical JSON (a string hashes with its quotes).
pub fn identity(value: &Value) -> String {
    let digest = Sha256::digest(canonical_json(value).as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `identity` of a string.
pub fn identity_of_text(text: &str) -> String {
    identity(&Value::String(text.to_string()))
}

/// A discovered candidate's id: `identity(family)[:16] + "-" + identity(normalised image)[:16]`.
pub fn candidate_id(family: &str, normalised_image: &str) -> String {
    format!(
        "{}-{}",
        &identity_of_text(family)[..16],
        &identity_of_text(normalised_image)[..16]
    )
}

/// The family part of a discovered candidate's id (`identity(family)[:16]`).
pub fn family_id(family: &str) -> String {
    identity_of_text(family)[..16].to_string()
}

/// The family part of a candidate id of the discovered shape (16 hex digits, `-`, 16 hex
/// digits), or `None` for an id of another shape.
pub fn family_id_of_candidate(candidate: &str) -> Option<&str> {
    let (family, image) = candidate.split_once('-')?;
    let hex16 = |part: &str| {
        part.len() == 16
            && part
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    };
    (hex16(family) && hex16(image)).then_some(family)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn canonical_json_sorts_keys_drops_whitespace_and_escapes_non_ascii() {
        let value = json!({"b": [1, true, null], "a": "é\u{1F600}\n\"", "A": {"z": 1.5, "y": -2}});
        assert_eq!(
            canonical_json(&value),
            r#"{"A":{"y":-2,"z":1.5},"a":"\u00e9\ud83d\ude00\n\"","b":[1,true,null]}"#
        );
    }

    #[test]
    fn a_string_hashes_with_its_quotes() {
        // sha256 of the 5 bytes `"abc"`, computed independently:
        // printf '"abc"' | sha256sum
        assert_eq!(
            identity_of_text("abc"),
            "6cc43f858fbb763301637b5af970e2a46b46f461f27e5a0f41e009c59b827b25"
        );
    }

    #[test]
    fn a_candidate_id_is_two_sixteen_digit_halves() {
        let id = candidate_id("configs/nvidia-master.yaml:x", "nvcr.io/nvidia/x:1");
        assert_eq!(id.len(), 33);
        assert_eq!(family_id_of_candidate(&id), Some(&id[..16]));
        assert_eq!(family_id("configs/nvidia-master.yaml:x"), id[..16]);
        assert_eq!(family_id_of_candidate("c1"), None);
        assert_eq!(family_id_of_candidate("0123456789abcdef-0123"), None);
        assert_eq!(
            family_id_of_candidate("0123456789ABCDEF-0123456789abcdef"),
            None
        );
    }
}
