//! Money, prices and quantities as the tables keep them, in a form each database sums exactly:
//! `NUMERIC` on PostgreSQL, and on SQLite an `INTEGER` count of 10⁻⁸ units (1.5 is stored as
//! 150000000), so `SUM`, `MIN`, `MAX` and comparisons in SQL are exact and ordered on both.
//!
//! Every value is rounded to [`SCALE`] places (half to even) when written, so both backends hold
//! the same figure; the engine books at that scale already, so rounding here only ever touches
//! figures that are not books (an equity snapshot's product of price and quantity, an inbound
//! signal's size). The SQLite form holds ±92,233,720,368.54775807; a larger value is refused
//! when written rather than wrapped. SQL must not multiply or divide these columns (the SQLite
//! form would come out scaled twice); sums and differences are exact.
//!
//! This is the one place decimals are converted to and from their stored forms.

use rust_decimal::Decimal;
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo, PgValueRef};
use sqlx::sqlite::{SqliteArgumentsBuffer, SqliteTypeInfo, SqliteValueRef};
use sqlx::{Database, Decode, Encode, Postgres, Sqlite, Type, ValueRef};

use crate::engine::accounting::SCALE;

/// A decimal in its stored form; the tuple's `Decimal` is the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoredDecimal(pub Decimal);

/// 10^SCALE: stored units per one.
const UNITS_PER_ONE: i128 = 100_000_000;
const _: () = assert!(UNITS_PER_ONE == 10i128.pow(SCALE));

impl StoredDecimal {
    /// The value as written: rounded to [`SCALE`] places, half to even.
    pub fn rounded(self) -> Decimal {
        self.0.round_dp(SCALE).normalize()
    }

    /// The SQLite form: whole 10⁻⁸ units.
    pub fn units(self) -> Result<i64, BoxDynError> {
        let value = self.rounded();
        let units = 10i128
            .checked_pow(SCALE - value.scale())
            .and_then(|factor| value.mantissa().checked_mul(factor))
            .and_then(|units| i64::try_from(units).ok())
            .ok_or_else(|| format!("{value} is too large to store"))?;
        Ok(units)
    }

    pub fn from_units(units: i64) -> Self {
        Self(Decimal::from_i128_with_scale(i128::from(units), SCALE).normalize())
    }

    pub fn opt(value: Option<Self>) -> Option<Decimal> {
        value.map(|stored| stored.0)
    }
}

impl From<StoredDecimal> for Decimal {
    fn from(stored: StoredDecimal) -> Decimal {
        stored.0
    }
}

/// A nullable decimal column, for rows that decode straight into `Option<Decimal>` fields
/// (`#[sqlx(try_from = "OptionalStoredDecimal")]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OptionalStoredDecimal(pub Option<Decimal>);

impl From<OptionalStoredDecimal> for Option<Decimal> {
    fn from(stored: OptionalStoredDecimal) -> Option<Decimal> {
        stored.0
    }
}

impl<DB: Database> Type<DB> for OptionalStoredDecimal
where
    StoredDecimal: Type<DB>,
{
    fn type_info() -> DB::TypeInfo {
        <StoredDecimal as Type<DB>>::type_info()
    }

    fn compatible(ty: &DB::TypeInfo) -> bool {
        <StoredDecimal as Type<DB>>::compatible(ty)
    }
}

impl<'r, DB: Database> Decode<'r, DB> for OptionalStoredDecimal
where
    StoredDecimal: Decode<'r, DB>,
{
    fn decode(value: <DB as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        if value.is_null() {
            return Ok(Self(None));
        }
        Ok(Self(Some(<StoredDecimal as Decode<DB>>::decode(value)?.0)))
    }
}

impl Type<Sqlite> for StoredDecimal {
    fn type_info() -> SqliteTypeInfo {
        <i64 as Type<Sqlite>>::type_info()
    }

    fn compatible(ty: &SqliteTypeInfo) -> bool {
        <i64 as Type<Sqlite>>::compatible(ty)
    }
}

impl Encode<'_, Sqlite> for StoredDecimal {
    fn encode_by_ref(&self, buf: &mut SqliteArgumentsBuffer) -> Result<IsNull, BoxDynError> {
        <i64 as Encode<Sqlite>>::encode(self.units()?, buf)
    }
}

impl<'r> Decode<'r, Sqlite> for StoredDecimal {
    fn decode(value: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Self::from_units(<i64 as Decode<Sqlite>>::decode(value)?))
    }
}

impl Type<Postgres> for StoredDecimal {
    fn type_info() -> PgTypeInfo {
        <Decimal as Type<Postgres>>::type_info()
    }

    fn compatible(ty: &PgTypeInfo) -> bool {
        <Decimal as Type<Postgres>>::compatible(ty)
    }
}

impl Encode<'_, Postgres> for StoredDecimal {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        // The same bound as SQLite's, so a value either backend refuses is refused by both.
        self.units()?;
        <Decimal as Encode<Postgres>>::encode(self.rounded(), buf)
    }
}

impl<'r> Decode<'r, Postgres> for StoredDecimal {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Self(
            <Decimal as Decode<Postgres>>::decode(value)?.normalize(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Decimal {
        text.parse().unwrap()
    }

    #[test]
    fn units_round_half_to_even_at_eight_places() {
        let units = |text: &str| StoredDecimal(d(text)).units().unwrap();
        assert_eq!(units("1.5"), 150_000_000);
        assert_eq!(units("-0.00000001"), -1);
        assert_eq!(units("0.000000005"), 0);
        assert_eq!(units("0.000000015"), 2);
        assert_eq!(units("-2.123456785"), -212_345_678);
        assert_eq!(units("92233720368.54775807"), i64::MAX);
        assert!(StoredDecimal(d("92233720368.54775808")).units().is_err());
        assert!(StoredDecimal(Decimal::MAX).units().is_err());
    }

    #[test]
    fn units_come_back_as_the_same_value() {
        for text in [
            "0",
            "1.5",
            "-1234.56789012",
            "0.00000001",
            "92233720368.54775807",
        ] {
            let stored = StoredDecimal(d(text));
            assert_eq!(
                StoredDecimal::from_units(stored.units().unwrap()).0,
                d(text)
            );
        }
        assert_eq!(StoredDecimal::from_units(150_000_000).0.to_string(), "1.5");
    }
}
