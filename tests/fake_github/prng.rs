//! Deterministic randomness and identifiers: a splitmix64 generator for seeded faults and the
//! benchmark scenario, and stable fake ids (git shas, user ids) derived from their inputs.

/// splitmix64: tiny, fast, and good enough to spread seeded decisions.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.state)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[low, high]` (inclusive).
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low + 1)
    }

    pub fn chance(&mut self, probability: f64) -> bool {
        self.next_unit() < probability
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next_u64() % items.len() as u64) as usize]
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for index in (1..items.len()).rev() {
            let other = (self.next_u64() % (index as u64 + 1)) as usize;
            items.swap(index, other);
        }
    }
}

/// The splitmix64 finalizer: a bijective scramble of 64 bits.
pub fn mix(value: u64) -> u64 {
    let mut value = value;
    value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    value ^ (value >> 31)
}

/// FNV-1a over the bytes, then mixed: a stable 64-bit fingerprint of a string.
pub fn fingerprint(text: &str) -> u64 {
    let mut hash: u64 = 0xCBF2_9CE4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01B3);
    }
    mix(hash)
}

/// A 40-hex object id derived from the given parts (not git's sha1, but stable and unique enough).
pub fn object_id(parts: &[&str]) -> String {
    let joined = parts.join("\u{0}");
    let first = fingerprint(&joined);
    let second = mix(first ^ 0xA5A5_A5A5_A5A5_A5A5);
    let third = mix(second.wrapping_add(joined.len() as u64));
    format!("{first:016x}{second:016x}{:08x}", third >> 32)
}

/// A stable numeric user id for a login, as GitHub gives every account one.
pub fn user_id(login: &str) -> u64 {
    1_000_000 + fingerprint(&login.to_ascii_lowercase()) % 90_000_000
}
