//! Timestamps as GitHub writes them (RFC 3339, UTC, `Z`, whole seconds) and the parsing of the
//! `created` filter's dates, without a date library.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Seconds since the Unix epoch, UTC. Serialized as `2024-05-01T12:00:00Z`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

pub const MINUTE: i64 = 60;
pub const HOUR: i64 = 60 * MINUTE;
pub const DAY: i64 = 24 * HOUR;

impl Timestamp {
    /// The system clock, for states that do not pin "now".
    pub fn system_now() -> Self {
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_secs() as i64)
            .unwrap_or(0);
        Timestamp(seconds)
    }

    pub fn plus(self, seconds: i64) -> Self {
        Timestamp(self.0 + seconds)
    }

    pub fn minus(self, seconds: i64) -> Self {
        Timestamp(self.0 - seconds)
    }

    /// Parses `YYYY-MM-DDTHH:MM:SSZ` (also `+00:00`, fractional seconds ignored) or a bare
    /// `YYYY-MM-DD` (midnight UTC).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (date, time) = match text.split_once('T') {
            Some((date, time)) => (date, Some(time)),
            None => (text, None),
        };
        let mut date_parts = date.split('-');
        let year: i64 = date_parts.next()?.parse().ok()?;
        let month: i64 = date_parts.next()?.parse().ok()?;
        let day: i64 = date_parts.next()?.parse().ok()?;
        if date_parts.next().is_some() || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
            return None;
        }
        let mut seconds = days_from_civil(year, month, day) * DAY;
        if let Some(time) = time {
            let (clock, offset) = split_offset(time)?;
            let clock = clock.split('.').next()?;
            let mut clock_parts = clock.split(':');
            let hours: i64 = clock_parts.next()?.parse().ok()?;
            let minutes: i64 = clock_parts.next()?.parse().ok()?;
            let secs: i64 = clock_parts.next().unwrap_or("0").parse().ok()?;
            seconds += hours * HOUR + minutes * MINUTE + secs - offset;
        }
        Some(Timestamp(seconds))
    }

    /// Whether the text is a bare date (the `created` filter then means the whole day).
    pub fn is_bare_date(text: &str) -> bool {
        !text.contains('T')
    }
}

/// Splits `12:00:00Z` / `12:00:00+02:00` into the clock part and the offset in seconds.
fn split_offset(time: &str) -> Option<(&str, i64)> {
    if let Some(clock) = time.strip_suffix('Z') {
        return Some((clock, 0));
    }
    if let Some(position) = time.rfind(['+', '-']) {
        let (clock, offset) = time.split_at(position);
        let sign = if offset.starts_with('-') { -1 } else { 1 };
        let (hours, minutes) = offset[1..].split_once(':')?;
        let hours: i64 = hours.parse().ok()?;
        let minutes: i64 = minutes.parse().ok()?;
        return Some((clock, sign * (hours * HOUR + minutes * MINUTE)));
    }
    Some((time, 0))
}

impl fmt::Display for Timestamp {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.0.div_euclid(DAY);
        let seconds_of_day = self.0.rem_euclid(DAY);
        let (year, month, day) = civil_from_days(days);
        write!(
            formatter,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
            seconds_of_day / HOUR,
            (seconds_of_day % HOUR) / MINUTE,
            seconds_of_day % MINUTE
        )
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Timestamp::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not an RFC 3339 time: {text}")))
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
