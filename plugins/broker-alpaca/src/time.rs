//! Alpaca's timestamps (RFC 3339, `2021-05-10T14:01:04.650275Z`, fractions up to nanoseconds,
//! `Z` or an offset) as Unix milliseconds, and back.

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn number(text: &str) -> Option<i64> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// Unix milliseconds of an RFC 3339 timestamp (a bare date is its midnight UTC).
pub fn parse_ms(text: &str) -> Option<i64> {
    let text = text.trim();
    let (date, rest) = text.split_at_checked(10)?;
    let mut parts = date.split('-');
    let (year, month, day) = (
        number(parts.next()?)?,
        number(parts.next()?)?,
        number(parts.next()?)?,
    );
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    if rest.is_empty() {
        return Some(days * 86_400_000);
    }
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    let (clock, zone) = match rest.find(['Z', 'z', '+', '-']) {
        Some(at) => rest.split_at(at),
        None => return None,
    };
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut fields = hms.split(':');
    let (hour, minute, second) = (
        number(fields.next()?)?,
        number(fields.next()?)?,
        number(fields.next()?)?,
    );
    let millis = if fraction.is_empty() {
        0
    } else {
        let digits: String = fraction.chars().chain("000".chars()).take(3).collect();
        number(&digits)?
    };
    let offset_minutes = match zone {
        "Z" | "z" => 0,
        _ => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let (h, m) = zone[1..].split_once(':')?;
            sign * (number(h)? * 60 + number(m)?)
        }
    };
    Some(((days * 24 + hour) * 60 + minute - offset_minutes) * 60_000 + second * 1_000 + millis)
}

/// `2024-03-01T12:00:00Z`: whole seconds, UTC (the form Alpaca's query parameters take).
pub fn format_seconds(ms: i64) -> String {
    let seconds = ms.div_euclid(1_000);
    let (days, of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3_600,
        of_day % 3_600 / 60,
        of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_as_alpaca_writes_them() {
        assert_eq!(parse_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_ms("2021-05-10T14:01:04.650275Z"),
            Some(1_620_655_264_650)
        );
        assert_eq!(
            parse_ms("2022-02-02T13:55:09.981587456Z"),
            Some(1_643_810_109_981)
        );
        assert_eq!(
            parse_ms("2021-05-10T10:01:04.650-04:00"),
            parse_ms("2021-05-10T14:01:04.650Z")
        );
        assert_eq!(parse_ms("2022-08-12"), Some(1_660_262_400_000));
        assert_eq!(parse_ms("yesterday"), None);
        assert_eq!(format_seconds(1_620_655_264_650), "2021-05-10T14:01:04Z");
        assert_eq!(format_seconds(0), "1970-01-01T00:00:00Z");
        for ms in [0, 951_782_400_000, 1_709_294_400_000, 4_102_444_800_000] {
            assert_eq!(parse_ms(&format_seconds(ms)), Some(ms));
        }
    }
}
