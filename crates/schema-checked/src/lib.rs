//! `schema_checked!("SELECT …")` is the SQL text it is given, checked when the crate compiles:
//! SQLite prepares it against a database the crate's SQLite migrations (`../migrations/sqlite`
//! from the crate's manifest) were applied to, so a misspelt table or column, a syntax error or a
//! statement the schema no longer fits fails the build with SQLite's message instead of a
//! request at run time. The same text runs on PostgreSQL, whose suites run every query; SQL only
//! PostgreSQL runs is not written with this macro.

use std::ffi::{CStr, CString, c_char, c_int};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::{Mutex, OnceLock};

use libsqlite3_sys as ffi;
use proc_macro::TokenStream;

#[proc_macro]
pub fn schema_checked(input: TokenStream) -> TokenStream {
    // The literal as it was written, its span kept.
    let literal = input.clone();
    let sql = syn::parse_macro_input!(input as syn::LitStr);
    match schema().and_then(|schema| schema.lock().expect("no check panics").check(&sql.value())) {
        Ok(()) => literal,
        Err(message) => syn::Error::new(sql.span(), message)
            .to_compile_error()
            .into(),
    }
}

/// The migrated schema, built once per compilation of the crate.
fn schema() -> Result<&'static Mutex<Schema>, String> {
    static SCHEMA: OnceLock<Result<Mutex<Schema>, String>> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let manifest = std::env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?;
            Schema::migrated(&PathBuf::from(manifest).join("../migrations/sqlite")).map(Mutex::new)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// An in-memory SQLite database.
struct Schema(*mut ffi::sqlite3);

// SAFETY: SQLite is built thread-safe (serialized) and the handle is only used under the mutex.
unsafe impl Send for Schema {}

impl Schema {
    /// A database with the migrations in `dir` applied, in the order of their names.
    fn migrated(dir: &Path) -> Result<Self, String> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| format!("reading {}: {e}", dir.display()))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "sql"))
            .collect();
        files.sort();
        let mut db = ptr::null_mut();
        // SAFETY: the name is a NUL-terminated string and `db` a valid out pointer.
        let rc = unsafe {
            ffi::sqlite3_open_v2(
                c":memory:".as_ptr(),
                &mut db,
                ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE,
                ptr::null(),
            )
        };
        let schema = Schema(db);
        if rc != ffi::SQLITE_OK {
            return Err(format!("opening SQLite: {}", schema.message()));
        }
        for file in files {
            let sql = std::fs::read_to_string(&file)
                .map_err(|e| format!("reading {}: {e}", file.display()))?;
            let sql = CString::new(sql).map_err(|e| e.to_string())?;
            // SAFETY: the database is open and the text NUL-terminated.
            let rc = unsafe {
                ffi::sqlite3_exec(
                    schema.0,
                    sql.as_ptr(),
                    None,
                    ptr::null_mut(),
                    ptr::null_mut(),
                )
            };
            if rc != ffi::SQLITE_OK {
                return Err(format!(
                    "migration {}: {}",
                    file.display(),
                    schema.message()
                ));
            }
        }
        Ok(schema)
    }

    /// Prepares every statement of `sql` (and throws the statements away).
    fn check(&self, sql: &str) -> Result<(), String> {
        let text = CString::new(sql).map_err(|e| e.to_string())?;
        let mut rest: *const c_char = text.as_ptr();
        loop {
            let mut statement = ptr::null_mut();
            let mut tail: *const c_char = ptr::null();
            // SAFETY: `rest` points into `text`, NUL-terminated; -1 reads to the NUL.
            let rc =
                unsafe { ffi::sqlite3_prepare_v2(self.0, rest, -1, &mut statement, &mut tail) };
            if rc != ffi::SQLITE_OK {
                return Err(format!(
                    "SQLite cannot prepare this against the migrated schema: {}",
                    self.message()
                ));
            }
            // SAFETY: a prepared statement (or null, which finalize accepts).
            unsafe { ffi::sqlite3_finalize(statement) };
            if statement.is_null() {
                // Nothing but blanks or comments were left.
                return Ok(());
            }
            rest = tail;
        }
    }

    fn message(&self) -> String {
        // SAFETY: SQLite returns a NUL-terminated message owned by the handle.
        let message: *const c_char = unsafe { ffi::sqlite3_errmsg(self.0) };
        // SAFETY: as above; copied before the handle is used again.
        unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        // SAFETY: the handle came from sqlite3_open_v2 and is not used after.
        let _: c_int = unsafe { ffi::sqlite3_close(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        Schema::migrated(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/sqlite"))
            .unwrap()
    }

    #[test]
    fn a_query_the_schema_fits_passes() {
        let schema = schema();
        schema
            .check("SELECT id, email FROM users WHERE id = $1")
            .unwrap();
        schema
            .check("UPDATE users SET full_name = $2 WHERE id = $1; SELECT COUNT(*) FROM users")
            .unwrap();
    }

    #[test]
    fn a_misspelt_table_or_column_or_a_syntax_error_fails_with_sqlites_reason() {
        let schema = schema();
        let fails = |sql: &str, reason: &str| {
            let message = schema.check(sql).unwrap_err();
            assert!(message.contains(reason), "{sql}: {message}");
        };
        fails("SELECT id FROM user WHERE id = $1", "no such table: user");
        fails("SELECT id, e_mail FROM users", "no such column: e_mail");
        fails("SELECT id FROM users WHERE", "incomplete input");
        fails("SELECT id FROM users WHERE id = = 1", "syntax error");
        // Every statement of a text is checked, not only the first.
        fails(
            "SELECT 1; SELECT missing FROM users",
            "no such column: missing",
        );
    }

    #[test]
    fn a_missing_migrations_directory_is_reported() {
        let Err(message) = Schema::migrated(Path::new("no/such/directory")) else {
            panic!("a schema without migrations");
        };
        assert!(message.contains("no/such/directory"), "{message}");
    }
}
