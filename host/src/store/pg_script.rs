//! PostgreSQL statements with their values written into the text as typed literals, so that
//! several statements reach the server as one message. The extended protocol, which carries
//! parameters, takes one statement per round trip; the simple protocol takes any number, but no
//! parameters. A batch of the books is a dozen statements: as one message it is one round trip
//! (and one wake-up of the server's backend and of the writer) instead of a dozen.
//!
//! Each value is written as the parameter sqlx would have bound: a quoted literal cast to the
//! type sqlx gives that Rust type (`E'…'::text`, `E'42'::int8`, `NULL::numeric`), so the server
//! resolves every expression as it would with parameters. Escape strings (`E'…'`) are read the
//! same way whatever `standard_conforming_strings` says; inside one, a quote and a backslash are
//! doubled and nothing else is special. A value PostgreSQL cannot hold as text (a NUL character)
//! is refused, as a bound parameter would be.
//!
//! The builder offers the part of sqlx's `QueryBuilder` the statements use (`push`, `push_bind`,
//! `push_values`), so one statement body serves both backends (`statements::statement!`).

use std::fmt::{Display, Write};

use sqlx::PgConnection;
use sqlx::Row;
use sqlx::postgres::PgRow;

use super::decimal::StoredDecimal;

/// Statements for PostgreSQL with their values in their text.
#[derive(Debug, Default)]
pub struct PgScript {
    text: String,
    /// The first value that could not be written; running the script returns it.
    refused: Option<String>,
}

/// A value written as the literal of the parameter sqlx would bind for it.
pub trait PgLiteral {
    /// The type sqlx binds the value as.
    const TYPE: &'static str;

    /// Writes the value's text form (unquoted); `None` for SQL `NULL`.
    fn text(&self) -> Option<Result<String, String>>;
}

impl PgScript {
    pub fn new(text: &str) -> Self {
        PgScript {
            text: text.to_string(),
            refused: None,
        }
    }

    pub fn push(&mut self, sql: impl Display) -> &mut Self {
        write!(self.text, "{sql}").expect("writing to a String");
        self
    }

    pub fn push_bind<T: PgLiteral>(&mut self, value: T) -> &mut Self {
        match value.text() {
            None => {
                self.text.push_str("NULL::");
            }
            Some(Ok(text)) if text.contains('\0') => {
                self.refuse("a text value holds a NUL character, which PostgreSQL cannot store");
                self.text.push_str("NULL::");
            }
            Some(Ok(text)) => {
                self.text.push_str("E'");
                for c in text.chars() {
                    if c == '\'' || c == '\\' {
                        self.text.push(c);
                    }
                    self.text.push(c);
                }
                self.text.push_str("'::");
            }
            Some(Err(reason)) => {
                self.refuse(&reason);
                self.text.push_str("NULL::");
            }
        }
        self.text.push_str(T::TYPE);
        self
    }

    /// `VALUES (…), (…)`: one parenthesised row per item, its values pushed by `push_row`.
    pub fn push_values<I, F>(&mut self, items: I, mut push_row: F) -> &mut Self
    where
        I: IntoIterator,
        F: FnMut(ValuesRow<'_>, I::Item),
    {
        self.text.push_str("VALUES ");
        for (n, item) in items.into_iter().enumerate() {
            if n > 0 {
                self.text.push_str(", ");
            }
            self.text.push('(');
            push_row(
                ValuesRow {
                    script: self,
                    first: true,
                },
                item,
            );
            self.text.push(')');
        }
        self
    }

    fn refuse(&mut self, reason: &str) {
        self.refused.get_or_insert_with(|| reason.to_string());
    }

    /// Runs the statements as one message and returns what [`super::statements::Statements::run`]
    /// does: the first column of every row they return, as text, in order.
    pub async fn run(self, conn: &mut PgConnection) -> sqlx::Result<Vec<String>> {
        if let Some(reason) = self.refused {
            return Err(sqlx::Error::Encode(reason.into()));
        }
        let rows: Vec<PgRow> = sqlx::raw_sql(sqlx::AssertSqlSafe(self.text))
            .fetch_all(conn)
            .await?;
        rows.iter().map(|row| row.try_get(0)).collect()
    }
}

/// One row of [`PgScript::push_values`]: values separated by commas.
pub struct ValuesRow<'s> {
    script: &'s mut PgScript,
    first: bool,
}

impl ValuesRow<'_> {
    pub fn push_bind<T: PgLiteral>(&mut self, value: T) -> &mut Self {
        if !self.first {
            self.script.text.push_str(", ");
        }
        self.first = false;
        self.script.push_bind(value);
        self
    }
}

macro_rules! displayed {
    ($($rust:ty => $pg:literal),* $(,)?) => {$(
        impl PgLiteral for $rust {
            const TYPE: &'static str = $pg;
            fn text(&self) -> Option<Result<String, String>> {
                Some(Ok(self.to_string()))
            }
        }
    )*};
}

displayed! {
    str => "text",
    String => "text",
    i16 => "int2",
    i32 => "int4",
    i64 => "int8",
    // Rust writes the shortest text that reads back as the same double, and PostgreSQL reads it
    // correctly rounded: the same bits arrive.
    f64 => "float8",
}

impl PgLiteral for bool {
    const TYPE: &'static str = "bool";
    fn text(&self) -> Option<Result<String, String>> {
        Some(Ok(if *self { "t" } else { "f" }.to_string()))
    }
}

impl PgLiteral for rust_decimal::Decimal {
    const TYPE: &'static str = "numeric";
    fn text(&self) -> Option<Result<String, String>> {
        Some(Ok(self.to_string()))
    }
}

impl PgLiteral for StoredDecimal {
    const TYPE: &'static str = "numeric";
    fn text(&self) -> Option<Result<String, String>> {
        // The value as its parameter is encoded: rounded to the books' scale, and within the
        // bound SQLite's form holds.
        Some(
            self.units()
                .map(|_| self.rounded().to_string())
                .map_err(|err| err.to_string()),
        )
    }
}

impl PgLiteral for [u8] {
    const TYPE: &'static str = "bytea";
    fn text(&self) -> Option<Result<String, String>> {
        let mut hex = String::with_capacity(2 + 2 * self.len());
        hex.push_str("\\x");
        for byte in self {
            write!(hex, "{byte:02x}").expect("writing to a String");
        }
        Some(Ok(hex))
    }
}

impl PgLiteral for Vec<u8> {
    const TYPE: &'static str = "bytea";
    fn text(&self) -> Option<Result<String, String>> {
        self.as_slice().text()
    }
}

impl<T: PgLiteral + ?Sized> PgLiteral for &T {
    const TYPE: &'static str = T::TYPE;
    fn text(&self) -> Option<Result<String, String>> {
        (**self).text()
    }
}

impl<T: PgLiteral> PgLiteral for Option<T> {
    const TYPE: &'static str = T::TYPE;
    fn text(&self) -> Option<Result<String, String>> {
        self.as_ref().and_then(PgLiteral::text)
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use rust_decimal::Decimal;
    use sqlx::postgres::PgRow;
    use sqlx::{Decode, Postgres, Type};

    use super::*;
    use crate::store::testing::postgres;

    /// The value `literal` reads back as on the server, and the type the server gave it.
    async fn read_back<T>(conn: &mut PgConnection, value: T) -> (T, String)
    where
        T: PgLiteral + for<'r> Decode<'r, Postgres> + Type<Postgres>,
    {
        let mut script = PgScript::new("SELECT ");
        script.push_bind(&value).push(", pg_typeof(");
        script.push_bind(&value).push(")::text");
        assert!(script.refused.is_none());
        let row: PgRow = sqlx::raw_sql(sqlx::AssertSqlSafe(script.text))
            .fetch_one(conn)
            .await
            .unwrap();
        (row.try_get(0).unwrap(), row.try_get(1).unwrap())
    }

    #[tokio::test]
    async fn values_reach_the_server_exactly_and_typed_as_their_parameters_would_be() {
        let Some(mut conn) = postgres().await else {
            return;
        };
        for text in [
            "",
            "plain",
            "it's",
            "back\\slash",
            "\\'",
            "E'",
            "''",
            "'); DROP TABLE users; --",
            "$1 $$ ? :name",
            "line\nbreak\ttab\r",
            "ünïcødé ✓ 𝄞",
        ] {
            let (back, ty) = read_back(&mut conn, text.to_string()).await;
            assert_eq!((back.as_str(), ty.as_str()), (text, "text"));
        }
        for n in [0, 1, -1, i64::MAX, i64::MIN] {
            assert_eq!(read_back(&mut conn, n).await, (n, "bigint".into()));
        }
        assert_eq!(read_back(&mut conn, 7i32).await, (7, "integer".into()));
        for x in [
            0.1,
            -2.5e-300,
            1e300,
            f64::MAX,
            f64::MIN_POSITIVE,
            1.0 / 3.0,
            5e-324,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let (back, ty) = read_back(&mut conn, x).await;
            assert_eq!(
                (back.to_bits(), ty.as_str()),
                (x.to_bits(), "double precision")
            );
        }
        for b in [true, false] {
            assert_eq!(read_back(&mut conn, b).await, (b, "boolean".into()));
        }
        for d in [
            "0",
            "-0.00000001",
            "92233720368.54775807",
            "1.50",
            "-12345.6789",
        ] {
            let d = Decimal::from_str(d).unwrap();
            assert_eq!(read_back(&mut conn, d).await, (d, "numeric".into()));
        }
        let bytes = vec![0u8, 1, b'\'', b'\\', 0xff];
        assert_eq!(
            read_back(&mut conn, bytes.clone()).await,
            (bytes, "bytea".into())
        );
        assert_eq!(
            read_back(&mut conn, None::<i64>).await,
            (None, "bigint".into())
        );
        assert_eq!(
            read_back(&mut conn, Some("x".to_string())).await,
            (Some("x".into()), "text".into())
        );
    }

    #[tokio::test]
    async fn a_stored_decimal_is_written_at_the_books_scale_within_their_bound() {
        let Some(mut conn) = postgres().await else {
            return;
        };
        let d = |text: &str| Decimal::from_str(text).unwrap();
        let (back, ty) = read_back(&mut conn, StoredDecimal(d("1.234567895"))).await;
        assert_eq!((back.0, ty.as_str()), (d("1.2345679"), "numeric"));
        let mut script = PgScript::new("SELECT ");
        script.push_bind(StoredDecimal(d("92233720368.54775808")));
        let refused = script.run(&mut conn).await.unwrap_err();
        assert!(refused.to_string().contains("too large"), "{refused}");
    }

    #[test]
    fn a_nul_character_is_refused_rather_than_cut_off() {
        let mut script = PgScript::new("SELECT ");
        script.push_bind("a\0b");
        assert!(script.refused.is_some());
        let mut script = PgScript::new("SELECT ");
        script.push_bind("ab");
        assert!(script.refused.is_none());
    }

    #[test]
    fn rows_of_values_are_separated_and_quoted() {
        let mut script = PgScript::new("INSERT INTO t (a, b) ");
        script.push_values([("x", 1i64), ("it's", -2)], |mut row, (a, b)| {
            row.push_bind(a).push_bind(b);
        });
        assert_eq!(
            script.text,
            "INSERT INTO t (a, b) VALUES (E'x'::text, E'1'::int8), (E'it''s'::text, E'-2'::int8)"
        );
    }
}
