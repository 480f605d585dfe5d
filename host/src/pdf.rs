//! A small PDF writer for tabular reports: a title, summary lines and tables, paginated on A4
//! landscape pages.
//!
//! It writes only what such reports need, so it needs no crate: text in the two built-in
//! Helvetica fonts (nothing to embed, every reader has them), WinAnsi text, uncompressed content
//! streams. Widths come from the fonts' metrics, so columns and truncation are close to what the
//! reader draws.

use std::fmt::Write as _;

/// A table of a report: a heading, column names and rows of cells (already formatted text).
pub struct Table<'a> {
    pub heading: &'a str,
    pub columns: &'a [&'a str],
    pub rows: Vec<Vec<String>>,
}

/// A report: a title, lines of summary text (key: value), then tables.
pub struct Report<'a> {
    pub title: &'a str,
    pub summary: Vec<(String, String)>,
    pub tables: Vec<Table<'a>>,
}

/// A4 landscape, in points.
const PAGE_WIDTH: f64 = 842.0;
const PAGE_HEIGHT: f64 = 595.0;
const MARGIN: f64 = 36.0;
const CONTENT_WIDTH: f64 = PAGE_WIDTH - 2.0 * MARGIN;
/// Body text stops here; the footer sits below.
const BODY_BOTTOM: f64 = 44.0;
const FOOTER_BASELINE: f64 = 24.0;
const FOOTER_SIZE: f64 = 8.0;

const TITLE_SIZE: f64 = 14.0;
const TITLE_HEIGHT: f64 = 24.0;
const SUMMARY_SIZE: f64 = 9.0;
const SUMMARY_HEIGHT: f64 = 12.0;
/// Summary keys longer than this are cut, so one long key does not push the values off the page.
const MAX_SUMMARY_KEY_WIDTH: f64 = 250.0;
const HEADING_SIZE: f64 = 10.0;
const HEADING_HEIGHT: f64 = 16.0;
/// Small enough that ~18 columns of short values fit across a landscape page.
const CELL_SIZE: f64 = 7.0;
const ROW_HEIGHT: f64 = 9.0;
const CELL_PADDING: f64 = 2.0;
/// One very long column (a note, an id) must not take the width every other column needs.
const MAX_COLUMN_WIDTH: f64 = 180.0;
const SECTION_GAP: f64 = 10.0;
/// Fill grey of every other row, to follow a row across a wide table.
const STRIPE_GREY: &str = "0.93";

const ELLIPSIS: &[u8] = b"...";
/// Rounding slack when comparing widths, so text measured to fit its column is not cut.
const WIDTH_SLACK: f64 = 0.01;

/// Object numbers of the fixed objects; page `i` is object `FIRST_PAGE + 2i`, its content
/// stream the next one.
const CATALOG: usize = 1;
const PAGES: usize = 2;
const FONT_REGULAR: usize = 3;
const FONT_BOLD: usize = 4;
const INFO: usize = 5;
const FIRST_PAGE: usize = 6;

/// Renders the report as a PDF 1.4 document (A4 landscape, Helvetica / Helvetica-Bold built-in
/// fonts, WinAnsi/Latin-1 text).
pub fn render(report: &Report<'_>) -> Vec<u8> {
    let mut layout = Layout::new();
    layout.title(report.title);
    layout.summary(&report.summary);
    for table in &report.tables {
        layout.table(table);
    }
    let pages = layout.finish(report.title);
    write_document(report.title, &pages)
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Font {
    Regular,
    Bold,
}

impl Font {
    fn resource(self) -> &'static str {
        match self {
            Font::Regular => "F1",
            Font::Bold => "F2",
        }
    }

    /// Width in points of WinAnsi-encoded text.
    fn width(self, text: impl IntoIterator<Item = u8>, size: f64) -> f64 {
        let units: u32 = text.into_iter().map(|byte| self.glyph_width(byte)).sum();
        f64::from(units) * size / 1000.0
    }

    fn str_width(self, text: &str, size: f64) -> f64 {
        self.width(text.chars().map(encode_char), size)
    }

    /// Glyph width in thousandths of the font size (the fonts' AFM metrics for ASCII; beyond
    /// ASCII mostly accented letters, which are about as wide as a digit).
    fn glyph_width(self, byte: u8) -> u32 {
        let table = match self {
            Font::Regular => &HELVETICA_WIDTHS,
            Font::Bold => &HELVETICA_BOLD_WIDTHS,
        };
        match byte {
            32..=126 => u32::from(table[usize::from(byte - 32)]),
            _ => 556,
        }
    }
}

/// Helvetica glyph widths for the characters 32 (space) to 126 (`~`).
#[rustfmt::skip]
const HELVETICA_WIDTHS: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
];

/// Helvetica-Bold glyph widths for the characters 32 (space) to 126 (`~`).
#[rustfmt::skip]
const HELVETICA_BOLD_WIDTHS: [u16; 95] = [
    278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278,
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611,
    975, 722, 722, 722, 722, 667, 611, 778, 722, 278, 556, 722, 611, 833, 722, 778,
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 333, 278, 333, 584, 556,
    333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556, 278, 889, 611, 611,
    611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584,
];

/// The WinAnsi byte of a character. WinAnsi agrees with Latin-1 for ASCII and from 0xA0 up; a
/// few typographic characters have WinAnsi codes of their own; the built-in fonts have no glyph
/// for anything else, so it becomes `?`.
fn encode_char(c: char) -> u8 {
    match c {
        '\t' | '\n' | '\r' => b' ',
        ' '..='~' | '\u{A0}'..='\u{FF}' => c as u8,
        '€' => 0x80,
        '…' => 0x85,
        '‘' => 0x91,
        '’' => 0x92,
        '“' => 0x93,
        '”' => 0x94,
        '•' => 0x95,
        '–' => 0x96,
        '—' => 0x97,
        '™' => 0x99,
        _ => b'?',
    }
}

/// `text` in WinAnsi, cut to `max_width` points and ending in "..." when cut.
fn fit(text: &str, font: Font, size: f64, max_width: f64) -> Vec<u8> {
    let encoded: Vec<u8> = text.chars().map(encode_char).collect();
    if font.width(encoded.iter().copied(), size) <= max_width + WIDTH_SLACK {
        return encoded;
    }
    let budget = max_width - font.width(ELLIPSIS.iter().copied(), size);
    if budget < 0.0 {
        return Vec::new();
    }
    let mut used = 0.0;
    let mut kept = Vec::new();
    for byte in encoded {
        used += font.width([byte], size);
        if used > budget {
            break;
        }
        kept.push(byte);
    }
    // No space before the dots: "Long name ..." reads as a separate word.
    while kept.last() == Some(&b' ') {
        kept.pop();
    }
    kept.extend_from_slice(ELLIPSIS);
    kept
}

/// Appends a PDF literal string: `(`, `)` and `\` escaped, bytes beyond ASCII as octal escapes
/// so content streams stay plain ASCII.
fn push_literal(out: &mut String, text: &[u8]) {
    out.push('(');
    for &byte in text {
        match byte {
            b'(' | b')' | b'\\' => {
                out.push('\\');
                out.push(char::from(byte));
            }
            0x20..=0x7e => out.push(char::from(byte)),
            _ => {
                let _ = write!(out, "\\{byte:03o}");
            }
        }
    }
    out.push(')');
}

/// A coordinate with at most two decimals: "12.5", not "12.500000".
fn num(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Column widths: each column wants the width of its widest text (capped); when they do not all
/// fit, the narrow columns keep theirs and the wide ones share what is left equally.
fn column_widths(table: &Table<'_>, available: f64) -> Vec<f64> {
    let count = table.columns.len();
    let mut wanted: Vec<f64> = table
        .columns
        .iter()
        .map(|name| Font::Bold.str_width(name, CELL_SIZE))
        .collect();
    for row in &table.rows {
        for (column, cell) in row.iter().take(count).enumerate() {
            wanted[column] = wanted[column].max(Font::Regular.str_width(cell, CELL_SIZE));
        }
    }
    for width in &mut wanted {
        *width = (*width + 2.0 * CELL_PADDING).min(MAX_COLUMN_WIDTH);
    }
    let mut narrowest_first: Vec<usize> = (0..count).collect();
    narrowest_first.sort_by(|&a, &b| wanted[a].total_cmp(&wanted[b]));
    let mut widths = vec![0.0; count];
    let mut remaining = available;
    for (placed, &column) in narrowest_first.iter().enumerate() {
        let share = remaining / (count - placed) as f64;
        widths[column] = wanted[column].min(share);
        remaining -= widths[column];
    }
    widths
}

/// Whether a column holds only numbers (amounts, prices, counts), which read better
/// right-aligned.
fn is_numeric_column(table: &Table<'_>, column: usize) -> bool {
    let mut any = false;
    for cell in table.rows.iter().filter_map(|row| row.get(column)) {
        let cell = cell.trim();
        if cell.is_empty() {
            continue;
        }
        let numeric = cell.chars().any(|c| c.is_ascii_digit())
            && cell
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '+' | '-' | '.' | ',' | '%' | ' '));
        if !numeric {
            return false;
        }
        any = true;
    }
    any
}

/// Drawing operators of one page. Shapes (row stripes, rules) and text are kept apart so the
/// shapes can be painted first, under the text.
struct Page {
    shapes: String,
    text: String,
    /// Font and size last selected in `text`, so a row of cells selects the font once.
    current_font: Option<(Font, f64)>,
}

impl Page {
    fn new() -> Self {
        Page {
            shapes: format!("{STRIPE_GREY} g\n"),
            text: String::new(),
            current_font: None,
        }
    }

    fn text(&mut self, font: Font, size: f64, x: f64, baseline: f64, text: &[u8]) {
        if text.is_empty() {
            return;
        }
        if self.current_font != Some((font, size)) {
            let _ = writeln!(self.text, "/{} {} Tf", font.resource(), num(size));
            self.current_font = Some((font, size));
        }
        let _ = write!(self.text, "1 0 0 1 {} {} Tm ", num(x), num(baseline));
        push_literal(&mut self.text, text);
        self.text.push_str(" Tj\n");
    }

    fn content(&self) -> String {
        // Text is filled in black, not in the grey the stripes left as fill colour.
        format!("{}0 g\nBT\n{}ET\n", self.shapes, self.text)
    }
}

/// Lays text out top to bottom, starting a new page when the next block does not fit.
struct Layout {
    pages: Vec<Page>,
    /// Top of the next line, in points from the bottom of the page.
    y: f64,
}

impl Layout {
    fn new() -> Self {
        Layout {
            pages: vec![Page::new()],
            y: PAGE_HEIGHT - MARGIN,
        }
    }

    fn page(&mut self) -> &mut Page {
        self.pages.last_mut().expect("a layout always has a page")
    }

    fn new_page(&mut self) {
        self.pages.push(Page::new());
        self.y = PAGE_HEIGHT - MARGIN;
    }

    fn at_page_top(&self) -> bool {
        self.y >= PAGE_HEIGHT - MARGIN
    }

    fn ensure_room(&mut self, height: f64) {
        if self.y - height < BODY_BOTTOM && !self.at_page_top() {
            self.new_page();
        }
    }

    /// Baseline of a line of `height` at the cursor, leaving room for descenders.
    fn baseline(&self, height: f64, size: f64) -> f64 {
        self.y - height + (height - size) / 2.0 + 0.2 * size
    }

    fn title(&mut self, title: &str) {
        let text = fit(title, Font::Bold, TITLE_SIZE, CONTENT_WIDTH);
        let baseline = self.baseline(TITLE_HEIGHT, TITLE_SIZE);
        self.page()
            .text(Font::Bold, TITLE_SIZE, MARGIN, baseline, &text);
        self.y -= TITLE_HEIGHT;
    }

    fn summary(&mut self, lines: &[(String, String)]) {
        if lines.is_empty() {
            return;
        }
        let key_width = lines
            .iter()
            .map(|(key, _)| Font::Bold.str_width(&format!("{key}:"), SUMMARY_SIZE))
            .fold(0.0, f64::max)
            .min(MAX_SUMMARY_KEY_WIDTH);
        let value_x = MARGIN + key_width + 6.0;
        for (key, value) in lines {
            self.ensure_room(SUMMARY_HEIGHT);
            let baseline = self.baseline(SUMMARY_HEIGHT, SUMMARY_SIZE);
            let key = fit(&format!("{key}:"), Font::Bold, SUMMARY_SIZE, key_width);
            let value = fit(
                value,
                Font::Regular,
                SUMMARY_SIZE,
                PAGE_WIDTH - MARGIN - value_x,
            );
            let page = self.page();
            page.text(Font::Bold, SUMMARY_SIZE, MARGIN, baseline, &key);
            page.text(Font::Regular, SUMMARY_SIZE, value_x, baseline, &value);
            self.y -= SUMMARY_HEIGHT;
        }
        self.y -= SECTION_GAP;
    }

    fn table(&mut self, table: &Table<'_>) {
        let widths = column_widths(table, CONTENT_WIDTH);
        let right_aligned: Vec<bool> = (0..widths.len())
            .map(|column| is_numeric_column(table, column))
            .collect();
        // The heading, the column header and the first row stay together.
        self.ensure_room(HEADING_HEIGHT + 2.0 * ROW_HEIGHT);
        self.table_top(table.heading, table.columns, &widths, &right_aligned);
        if table.rows.is_empty() {
            let baseline = self.baseline(ROW_HEIGHT, CELL_SIZE);
            let text = fit("(no rows)", Font::Regular, CELL_SIZE, CONTENT_WIDTH);
            self.page().text(
                Font::Regular,
                CELL_SIZE,
                MARGIN + CELL_PADDING,
                baseline,
                &text,
            );
            self.y -= ROW_HEIGHT;
        }
        for (index, row) in table.rows.iter().enumerate() {
            if self.y - ROW_HEIGHT < BODY_BOTTOM {
                self.new_page();
                let heading = format!("{} (continued)", table.heading);
                self.table_top(&heading, table.columns, &widths, &right_aligned);
            }
            if index % 2 == 1 {
                let stripe = format!(
                    "{} {} {} {} re f\n",
                    num(MARGIN),
                    num(self.y - ROW_HEIGHT),
                    num(widths.iter().sum()),
                    num(ROW_HEIGHT)
                );
                self.page().shapes.push_str(&stripe);
            }
            self.row(Font::Regular, row, &widths, &right_aligned);
        }
        self.y -= SECTION_GAP;
    }

    /// The table heading and its column header row with a rule under it; drawn again at the top
    /// of every page the table continues on.
    fn table_top(&mut self, heading: &str, columns: &[&str], widths: &[f64], right: &[bool]) {
        let baseline = self.baseline(HEADING_HEIGHT, HEADING_SIZE);
        let text = fit(heading, Font::Bold, HEADING_SIZE, CONTENT_WIDTH);
        self.page()
            .text(Font::Bold, HEADING_SIZE, MARGIN, baseline, &text);
        self.y -= HEADING_HEIGHT;
        self.row(Font::Bold, columns, widths, right);
        let rule = format!(
            "0 G 0.5 w {} {} m {} {} l S\n",
            num(MARGIN),
            num(self.y),
            num(MARGIN + widths.iter().sum::<f64>()),
            num(self.y)
        );
        self.page().shapes.push_str(&rule);
    }

    fn row<S: AsRef<str>>(&mut self, font: Font, cells: &[S], widths: &[f64], right: &[bool]) {
        let baseline = self.baseline(ROW_HEIGHT, CELL_SIZE);
        let mut x = MARGIN;
        for ((cell, &width), &right_aligned) in cells.iter().zip(widths).zip(right) {
            let text = fit(cell.as_ref(), font, CELL_SIZE, width - 2.0 * CELL_PADDING);
            let text_x = if right_aligned {
                x + width - CELL_PADDING - font.width(text.iter().copied(), CELL_SIZE)
            } else {
                x + CELL_PADDING
            };
            self.page().text(font, CELL_SIZE, text_x, baseline, &text);
            x += width;
        }
        self.y -= ROW_HEIGHT;
    }

    /// The pages with their footers: the title on the left, "page N of M" on the right.
    fn finish(mut self, title: &str) -> Vec<Page> {
        let count = self.pages.len();
        let title = fit(title, Font::Regular, FOOTER_SIZE, CONTENT_WIDTH / 2.0);
        for (index, page) in self.pages.iter_mut().enumerate() {
            let number = fit(
                &format!("page {} of {count}", index + 1),
                Font::Regular,
                FOOTER_SIZE,
                CONTENT_WIDTH,
            );
            let number_x =
                PAGE_WIDTH - MARGIN - Font::Regular.width(number.iter().copied(), FOOTER_SIZE);
            page.text(Font::Regular, FOOTER_SIZE, MARGIN, FOOTER_BASELINE, &title);
            page.text(
                Font::Regular,
                FOOTER_SIZE,
                number_x,
                FOOTER_BASELINE,
                &number,
            );
        }
        self.pages
    }
}

/// Writes numbered objects and remembers where each starts, for the xref table.
struct Writer {
    out: Vec<u8>,
    /// Byte offset of object `n` at index `n`; index 0 is the free-list head.
    offsets: Vec<usize>,
}

impl Writer {
    fn begin(&mut self, number: usize) {
        debug_assert_eq!(number, self.offsets.len(), "objects are written in order");
        self.offsets.push(self.out.len());
        self.out
            .extend_from_slice(format!("{number} 0 obj\n").as_bytes());
    }

    fn object(&mut self, number: usize, body: &str) {
        self.begin(number);
        self.out.extend_from_slice(body.as_bytes());
        self.out.extend_from_slice(b"\nendobj\n");
    }

    fn stream(&mut self, number: usize, data: &[u8]) {
        self.begin(number);
        self.out
            .extend_from_slice(format!("<< /Length {} >>\nstream\n", data.len()).as_bytes());
        self.out.extend_from_slice(data);
        // The end-of-line before `endstream` is not part of the data (nor of /Length).
        self.out.extend_from_slice(b"\nendstream\nendobj\n");
    }
}

fn write_document(title: &str, pages: &[Page]) -> Vec<u8> {
    let mut writer = Writer {
        out: Vec::new(),
        offsets: vec![0],
    };
    // The comment of bytes above 127 tells transfer tools the file is binary.
    writer
        .out
        .extend_from_slice(b"%PDF-1.4\n%\xE2\xE3\xCF\xD3\n");

    let page_number = |index: usize| FIRST_PAGE + 2 * index;
    writer.object(CATALOG, &format!("<< /Type /Catalog /Pages {PAGES} 0 R >>"));
    let kids: Vec<String> = (0..pages.len())
        .map(|index| format!("{} 0 R", page_number(index)))
        .collect();
    writer.object(
        PAGES,
        &format!(
            "<< /Type /Pages /Kids [{}] /Count {} >>",
            kids.join(" "),
            pages.len()
        ),
    );
    for (number, name) in [(FONT_REGULAR, "Helvetica"), (FONT_BOLD, "Helvetica-Bold")] {
        writer.object(
            number,
            &format!(
                "<< /Type /Font /Subtype /Type1 /BaseFont /{name} /Encoding /WinAnsiEncoding >>"
            ),
        );
    }
    // UTF-16 with a byte-order mark keeps any title exact in the document properties.
    let title_utf16: String = title
        .encode_utf16()
        .map(|unit| format!("{unit:04X}"))
        .collect();
    writer.object(
        INFO,
        &format!("<< /Title <FEFF{title_utf16}> /Producer (tradehost) >>"),
    );
    for (index, page) in pages.iter().enumerate() {
        let number = page_number(index);
        writer.object(
            number,
            &format!(
                "<< /Type /Page /Parent {PAGES} 0 R /MediaBox [0 0 {} {}] \
                 /Resources << /Font << /F1 {FONT_REGULAR} 0 R /F2 {FONT_BOLD} 0 R >> >> \
                 /Contents {} 0 R >>",
                num(PAGE_WIDTH),
                num(PAGE_HEIGHT),
                number + 1
            ),
        );
        writer.stream(number + 1, page.content().as_bytes());
    }

    let xref_offset = writer.out.len();
    let size = writer.offsets.len();
    let mut xref = format!("xref\n0 {size}\n0000000000 65535 f \n");
    for offset in &writer.offsets[1..] {
        // Each entry is exactly 20 bytes: 10 digits, space, 5 digits, space, `n`, space, newline.
        let _ = writeln!(xref, "{offset:010} 00000 n ");
    }
    let _ = write!(
        xref,
        "trailer\n<< /Size {size} /Root {CATALOG} 0 R /Info {INFO} 0 R >>\nstartxref\n{xref_offset}\n%%EOF\n"
    );
    writer.out.extend_from_slice(xref.as_bytes());
    writer.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
        haystack
            .windows(needle.len())
            .position(|window| window == needle)
    }

    fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
        haystack
            .windows(needle.len())
            .rposition(|window| window == needle)
    }

    /// The number written after `key` in `text`, e.g. `/Count 12`.
    fn number_after(text: &str, key: &str) -> usize {
        let start = text
            .find(key)
            .unwrap_or_else(|| panic!("{key} missing in {text}"))
            + key.len();
        let digits: String = text[start..]
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap()
    }

    /// Reads the file the way a reader does — header, `startxref`, the xref table, the trailer,
    /// the page tree, stream lengths — asserting each step, and answers the content streams of
    /// the pages in page order.
    fn parse(pdf: &[u8]) -> Vec<String> {
        assert!(pdf.starts_with(b"%PDF-1.4\n"));
        let second_line = &pdf[9..pdf[9..].iter().position(|&b| b == b'\n').unwrap() + 9];
        assert!(second_line.starts_with(b"%") && second_line[1..].iter().all(|&b| b >= 128));
        assert!(pdf.ends_with(b"%%EOF\n"));

        let startxref = rfind(pdf, b"startxref\n").expect("startxref");
        let xref_offset =
            number_after(std::str::from_utf8(&pdf[startxref..]).unwrap(), "startxref");
        assert!(
            pdf[xref_offset..].starts_with(b"xref\n"),
            "startxref must point at xref"
        );

        let subsection_start = xref_offset + 5;
        let subsection_end = subsection_start + find(&pdf[subsection_start..], b"\n").unwrap();
        let subsection = std::str::from_utf8(&pdf[subsection_start..subsection_end]).unwrap();
        let size: usize = subsection
            .strip_prefix("0 ")
            .expect("one subsection from 0")
            .parse()
            .unwrap();
        let entries_start = subsection_end + 1;
        let entries = &pdf[entries_start..entries_start + 20 * size];
        assert_eq!(&entries[..20], b"0000000000 65535 f \n");
        let trailer = std::str::from_utf8(&pdf[entries_start + 20 * size..]).unwrap();
        assert!(
            trailer.starts_with("trailer\n<<"),
            "the trailer follows the last entry"
        );
        assert_eq!(number_after(trailer, "/Size"), size);

        let mut objects = vec![String::new()];
        for number in 1..size {
            let entry = &entries[20 * number..20 * (number + 1)];
            assert_eq!(&entry[10..], b" 00000 n \n", "entry {number}");
            let offset: usize = std::str::from_utf8(&entry[..10]).unwrap().parse().unwrap();
            let header = format!("{number} 0 obj\n");
            assert!(
                pdf[offset..].starts_with(header.as_bytes()),
                "xref offset of object {number}"
            );
            assert_eq!(pdf[offset - 1], b'\n', "object {number} starts a line");
            let body = &pdf[offset + header.len()..];
            let end = find(body, b"\nendobj\n").unwrap();
            let body = &body[..end];
            if let Some(stream_at) = find(body, b">>\nstream\n") {
                let length =
                    number_after(std::str::from_utf8(&body[..stream_at]).unwrap(), "/Length");
                let data = &body[stream_at + 10..];
                assert_eq!(
                    &data[length..],
                    b"\nendstream",
                    "/Length of object {number}"
                );
                let text = String::from_utf8(data[..length].to_vec()).expect("content is ASCII");
                assert!(text.is_ascii());
                objects.push(text);
            } else {
                objects.push(String::from_utf8(body.to_vec()).unwrap());
            }
        }

        let root = number_after(trailer, "/Root");
        assert!(objects[root].contains("/Type /Catalog"));
        let pages = number_after(&objects[root], "/Pages");
        assert!(objects[pages].contains("/Type /Pages "));
        let count = number_after(&objects[pages], "/Count");
        let page_objects = objects
            .iter()
            .filter(|body| body.contains("/Type /Page "))
            .count();
        assert_eq!(count, page_objects, "/Count is the number of Page objects");
        let kids_start = objects[pages].find("/Kids [").unwrap() + 7;
        let kids_end = kids_start + objects[pages][kids_start..].find(']').unwrap();
        let kids: Vec<usize> = objects[pages][kids_start..kids_end]
            .split(" 0 R")
            .filter(|kid| !kid.trim().is_empty())
            .map(|kid| kid.trim().parse().unwrap())
            .collect();
        assert_eq!(kids.len(), count);

        for (number, name) in [(FONT_REGULAR, "Helvetica"), (FONT_BOLD, "Helvetica-Bold")] {
            let font = &objects[number];
            assert!(
                font.contains(&format!("/BaseFont /{name} "))
                    && font.contains("/Encoding /WinAnsiEncoding")
            );
        }
        kids.iter()
            .map(|&kid| {
                assert!(
                    objects[kid].contains("/Type /Page ")
                        && objects[kid].contains("/MediaBox [0 0 842 595]")
                );
                objects[number_after(&objects[kid], "/Contents")].clone()
            })
            .collect()
    }

    /// The positions of the text drawn on a page: `(x, baseline)` of each `Tm`.
    fn text_positions(content: &str) -> Vec<(f64, f64)> {
        content
            .lines()
            .filter(|line| line.ends_with(" Tj"))
            .map(|line| {
                let numbers: Vec<f64> = line
                    .split(' ')
                    .take(6)
                    .map(|n| n.parse().unwrap())
                    .collect();
                (numbers[4], numbers[5])
            })
            .collect()
    }

    const COLUMNS: [&str; 18] = [
        "Time", "Symbol", "Side", "Qty", "Price", "Fee", "PnL", "Bot", "Order", "Status", "Venue",
        "Type", "Stop", "Limit", "Filled", "Remain", "Tag", "Note",
    ];

    fn trade_rows(count: usize) -> Vec<Vec<String>> {
        (0..count)
            .map(|index| {
                let mut row = vec![format!("row-{index:04}")];
                row.extend(
                    (1..COLUMNS.len()).map(|column| format!("{}.{column}", index * 7 % 1000)),
                );
                row
            })
            .collect()
    }

    #[test]
    fn a_small_report_is_a_well_formed_pdf() {
        let report = Report {
            title: "Monthly statement",
            summary: vec![
                ("Account".into(), "paper-1".into()),
                ("Net PnL".into(), "1,234.50".into()),
            ],
            tables: vec![Table {
                heading: "Trades",
                columns: &COLUMNS,
                rows: trade_rows(3),
            }],
        };
        let pages = parse(&render(&report));
        assert_eq!(pages.len(), 1);
        for expected in [
            "(Monthly statement) Tj",
            "(Net PnL:) Tj",
            "(1,234.50) Tj",
            "(Trades) Tj",
            "(row-0002) Tj",
            "(page 1 of 1) Tj",
        ] {
            assert!(pages[0].contains(expected), "{expected} missing");
        }
    }

    /// The structure check itself: one byte inserted before the objects moves every offset.
    #[test]
    #[should_panic(expected = "xref offset of object 1")]
    fn a_shifted_object_fails_the_check() {
        let report = Report {
            title: "Shifted",
            summary: Vec::new(),
            tables: Vec::new(),
        };
        let mut pdf = render(&report);
        let first_object = find(&pdf, b"1 0 obj").unwrap();
        pdf.insert(first_object, b'\n');
        // Keep `startxref` right, so only the xref entries are stale.
        let startxref = rfind(&pdf, b"startxref\n").unwrap();
        let xref_offset =
            number_after(std::str::from_utf8(&pdf[startxref..]).unwrap(), "startxref");
        pdf.truncate(startxref);
        pdf.extend_from_slice(format!("startxref\n{}\n%%EOF\n", xref_offset + 1).as_bytes());
        parse(&pdf);
    }

    #[test]
    fn a_report_without_tables_has_one_page() {
        let report = Report {
            title: "Empty",
            summary: Vec::new(),
            tables: Vec::new(),
        };
        assert_eq!(parse(&render(&report)).len(), 1);
    }

    #[test]
    fn many_rows_continue_on_new_pages_with_the_header_repeated() {
        let report = Report {
            title: "Trades",
            summary: vec![("Rows".into(), "5000".into())],
            tables: vec![
                Table {
                    heading: "All trades",
                    columns: &COLUMNS,
                    rows: trade_rows(5_000),
                },
                Table {
                    heading: "Nothing here",
                    columns: &["A", "B"],
                    rows: Vec::new(),
                },
            ],
        };
        let pages = parse(&render(&report));
        let count = pages.len();
        assert!(count > 10, "5,000 rows on {count} pages");
        let mut rows_seen = Vec::new();
        for (index, page) in pages.iter().enumerate() {
            assert!(
                page.contains("(Symbol) Tj") && page.contains("(Note) Tj"),
                "header row on page {}",
                index + 1
            );
            assert!(page.contains(&format!("(page {} of {count}) Tj", index + 1)));
            if index > 0 {
                assert!(page.contains("(All trades \\(continued\\)) Tj") || index == count - 1);
            }
            rows_seen.extend(
                page.match_indices("(row-")
                    .map(|(at, _)| page[at + 5..at + 9].to_string()),
            );
            for (x, baseline) in text_positions(page) {
                assert!(
                    (MARGIN..PAGE_WIDTH - MARGIN).contains(&x),
                    "x {x} on the page"
                );
                assert!(
                    (FOOTER_BASELINE..PAGE_HEIGHT - MARGIN).contains(&baseline),
                    "baseline {baseline}"
                );
                assert!(
                    baseline >= BODY_BOTTOM || baseline == FOOTER_BASELINE,
                    "body text above the footer"
                );
            }
        }
        let expected: Vec<String> = (0..5_000).map(|index| format!("{index:04}")).collect();
        assert_eq!(rows_seen, expected, "every row once, in order");
        assert!(
            pages[count - 1].contains("(Nothing here) Tj")
                && pages[count - 1].contains("(\\(no rows\\)) Tj")
        );
    }

    #[test]
    fn parentheses_and_backslashes_are_escaped() {
        let report = Report {
            title: "P&L (net) \\ fees",
            summary: vec![("Note (1)".into(), "a)b(c\\".into())],
            tables: vec![Table {
                heading: "T",
                columns: &["x(y)"],
                rows: vec![vec!["\\)".into()]],
            }],
        };
        let pages = parse(&render(&report));
        for expected in [
            "(P&L \\(net\\) \\\\ fees) Tj",
            "(Note \\(1\\):) Tj",
            "(a\\)b\\(c\\\\) Tj",
            "(x\\(y\\)) Tj",
            "(\\\\\\)) Tj",
        ] {
            assert!(pages[0].contains(expected), "{expected} missing");
        }
    }

    #[test]
    fn characters_beyond_latin1_become_question_marks() {
        let report = Report {
            title: "Zürich → 東京 €",
            summary: vec![("Émetteur".into(), "🚀 café".into())],
            tables: vec![Table {
                heading: "Ω",
                columns: &["名前"],
                rows: vec![vec!["naïve\u{0301}".into()]],
            }],
        };
        let pdf = render(&report);
        let pages = parse(&pdf);
        for expected in [
            "(Z\\374rich ? ?? \\200) Tj",
            "(\\311metteur:) Tj",
            "(? caf\\351) Tj",
            "(?) Tj",
            "(??) Tj",
            "(na\\357ve?) Tj",
        ] {
            assert!(pages[0].contains(expected), "{expected} missing");
        }
        // The document properties keep the title exactly.
        let title_utf16: String = "Zürich → 東京 €"
            .encode_utf16()
            .map(|unit| format!("{unit:04X}"))
            .collect();
        assert!(find(&pdf, format!("/Title <FEFF{title_utf16}>").as_bytes()).is_some());
    }

    #[test]
    fn long_cells_are_cut_to_their_column() {
        let long =
            "a note much longer than any column of a landscape page can hold, and then some more";
        let cut = fit(long, Font::Regular, CELL_SIZE, 60.0);
        assert!(cut.ends_with(b"...") && cut.len() < long.len());
        assert!(Font::Regular.width(cut.iter().copied(), CELL_SIZE) <= 60.0);
        assert_eq!(fit("fits", Font::Regular, CELL_SIZE, 60.0), b"fits");
        assert_eq!(fit("wide", Font::Regular, CELL_SIZE, 1.0), b"");

        let mut rows = trade_rows(10);
        rows[3][17] = long.into();
        let table = Table {
            heading: "T",
            columns: &COLUMNS,
            rows,
        };
        let widths = column_widths(&table, CONTENT_WIDTH);
        assert!(widths.iter().sum::<f64>() <= CONTENT_WIDTH + 1e-9);
        // The short columns keep their natural width; the note takes what is left, capped.
        assert!(
            (widths[2] - (Font::Bold.str_width("Side", CELL_SIZE) + 2.0 * CELL_PADDING)).abs()
                < 1e-9
        );
        assert!(widths[17] <= MAX_COLUMN_WIDTH && widths[17] > widths[2]);
        assert!(is_numeric_column(&table, 4) && !is_numeric_column(&table, 0));
    }
}
