//! Candles from CSV text and times from what people write: every refusal names its line.

use chrono::{DateTime, NaiveDate, NaiveDateTime};

use crate::plugins::bindings::types::Candle;

/// The most bad rows one refusal lists.
pub const MAX_ROW_ERRORS: usize = 20;

/// A row of a CSV file that is not a candle.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RowError {
    pub line: u64,
    pub reason: String,
}

/// A moment as epoch milliseconds: an RFC 3339 time (`2024-01-01T00:00:00Z`), a UTC date and time
/// (`2024-01-01 00:00:00`), a UTC date (`2024-01-01`), or an integer count of epoch milliseconds,
/// or of seconds when below 10¹¹ (a count of milliseconds that small would be before 1973).
pub fn parse_time(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(number) = text.parse::<i64>() {
        return Some(if number.abs() < 100_000_000_000 {
            number.checked_mul(1000)?
        } else {
            number
        });
    }
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return Some(time.timestamp_millis());
    }
    for format in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"] {
        if let Ok(time) = NaiveDateTime::parse_from_str(text, format) {
            return Some(time.and_utc().timestamp_millis());
        }
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .map(|date| {
            date.and_time(Default::default())
                .and_utc()
                .timestamp_millis()
        })
}

/// Parses CSV rows of `timestamp, open, high, low, close, volume` (further columns are ignored,
/// as in exchanges' kline dumps; a first row that is not a candle is a header), each candle on
/// a boundary of the interval. Returns the candles sorted by time, or every bad row (up to
/// [`MAX_ROW_ERRORS`]) when any is bad: a file is imported whole or not at all.
pub fn candles_from_csv(text: &[u8], interval_ms: i64) -> Result<Vec<Candle>, Vec<RowError>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text);
    let mut rows: Vec<(u64, Candle)> = Vec::new();
    let mut errors = Vec::new();
    let mut record = csv::ByteRecord::new();
    let mut first = true;
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(err) => {
                let line = err.position().map_or(0, |p| p.line());
                errors.push(RowError {
                    line,
                    reason: format!("not readable as CSV: {err}"),
                });
                break;
            }
        }
        let line = record.position().map_or(0, |p| p.line());
        if record.iter().all(|field| field.is_empty()) {
            continue;
        }
        let is_first = std::mem::replace(&mut first, false);
        match candle_of(&record, interval_ms) {
            Ok(candle) => rows.push((line, candle)),
            // A header names its columns; its first field is no time.
            Err(_) if is_first && looks_like_header(&record) => {}
            Err(reason) => {
                errors.push(RowError { line, reason });
                if errors.len() >= MAX_ROW_ERRORS {
                    break;
                }
            }
        }
    }
    if errors.is_empty() {
        rows.sort_by_key(|(_, candle)| candle.timestamp_ms);
        for pair in rows.windows(2) {
            let ((earlier, a), (later, b)) = (&pair[0], &pair[1]);
            if a.timestamp_ms == b.timestamp_ms {
                let (first, second) = (earlier.min(later), earlier.max(later));
                errors.push(RowError {
                    line: *second,
                    reason: format!("the same time as line {first}"),
                });
                if errors.len() >= MAX_ROW_ERRORS {
                    break;
                }
            }
        }
    }
    if !errors.is_empty() {
        errors.sort_by_key(|error| error.line);
        return Err(errors);
    }
    if rows.is_empty() {
        return Err(vec![RowError {
            line: 0,
            reason: "the file holds no candles".into(),
        }]);
    }
    Ok(rows.into_iter().map(|(_, candle)| candle).collect())
}

fn looks_like_header(record: &csv::ByteRecord) -> bool {
    record
        .get(0)
        .is_some_and(|field| field.iter().any(u8::is_ascii_alphabetic))
}

fn candle_of(record: &csv::ByteRecord, interval_ms: i64) -> Result<Candle, String> {
    if record.len() < 6 {
        return Err(format!(
            "{} columns; a candle has 6 (timestamp, open, high, low, close, volume)",
            record.len()
        ));
    }
    let field = |i: usize| std::str::from_utf8(&record[i]).map_err(|_| "not UTF-8".to_string());
    let stamp = field(0)?;
    let timestamp_ms =
        parse_time(stamp).ok_or_else(|| format!("timestamp {stamp:?} is not a time"))?;
    if timestamp_ms.rem_euclid(interval_ms) != 0 {
        return Err(format!(
            "timestamp {stamp} is not on a boundary of the interval ({} s)",
            interval_ms / 1000
        ));
    }
    let number = |i: usize, name: &str| -> Result<f64, String> {
        let text = field(i)?;
        text.parse::<f64>()
            .ok()
            .filter(|value| value.is_finite())
            .ok_or_else(|| format!("{name} {text:?} is not a number"))
    };
    let (open, high, low, close) = (
        number(1, "open")?,
        number(2, "high")?,
        number(3, "low")?,
        number(4, "close")?,
    );
    let volume = number(5, "volume")?;
    for (name, price) in [
        ("open", open),
        ("high", high),
        ("low", low),
        ("close", close),
    ] {
        if price <= 0.0 {
            return Err(format!("{name} {price} is not above zero"));
        }
    }
    if volume < 0.0 {
        return Err(format!("volume {volume} is negative"));
    }
    if high < open.max(close) || low > open.min(close) {
        return Err(format!(
            "the range {low}..{high} does not hold open {open} and close {close}"
        ));
    }
    Ok(Candle {
        timestamp_ms,
        open,
        high,
        low,
        close,
        volume,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIVE_MINUTES: i64 = 300_000;
    const JAN_1: i64 = 1_704_067_200_000;

    #[test]
    fn times_are_read_in_every_form_people_write_them() {
        assert_eq!(parse_time("2024-01-01T00:00:00Z"), Some(JAN_1));
        assert_eq!(parse_time("2024-01-01T01:00:00+01:00"), Some(JAN_1));
        assert_eq!(
            parse_time("2024-01-01 00:05:00"),
            Some(JAN_1 + FIVE_MINUTES)
        );
        assert_eq!(parse_time("2024-01-01"), Some(JAN_1));
        assert_eq!(parse_time("1704067200000"), Some(JAN_1));
        assert_eq!(parse_time("1704067200"), Some(JAN_1));
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(parse_time("2024-13-01"), None);
    }

    #[test]
    fn a_file_with_a_header_gives_its_candles_in_time_order() {
        let text = b"timestamp,open,high,low,close,volume\n\
            1704067500000,101,102,100,101.5,3\n\
            \n\
            2024-01-01T00:00:00Z, 100, 101, 99, 100.5, 2.5\n";
        let candles = candles_from_csv(text, FIVE_MINUTES).unwrap();
        assert_eq!(candles.len(), 2);
        assert_eq!(candles[0].timestamp_ms, JAN_1);
        assert_eq!(candles[0].close, 100.5);
        assert_eq!(candles[1].timestamp_ms, JAN_1 + FIVE_MINUTES);
        // Extra columns, as in an exchange's kline dump, are ignored.
        let wide = b"1704067200000,1,2,0.5,1.5,10,1704067499999,15.0,42\n";
        assert_eq!(candles_from_csv(wide, FIVE_MINUTES).unwrap().len(), 1);
    }

    #[test]
    fn every_bad_row_is_named_with_its_line() {
        let text = b"timestamp,open,high,low,close,volume\n\
            1704067200000,100,101,99,100.5,1\n\
            1704067260000,100,101,99,100.5,1\n\
            1704067500000,100,99,98,100.5,1\n\
            1704067800000,abc,101,99,100.5,1\n\
            1704068100000,100,101,99\n\
            1704068400000,100,101,99,100.5,-1\n\
            1704068700000,0,101,99,100.5,1\n\
            1704067200000,100,101,99,100.5,1\n";
        let errors = candles_from_csv(text, FIVE_MINUTES).unwrap_err();
        let lines: Vec<u64> = errors.iter().map(|e| e.line).collect();
        // The duplicate of line 2 on line 9 is found once every row reads as a candle.
        assert_eq!(lines, [3, 4, 5, 6, 7, 8], "{errors:?}");
        assert!(errors[0].reason.contains("boundary"), "{errors:?}");
        assert!(errors[1].reason.contains("range"), "{errors:?}");
        assert!(errors[2].reason.contains("open \"abc\""), "{errors:?}");
        assert!(errors[3].reason.contains("4 columns"), "{errors:?}");
        assert!(errors[4].reason.contains("volume"), "{errors:?}");
        assert!(errors[5].reason.contains("open 0"), "{errors:?}");

        let repeated = b"1704067200000,100,101,99,100.5,1\n1704067200000,100,101,99,100.5,1\n";
        let errors = candles_from_csv(repeated, FIVE_MINUTES).unwrap_err();
        assert_eq!(
            errors,
            [RowError {
                line: 2,
                reason: "the same time as line 1".into()
            }]
        );
        // A header anywhere but first is a bad row.
        let late_header = b"1704067200000,100,101,99,100.5,1\ntime,open,high,low,close,volume\n";
        assert_eq!(
            candles_from_csv(late_header, FIVE_MINUTES).unwrap_err()[0].line,
            2
        );
        assert!(candles_from_csv(b"timestamp,open,high,low,close,volume\n", FIVE_MINUTES).is_err());
    }

    #[test]
    fn a_refusal_lists_at_most_its_limit() {
        let text = "x,1,1,1,1,1\n".repeat(MAX_ROW_ERRORS * 3);
        let errors = candles_from_csv(text.as_bytes(), FIVE_MINUTES).unwrap_err();
        assert_eq!(errors.len(), MAX_ROW_ERRORS);
    }
}
