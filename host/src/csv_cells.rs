//! CSV downloads that are safe to open in a spreadsheet. The `csv` crate writes the records
//! (quoting a field that holds a comma, a quote or a line break); before that, every data cell a
//! spreadsheet would take for a formula is neutralised. The ledger export and the analytics
//! export both write through [`write`], so they neutralise alike.

use std::borrow::Cow;

pub use csv::Terminator;

/// A cell as a spreadsheet should read it: text starting with `=`, `+` or `@`, which a
/// spreadsheet evaluates as a formula, gets a leading `'`, which makes it plain text. Anything
/// else is left alone, so a negative number such as `-12.5` stays a number.
pub fn neutralise(text: &str) -> Cow<'_, str> {
    if text.starts_with(['=', '+', '@']) {
        Cow::Owned(format!("'{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// The header row, then one record per row of cells (each [neutralised](neutralise)), each ended
/// by `terminator`. Every row must have as many cells as the header.
pub fn write<Row, Cell>(
    header: &[&str],
    rows: impl IntoIterator<Item = Row>,
    terminator: Terminator,
) -> String
where
    Row: IntoIterator<Item = Cell>,
    Cell: AsRef<str>,
{
    // Writing to memory cannot fail, and the callers build every row from the header's columns,
    // so an error here is a bug in this crate.
    let mut writer = csv::WriterBuilder::new()
        .terminator(terminator)
        .from_writer(Vec::new());
    writer.write_record(header).expect("writing CSV to memory");
    for row in rows {
        for cell in row {
            writer
                .write_field(neutralise(cell.as_ref()).as_bytes())
                .expect("writing CSV to memory");
        }
        writer
            .write_record(None::<&[u8]>)
            .expect("every row has as many cells as the header");
    }
    let bytes = writer.into_inner().expect("writing CSV to memory");
    String::from_utf8(bytes).expect("CSV of text is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_starts_are_neutralised_and_numbers_kept() {
        for (cell, expected) in [
            ("=SUM(A1:A9)", "'=SUM(A1:A9)"),
            ("+1 555 0100", "'+1 555 0100"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("-12.5", "-12.5"),
            ("12.5", "12.5"),
            ("a=b", "a=b"),
            ("'quoted", "'quoted"),
            ("", ""),
        ] {
            assert_eq!(neutralise(cell), expected, "{cell:?}");
        }
    }

    #[test]
    fn records_are_quoted_neutralised_and_terminated() {
        let rows = [["x,y", "say \"hi\"", "=1+1"], ["line\nbreak", "-3", "@me"]];
        assert_eq!(
            write(&["a", "b", "c"], rows, Terminator::CRLF),
            "a,b,c\r\n\"x,y\",\"say \"\"hi\"\"\",'=1+1\r\n\"line\nbreak\",-3,'@me\r\n"
        );
        assert_eq!(
            write(&["a", "b"], [["", "\r"]], Terminator::Any(b'\n')),
            "a,b\n,\"\r\"\n"
        );
        assert_eq!(
            write(&["a", "b"], Vec::<[&str; 2]>::new(), Terminator::Any(b'\n')),
            "a,b\n"
        );
    }
}
