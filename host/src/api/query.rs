//! Query-string values shared by list routes: pagination and dates. Errors name the parameter.
//!
//! Every query string is checked once before routing ([`QueryFairing`]): a parameter given more
//! than once is refused with `INVALID_REQUEST` naming it (which value was meant cannot be known),
//! and a parameter with an empty value (`?symbol=`) is dropped, so it means the same as absent.

use chrono::{NaiveDate, NaiveTime};
use rocket::fairing::{Fairing, Info, Kind};
use rocket::http::Method;
use rocket::http::uri::Origin;
use rocket::{Data, Request};
use serde::Serialize;

use crate::error::{ApiError, ApiResult};
use crate::ratelimit::OriginalPath;

/// Where a request refused before routing is sent; its error is in the request's cache.
pub const REFUSED_PATH: &str = "/__tradehost/refused";

/// The error of a request refused before routing.
#[derive(Debug, Clone, Default)]
pub struct RefusedBeforeRouting(pub Option<ApiError>);

#[rocket::async_trait]
impl<'r> rocket::request::FromRequest<'r> for RefusedBeforeRouting {
    type Error = std::convert::Infallible;

    async fn from_request(req: &'r Request<'_>) -> rocket::request::Outcome<Self, Self::Error> {
        rocket::request::Outcome::Success(req.local_cache(RefusedBeforeRouting::default).clone())
    }
}

/// What a query string comes to: the query without its empty parameters, or the refusal.
fn check_query(query: &str) -> Result<Option<String>, ApiError> {
    let mut seen: Vec<String> = Vec::new();
    let mut kept: Vec<&str> = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = rocket::http::RawStr::new(raw_name)
            .url_decode_lossy()
            .into_owned();
        if seen.contains(&name) {
            return Err(
                ApiError::invalid_field(&name, "given more than once; give it once")
                    .detail("in", "query"),
            );
        }
        seen.push(name);
        if !raw_value.is_empty() {
            kept.push(pair);
        }
    }
    Ok((kept.len() != seen.len() || query.split('&').any(str::is_empty)).then(|| kept.join("&")))
}

pub struct QueryFairing;

#[rocket::async_trait]
impl Fairing for QueryFairing {
    fn info(&self) -> Info {
        Info {
            name: "query strings",
            kind: Kind::Request,
        }
    }

    async fn on_request(&self, req: &mut Request<'_>, _: &mut Data<'_>) {
        // A request already rerouted (over its rate limit) is answered there. (Reading the
        // request's `OriginalPath` here would fix it to none before it could be set below.)
        if req.uri().path() == crate::ratelimit::LIMITED_PATH {
            return;
        }
        let Some(query) = req.uri().query().map(|q| q.as_str().to_string()) else {
            return;
        };
        let path = req.uri().path().as_str().to_string();
        match check_query(&query) {
            Ok(None) => {}
            Ok(Some(kept)) => {
                let uri = if kept.is_empty() {
                    path
                } else {
                    format!("{path}?{kept}")
                };
                if let Ok(origin) = Origin::parse_owned(uri) {
                    req.set_uri(origin);
                }
            }
            Err(err) => {
                req.local_cache(|| RefusedBeforeRouting(Some(err)));
                req.local_cache(|| OriginalPath(Some(path)));
                req.set_method(Method::Get);
                req.set_uri(Origin::parse(REFUSED_PATH).expect("static path"));
            }
        }
    }
}

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

#[derive(utoipa::ToSchema, Debug, Clone, Serialize, PartialEq, Eq)]
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
    fn repeated_parameters_are_refused_and_empty_ones_dropped() {
        assert_eq!(check_query("period=7d").unwrap(), None);
        assert_eq!(check_query("a=1&b=2").unwrap(), None);
        assert_eq!(check_query("a=1&b=").unwrap().as_deref(), Some("a=1"));
        assert_eq!(check_query("b=&a=1&c").unwrap().as_deref(), Some("a=1"));
        assert_eq!(check_query("a=1&&b=2").unwrap().as_deref(), Some("a=1&b=2"));
        assert_eq!(check_query("a=").unwrap().as_deref(), Some(""));
        let err = check_query("period=7d&period=x").unwrap_err();
        assert_eq!(
            err.details.get("field").and_then(|f| f.as_str()),
            Some("period")
        );
        // Names are compared decoded.
        let err = check_query("per%5Fpage=1&per_page=2").unwrap_err();
        assert_eq!(
            err.details.get("field").and_then(|f| f.as_str()),
            Some("per_page")
        );
        assert!(check_query("a=&a=1").is_err());
    }

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
