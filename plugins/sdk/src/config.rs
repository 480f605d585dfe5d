//! Typed access to a plugin's configuration.
//!
//! The host hands out configuration values as strings (already checked against the manifest's
//! schema). [`ConfigReader`] parses them with a default for unset keys. It reads through any
//! lookup function, so plugin code can be tested with a plain map instead of the host import.

use std::fmt;

/// A configuration value that is set but cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "config `{}`: {}", self.key, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Reads configuration values through `lookup`. Unset and blank values take the default.
pub struct ConfigReader<F> {
    lookup: F,
}

/// A reader over the host's `config` import (only meaningful inside a component). A value is
/// asked of the host once per instance: an instance's configuration never changes, and a
/// backtest calls one instance for a whole run.
pub fn from_host() -> ConfigReader<impl Fn(&str) -> Option<String>> {
    ConfigReader::new(|key: &str| {
        ASKED.with_borrow_mut(|asked| {
            if let Some(value) = asked.get(key) {
                return value.clone();
            }
            let value = crate::host::config(key);
            asked.insert(key.to_owned(), value.clone());
            value
        })
    })
}

thread_local! {
    static ASKED: std::cell::RefCell<std::collections::HashMap<String, Option<String>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

impl<F: Fn(&str) -> Option<String>> ConfigReader<F> {
    pub fn new(lookup: F) -> Self {
        Self { lookup }
    }

    /// The trimmed value of `key`, or `None` when it is unset or blank.
    pub fn raw(&self, key: &str) -> Option<String> {
        (self.lookup)(key)
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    }

    pub fn string(&self, key: &str, default: &str) -> String {
        self.raw(key).unwrap_or_else(|| default.to_owned())
    }

    pub fn integer(&self, key: &str, default: i64) -> Result<i64, ConfigError> {
        match self.raw(key) {
            None => Ok(default),
            Some(value) => value
                .parse()
                .map_err(|_| error(key, format!("expected an integer, got `{value}`"))),
        }
    }

    /// A finite number.
    pub fn number(&self, key: &str, default: f64) -> Result<f64, ConfigError> {
        match self.raw(key) {
            None => Ok(default),
            Some(value) => match value.parse::<f64>() {
                Ok(number) if number.is_finite() => Ok(number),
                _ => Err(error(
                    key,
                    format!("expected a finite number, got `{value}`"),
                )),
            },
        }
    }

    /// `true` or `false` (any letter case).
    pub fn boolean(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        match self.raw(key) {
            None => Ok(default),
            Some(value) if value.eq_ignore_ascii_case("true") => Ok(true),
            Some(value) if value.eq_ignore_ascii_case("false") => Ok(false),
            Some(value) => Err(error(key, format!("expected true or false, got `{value}`"))),
        }
    }

    /// An integer within `min..=max`, as a count or period.
    pub fn integer_in(
        &self,
        key: &str,
        default: i64,
        min: i64,
        max: i64,
    ) -> Result<i64, ConfigError> {
        let value = self.integer(key, default)?;
        if (min..=max).contains(&value) {
            Ok(value)
        } else {
            Err(error(key, format!("{value} is outside {min}..={max}")))
        }
    }

    /// A finite number within `min..=max`.
    pub fn number_in(
        &self,
        key: &str,
        default: f64,
        min: f64,
        max: f64,
    ) -> Result<f64, ConfigError> {
        let value = self.number(key, default)?;
        if (min..=max).contains(&value) {
            Ok(value)
        } else {
            Err(error(key, format!("{value} is outside {min}..={max}")))
        }
    }
}

fn error(key: &str, message: String) -> ConfigError {
    ConfigError {
        key: key.to_owned(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn reader(pairs: &[(&str, &str)]) -> ConfigReader<impl Fn(&str) -> Option<String>> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        ConfigReader::new(move |key: &str| map.get(key).cloned())
    }

    #[test]
    fn unset_and_blank_values_take_the_default() {
        let config = reader(&[("blank", "  ")]);
        assert_eq!(config.integer("missing", 9), Ok(9));
        assert_eq!(config.integer("blank", 9), Ok(9));
        assert_eq!(config.number("missing", 1.5), Ok(1.5));
        assert_eq!(config.boolean("missing", true), Ok(true));
        assert_eq!(config.string("missing", "1m"), "1m");
    }

    #[test]
    fn values_are_parsed_and_trimmed() {
        let config = reader(&[
            ("period", " 21 "),
            ("pct", "2.5"),
            ("short", "FALSE"),
            ("interval", "5m"),
        ]);
        assert_eq!(config.integer("period", 9), Ok(21));
        assert_eq!(config.number("pct", 1.0), Ok(2.5));
        assert_eq!(config.boolean("short", true), Ok(false));
        assert_eq!(config.string("interval", "1m"), "5m");
    }

    #[test]
    fn malformed_values_are_errors_naming_the_key() {
        let config = reader(&[("period", "nine"), ("pct", "NaN"), ("short", "yes")]);
        let err = config.integer("period", 9).unwrap_err();
        assert_eq!(err.key, "period");
        assert_eq!(
            err.to_string(),
            "config `period`: expected an integer, got `nine`"
        );
        assert!(config.number("pct", 1.0).is_err());
        assert!(config.boolean("short", true).is_err());
    }

    #[test]
    fn ranges_are_enforced() {
        let config = reader(&[("period", "1"), ("pct", "150")]);
        assert!(config.integer_in("period", 9, 2, 200).is_err());
        assert!(config.number_in("pct", 2.0, 0.0, 100.0).is_err());
        assert_eq!(config.integer_in("other", 9, 2, 200), Ok(9));
    }
}
