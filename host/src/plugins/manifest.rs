//! A plugin's manifest (`plugin.toml`): who it is, which world it implements, the configuration
//! it accepts and, for brokers, the hosts it may reach.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::PluginKind;

#[derive(utoipa::ToSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub kind: PluginKind,
    pub version: String,
    #[serde(default)]
    pub display_name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    #[serde(default)]
    pub config: BTreeMap<String, ConfigField>,
    /// A strategy's promise that each symbol's signals depend on that symbol's candles and
    /// position, the account and its own entries of the state alone, and come in the order of
    /// the symbols: a backtest may then evaluate groups of a run's symbols on separate cores
    /// and get the signals one instance would give.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub independent_symbols: bool,
    /// A broker's key in its store for the order a client id names, `{client_order_id}`
    /// standing for the id (`order/{client_order_id}`). The engine sends a client id to
    /// `place-order` once, after writing the order to its books; while it does, that key is
    /// known to be absent, and the plugin's check for an earlier order with the id reads no
    /// database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_key: Option<String>,
}

/// What stands for the client id in a broker's `order_key`.
pub const CLIENT_ORDER_ID: &str = "{client_order_id}";

#[derive(utoipa::ToSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigField {
    #[serde(rename = "type")]
    pub value_type: ConfigType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

#[derive(utoipa::ToSchema, Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigType {
    Integer,
    Number,
    String,
    Boolean,
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
}

fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// A JSON or TOML scalar as the string a plugin reads through `host.config`.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl Manifest {
    pub fn from_toml(text: &str) -> Result<Self, String> {
        let manifest: Manifest =
            toml::from_str(text).map_err(|err| format!("invalid manifest: {err}"))?;
        manifest.validate()?;
        Ok(manifest)
    }

    pub fn validate(&self) -> Result<(), String> {
        if !valid_name(&self.name) {
            return Err(format!(
                "manifest name {:?} must be 1-64 lowercase letters, digits or '-'",
                self.name
            ));
        }
        // A semantic version (it also names the stored file, so nothing like `../x` gets through).
        if self.version.len() > 64 || semver::Version::parse(&self.version).is_err() {
            return Err(format!(
                "manifest version {:?} is not a semantic version such as 1.2.0",
                self.version
            ));
        }
        if self.kind != PluginKind::Broker && !self.allowed_hosts.is_empty() {
            return Err("only brokers may declare allowed_hosts".into());
        }
        if self.kind != PluginKind::Strategy && self.independent_symbols {
            return Err("only strategies may declare independent_symbols".into());
        }
        if let Some(key) = &self.order_key {
            if self.kind != PluginKind::Broker {
                return Err("only brokers may declare order_key".into());
            }
            let rest = key.replacen(CLIENT_ORDER_ID, "", 1);
            if !key.contains(CLIENT_ORDER_ID)
                || rest.contains(CLIENT_ORDER_ID)
                || rest.len() > 64
                || !super::storage::valid_key(&key.replacen(CLIENT_ORDER_ID, "id", 1))
            {
                return Err(format!(
                    "order_key {key:?} must hold {CLIENT_ORDER_ID} once, with at most 64 other \
                     bytes of printable ASCII"
                ));
            }
        }
        if let Some(host) = self.allowed_hosts.iter().find(|h| !valid_host(h)) {
            return Err(format!("allowed host {host:?} is not a host name"));
        }
        for (key, field) in &self.config {
            if !valid_name(&key.replace('_', "-")) {
                return Err(format!(
                    "config key {key:?} must be lowercase letters, digits, '-' or '_'"
                ));
            }
            if let Some(default) = &field.default {
                let text = scalar_text(default)
                    .ok_or_else(|| format!("config.{key}.default must be a scalar"))?;
                field.check(key, &text)?;
            }
        }
        Ok(())
    }

    /// The configuration a plugin sees: operator values checked against the schema, defaults for
    /// the rest. Unknown keys and ill-typed values are refused with the key named.
    pub fn resolve_config(
        &self,
        values: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, String> {
        if let Some(unknown) = values.keys().find(|key| !self.config.contains_key(*key)) {
            return Err(format!(
                "{} has no configuration key {unknown:?}",
                self.name
            ));
        }
        let mut resolved = BTreeMap::new();
        for (key, field) in &self.config {
            let value = match values.get(key) {
                Some(value) => value.clone(),
                None => match field.default.as_ref().and_then(scalar_text) {
                    Some(default) => default,
                    None => continue,
                },
            };
            field.check(key, &value)?;
            resolved.insert(key.clone(), value);
        }
        Ok(resolved)
    }
}

impl ConfigField {
    fn check(&self, key: &str, value: &str) -> Result<(), String> {
        let number = match self.value_type {
            ConfigType::Integer => Some(
                value
                    .trim()
                    .parse::<i64>()
                    .map_err(|_| format!("{key} must be an integer, got {value:?}"))?
                    as f64,
            ),
            ConfigType::Number => {
                let n = value
                    .trim()
                    .parse::<f64>()
                    .map_err(|_| format!("{key} must be a number, got {value:?}"))?;
                if !n.is_finite() {
                    return Err(format!("{key} must be a finite number"));
                }
                Some(n)
            }
            ConfigType::Boolean => {
                if value != "true" && value != "false" {
                    return Err(format!("{key} must be true or false, got {value:?}"));
                }
                None
            }
            ConfigType::String => {
                if value.len() > 4096 {
                    return Err(format!("{key} is longer than 4096 bytes"));
                }
                None
            }
        };
        let out_of_range = number.is_some_and(|n| {
            self.min.is_some_and(|min| n < min) || self.max.is_some_and(|max| n > max)
        });
        if out_of_range {
            return Err(format!(
                "{key} must be between {} and {}",
                self.min.unwrap_or(f64::MIN),
                self.max.unwrap_or(f64::MAX)
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMA: &str = r#"
        name = "ema-cross"
        kind = "strategy"
        version = "0.1.0"
        display_name = "EMA crossover"
        [config.fast_period]
        type = "integer"
        default = "9"
        min = 2
        max = 200
        [config.size_pct]
        type = "number"
        default = 2.0
        [config.allow_short]
        type = "boolean"
        default = true
    "#;

    #[test]
    fn parses_and_resolves_config() {
        let manifest = Manifest::from_toml(EMA).unwrap();
        assert_eq!(manifest.kind, PluginKind::Strategy);
        let defaults = manifest.resolve_config(&BTreeMap::new()).unwrap();
        assert_eq!(defaults["fast_period"], "9");
        assert_eq!(defaults["size_pct"], "2.0");
        assert_eq!(defaults["allow_short"], "true");
        let set = BTreeMap::from([("fast_period".to_string(), "12".to_string())]);
        assert_eq!(manifest.resolve_config(&set).unwrap()["fast_period"], "12");
    }

    #[test]
    fn refuses_bad_config_and_manifests() {
        let manifest = Manifest::from_toml(EMA).unwrap();
        for (key, value) in [
            ("fast_period", "1"),
            ("fast_period", "x"),
            ("size_pct", "NaN"),
            ("allow_short", "yes"),
            ("nope", "1"),
        ] {
            let values = BTreeMap::from([(key.to_string(), value.to_string())]);
            assert!(
                manifest.resolve_config(&values).unwrap_err().contains(key),
                "{key}={value}"
            );
        }
        assert!(
            Manifest::from_toml("name = \"Bad Name\"\nkind = \"strategy\"\nversion = \"1.0.0\"")
                .is_err()
        );
        assert!(
            Manifest::from_toml("name = \"x\"\nkind = \"oracle\"\nversion = \"1.0.0\"").is_err()
        );
        assert!(
            Manifest::from_toml(
                "name = \"x\"\nkind = \"strategy\"\nversion = \"1.0.0\"\nallowed_hosts = [\"a.com\"]"
            )
            .is_err()
        );
        assert!(Manifest::from_toml("name = \"x\"\nkind = \"broker\"\nversion = \"1.0.0\"\nallowed_hosts = [\"https://a.com\"]").is_err());
        assert!(
            Manifest::from_toml(
                "name = \"x\"\nkind = \"risk-rule\"\nversion = \"1.0.0\"\nindependent_symbols = true"
            )
            .unwrap_err()
            .contains("independent_symbols")
        );
        assert!(
            Manifest::from_toml(
                "name = \"x\"\nkind = \"strategy\"\nversion = \"1.0.0\"\nindependent_symbols = true"
            )
            .unwrap()
            .independent_symbols
        );
        assert!(
            Manifest::from_toml(
                "name = \"x\"\nkind = \"broker\"\nversion = \"1.0.0\"\nsurprise = 1"
            )
            .is_err()
        );
        // A broker's key for an order by client id holds the id once.
        let broker = |key: &str| {
            Manifest::from_toml(&format!(
                "name = \"x\"\nkind = \"broker\"\nversion = \"1.0.0\"\norder_key = {key:?}"
            ))
        };
        assert_eq!(
            broker("order/{client_order_id}")
                .unwrap()
                .order_key
                .as_deref(),
            Some("order/{client_order_id}")
        );
        for key in [
            "order/",
            "{client_order_id}/{client_order_id}",
            "order/{client_order_id}\n",
        ] {
            assert!(broker(key).unwrap_err().contains("order_key"), "{key:?}");
        }
        assert!(
            Manifest::from_toml(
                "name = \"x\"\nkind = \"strategy\"\nversion = \"1.0.0\"\norder_key = \"o/{client_order_id}\""
            )
            .unwrap_err()
            .contains("order_key")
        );
        // The version names the stored file: a path or anything but a semantic version is refused.
        for version in ["1", "../../etc/x", "1.0.0/../../x", "1.0", "v1.0.0", ""] {
            let toml = format!("name = \"x\"\nkind = \"strategy\"\nversion = {version:?}");
            assert!(Manifest::from_toml(&toml).is_err(), "{version}");
        }
        for version in ["0.1.0", "2.3.4-beta.1", "1.0.0+build.5"] {
            let toml = format!("name = \"x\"\nkind = \"strategy\"\nversion = {version:?}");
            assert!(Manifest::from_toml(&toml).is_ok(), "{version}");
        }
    }
}
