//! Query-string values shared by list routes: pagination and dates. Errors name the parameter.

use chrono::{NaiveDate, NaiveTime};
use serde::Serialize;

use crate::error::{ApiError, ApiResult};

/// A validated page request: `page` ≥ 1; `per_page` clamped to the route's maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub page: i64,
    pub per_page: i64,
}

impl Page {
    pub fn parse(
        page: Option<&str>,
        per_page: Option<&str>,
        default_per_page: i64,
        max_per_page: i64,
    ) -> ApiResult<Page> {
        let page = match page {
            None => 1,
            Some(raw) => match raw.trim().parse::<i64>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    return Err(ApiError::invalid_field(
                        "page",
                        "must be an integer of at least 1",
                    ));
                }
            },
        };
        let per_page = match per_page {
            None => default_per_page,
            Some(raw) => match raw.trim().parse::<i64>() {
                Ok(n) if n >= 1 => n.min(max_per_page),
                _ => {
                    return Err(ApiError::invalid_field(
                        "per_page",
                        "must be an integer of at least 1",
                    ));
                }
            },
        };
        Ok(Page { page, per_page })
    }

    pub fn offset(&self) -> i64 {
        (self.page - 1).saturating_mul(self.per_page)
    }

    pub fn info(&self, total_items: i64) -> Pagination {
        let total_pages = if total_items == 0 {
            0
        } else {
            (total_items + self.per_page - 1) / self.per_page
        };
        Pagination {
            page: self.page,
            per_page: self.per_page,
            total_items,
            total_pages,
            has_next: self.page < total_pages,
            has_prev: self.page > 1,
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Pagination {
    pub page: i64,
    pub per_page: i64,
    pub total_items: i64,
    pub total_pages: i64,
    pub has_next: bool,
    pub has_prev: bool,
}

/// A date or timestamp parameter as epoch milliseconds. `YYYY-MM-DD` means the start of that day
/// (UTC), or with `end_of_day` the start of the next, so an end date includes its whole day.
pub fn parse_time(field: &str, raw: Option<&str>, end_of_day: bool) -> ApiResult<Option<i64>> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    if let Ok(stamp) = chrono::DateTime::parse_from_rfc3339(raw) {
        return Ok(Some(stamp.timestamp_millis()));
    }
    if let Ok(date) = NaiveDate::parse_from_str(raw, "%Y-%m-%d") {
        let date = if end_of_day {
            date.succ_opt().unwrap_or(date)
        } else {
            date
        };
        return Ok(Some(
            date.and_time(NaiveTime::MIN).and_utc().timestamp_millis(),
        ));
    }
    Err(ApiError::invalid_field(
        field,
        "must be an ISO 8601 date (YYYY-MM-DD) or timestamp",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_validated_and_clamped() {
        assert_eq!(
            Page::parse(None, None, 50, 100).unwrap(),
            Page {
                page: 1,
                per_page: 50
            }
        );
        assert_eq!(
            Page::parse(Some("3"), Some("1000"), 50, 100).unwrap(),
            Page {
                page: 3,
                per_page: 100
            }
        );
        for (page, per_page, field) in [
            (Some("0"), None, "page"),
            (Some("x"), None, "page"),
            (Some("1.5"), None, "page"),
            (None, Some("0"), "per_page"),
        ] {
            assert_eq!(
                Page::parse(page, per_page, 50, 100).unwrap_err().details["field"],
                field
            );
        }
        let info = Page {
            page: 2,
            per_page: 10,
        }
        .info(25);
        assert_eq!(
            (info.total_pages, info.has_next, info.has_prev),
            (3, true, true)
        );
        assert_eq!(
            Page {
                page: 1,
                per_page: 10
            }
            .info(0)
            .total_pages,
            0
        );
        assert_eq!(
            Page {
                page: 3,
                per_page: 10
            }
            .offset(),
            20
        );
    }

    #[test]
    fn dates() {
        assert_eq!(
            parse_time("d", Some("2026-01-02"), false).unwrap(),
            Some(1_767_312_000_000)
        );
        assert_eq!(
            parse_time("d", Some("2026-01-02"), true).unwrap(),
            Some(1_767_398_400_000)
        );
        assert_eq!(
            parse_time("d", Some("2026-01-02T00:00:01Z"), false).unwrap(),
            Some(1_767_312_001_000)
        );
        assert_eq!(parse_time("d", None, false).unwrap(), None);
        assert_eq!(
            parse_time("start_date", Some("yesterday"), false)
                .unwrap_err()
                .details["field"],
            "start_date"
        );
    }
}
