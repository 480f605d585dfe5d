//! Tabular reports as PDF: a title, summary lines and tables, paginated on A4 landscape pages,
//! with each table's header repeated on every page it continues on and a "page N of M" footer.
//!
//! This module lays the report out and says what goes where; the crates do the rest:
//! [`pdf_writer`] writes the PDF objects, [`subsetter`] cuts the embedded font down to the glyphs
//! the report uses, [`skrifa`] reads the font's character map and metrics (so column widths and
//! truncation match what a reader draws), and [`miniz_oxide`] compresses every stream.
//!
//! The font is DejaVu Sans Condensed, from the `dejavu` crate: narrow enough for wide tables,
//! with glyphs for accented letters, currency signs, dashes, Greek and Cyrillic; a character it
//! lacks shows as "�" and still copies as itself. Each character gets a two-byte code of
//! printable ASCII (the CID of a CID-keyed font), so the text strings of the content streams need
//! no escapes and compress well; the font's ToUnicode map gives the characters back to readers.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use pdf_writer::types::{CidFontType, FontFlags, SystemInfo, UnicodeCmap};
use pdf_writer::{Content, Filter, Finish, Name, Pdf, Rect, Ref, Str, TextStr};
use skrifa::charmap::Charmap;
use skrifa::instance::{LocationRef, Size};
use skrifa::metrics::GlyphMetrics;
use skrifa::string::StringId;
use skrifa::{FontRef, GlyphId, MetadataProvider};
use subsetter::GlyphRemapper;

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

/// A4 landscape, in points. The layout measures y from the top of the page, downwards.
const PAGE_WIDTH: f32 = 842.0;
const PAGE_HEIGHT: f32 = 595.0;
const MARGIN: f32 = 36.0;
const CONTENT_WIDTH: f32 = PAGE_WIDTH - 2.0 * MARGIN;
/// Body text stops here; the footer sits below.
const BODY_BOTTOM: f32 = PAGE_HEIGHT - 44.0;
const FOOTER_BASELINE: f32 = PAGE_HEIGHT - 24.0;
const FOOTER_SIZE: f32 = 8.0;

const TITLE_SIZE: f32 = 14.0;
const TITLE_HEIGHT: f32 = 24.0;
const SUMMARY_SIZE: f32 = 9.0;
const SUMMARY_HEIGHT: f32 = 12.0;
/// Summary keys longer than this are cut, so one long key does not push the values off the page.
const MAX_SUMMARY_KEY_WIDTH: f32 = 250.0;
const HEADING_SIZE: f32 = 10.0;
const HEADING_HEIGHT: f32 = 16.0;
/// Small enough that ~18 columns of short values fit across a landscape page.
const CELL_SIZE: f32 = 7.0;
const ROW_HEIGHT: f32 = 9.0;
const CELL_PADDING: f32 = 2.0;
/// One very long column (a note, an id) must not take the width every other column needs.
const MAX_COLUMN_WIDTH: f32 = 180.0;
const SECTION_GAP: f32 = 10.0;
/// Grey of every other row, to follow a row across a wide table.
const STRIPE_GREY: f32 = 0.93;
/// The rule under a table's column header.
const RULE_WIDTH: f32 = 0.5;

/// Ends a cut text.
const ELLIPSIS: &str = "…";
/// Rounding slack when comparing widths, so text measured to fit its column is not cut.
const WIDTH_SLACK: f32 = 0.01;
/// zlib's default: nearly the smallest output, at a fraction of the time of the highest level.
const COMPRESSION_LEVEL: u8 = 6;

/// Renders the report as a PDF document: A4 landscape, the glyphs it uses of DejaVu Sans
/// Condensed embedded, compressed streams, the title in the document properties.
pub fn render(report: &Report<'_>) -> Vec<u8> {
    let fonts = Fonts::load();
    let pages = lay_out(&fonts, report);
    write_document(report.title, &fonts, &pages)
}

fn lay_out(fonts: &Fonts, report: &Report<'_>) -> Vec<Page> {
    let mut layout = Layout::new(fonts);
    layout.title(report.title);
    layout.summary(&report.summary);
    for table in &report.tables {
        layout.table(table);
    }
    layout.finish(report.title)
}

/// A font of the report; the number indexes arrays of per-font things.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Weight {
    Regular = 0,
    Bold = 1,
}

impl Weight {
    /// The font's name in the pages' resources.
    fn resource(self) -> Name<'static> {
        match self {
            Weight::Regular => Name(b"F1"),
            Weight::Bold => Name(b"F2"),
        }
    }
}

/// A font: its data, and its character map and metrics to measure text.
struct Face {
    data: &'static [u8],
    font: FontRef<'static>,
    charmap: Charmap<'static>,
    metrics: GlyphMetrics<'static>,
    units_per_em: f32,
    /// Drawn for a character the font has no glyph for: U+FFFD, the replacement character.
    missing: GlyphId,
    /// Glyph and advance of the characters U+0000 to U+00FF, which most text is made of.
    latin1: Vec<(GlyphId, f32)>,
}

impl Face {
    fn load(data: &'static [u8]) -> Face {
        let font = FontRef::new(data).expect("the bundled font is an OpenType font");
        let mut face = Face {
            data,
            font: font.clone(),
            charmap: font.charmap(),
            metrics: font.glyph_metrics(Size::unscaled(), LocationRef::default()),
            units_per_em: f32::from(
                font.metrics(Size::unscaled(), LocationRef::default())
                    .units_per_em,
            ),
            missing: font.charmap().map('\u{FFFD}').unwrap_or(GlyphId::NOTDEF),
            latin1: Vec::new(),
        };
        face.latin1 = ('\0'..='\u{FF}').map(|c| face.lookup(c)).collect();
        face
    }

    fn lookup(&self, c: char) -> (GlyphId, f32) {
        let glyph = self.charmap.map(c).unwrap_or(self.missing);
        let advance = self.metrics.advance_width(glyph).unwrap_or(0.0) / self.units_per_em;
        (glyph, advance)
    }

    /// The glyph of a character and its advance in ems.
    fn glyph(&self, c: char) -> (GlyphId, f32) {
        match self.latin1.get(c as usize) {
            Some(&known) => known,
            None => self.lookup(c),
        }
    }

    /// Width in points of `text` at `size`.
    fn width(&self, text: &str, size: f32) -> f32 {
        text.chars().map(|c| self.glyph(c).1).sum::<f32>() * size
    }

    /// The font's values in the units of PDF glyph space: thousandths of an em.
    fn to_pdf_units(&self, value: f32) -> f32 {
        value * 1000.0 / self.units_per_em
    }
}

struct Fonts {
    regular: Face,
    bold: Face,
}

impl Fonts {
    fn load() -> Fonts {
        Fonts {
            regular: Face::load(dejavu::sans_condensed::regular()),
            bold: Face::load(dejavu::sans_condensed::bold()),
        }
    }

    fn face(&self, weight: Weight) -> &Face {
        match weight {
            Weight::Regular => &self.regular,
            Weight::Bold => &self.bold,
        }
    }
}

/// A line of text to draw and its width in points.
#[derive(Debug, PartialEq)]
struct Line {
    text: String,
    width: f32,
}

/// `text` on one line (control characters such as tabs and line breaks become spaces), cut to
/// `max_width` points and ending in "…" when cut.
fn fit(face: &Face, text: &str, size: f32, max_width: f32) -> Line {
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let width = face.width(&text, size);
    if width <= max_width + WIDTH_SLACK {
        return Line { text, width };
    }
    let budget = max_width - face.width(ELLIPSIS, size);
    if budget < 0.0 {
        return Line {
            text: String::new(),
            width: 0.0,
        };
    }
    let mut used = 0.0;
    let mut end = 0;
    for (at, c) in text.char_indices() {
        used += face.glyph(c).1 * size;
        if used > budget {
            break;
        }
        end = at + c.len_utf8();
    }
    // No space before the ellipsis: "Long name …" reads as a separate word.
    let text = format!("{}{ELLIPSIS}", text[..end].trim_end());
    Line {
        width: face.width(&text, size),
        text,
    }
}

/// Column widths: each column wants the width of its widest text (capped); when they do not all
/// fit, the narrow columns keep theirs and the wide ones share what is left equally.
fn column_widths(fonts: &Fonts, table: &Table<'_>, available: f32) -> Vec<f32> {
    let count = table.columns.len();
    let mut wanted: Vec<f32> = table
        .columns
        .iter()
        .map(|name| fonts.bold.width(name, CELL_SIZE))
        .collect();
    for row in &table.rows {
        for (column, cell) in row.iter().take(count).enumerate() {
            wanted[column] = wanted[column].max(fonts.regular.width(cell, CELL_SIZE));
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
        let share = remaining / (count - placed) as f32;
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

/// Text on one baseline in one font: a line of the title or summary, the cells of a table row,
/// the footer. Drawn as one run of glyphs, which keeps the PDF small.
struct Run {
    weight: Weight,
    size: f32,
    baseline: f32,
    /// Pieces left to right, each with the x where it starts; none is empty.
    pieces: Vec<(f32, Line)>,
}

/// A grey band behind a row.
#[derive(Clone, Copy)]
struct Stripe {
    left: f32,
    top: f32,
    width: f32,
    height: f32,
}

/// What one page shows, in the order it is painted: the row stripes, the rules, then the text.
#[derive(Default)]
struct Page {
    stripes: Vec<Stripe>,
    /// Horizontal rules: y, from x, to x.
    rules: Vec<(f32, f32, f32)>,
    runs: Vec<Run>,
}

/// Lays text out top to bottom, starting a new page when the next block does not fit.
struct Layout<'f> {
    fonts: &'f Fonts,
    pages: Vec<Page>,
    /// Top of the next line, in points from the top of the page.
    y: f32,
}

impl<'f> Layout<'f> {
    fn new(fonts: &'f Fonts) -> Self {
        Layout {
            fonts,
            pages: vec![Page::default()],
            y: MARGIN,
        }
    }

    fn page(&mut self) -> &mut Page {
        self.pages.last_mut().expect("a layout always has a page")
    }

    fn new_page(&mut self) {
        self.pages.push(Page::default());
        self.y = MARGIN;
    }

    fn ensure_room(&mut self, height: f32) {
        if self.y + height > BODY_BOTTOM && self.y > MARGIN {
            self.new_page();
        }
    }

    /// Baseline of a line of `height` at the cursor, leaving room for descenders.
    fn baseline(&self, height: f32, size: f32) -> f32 {
        self.y + height - (height - size) / 2.0 - 0.2 * size
    }

    /// Adds a run of `pieces` (x, text) on `baseline`, leaving out empty pieces.
    fn run(&mut self, weight: Weight, size: f32, baseline: f32, pieces: Vec<(f32, Line)>) {
        let pieces: Vec<(f32, Line)> = pieces
            .into_iter()
            .filter(|(_, line)| !line.text.is_empty())
            .collect();
        if !pieces.is_empty() {
            self.page().runs.push(Run {
                weight,
                size,
                baseline,
                pieces,
            });
        }
    }

    fn fit(&self, weight: Weight, text: &str, size: f32, max_width: f32) -> Line {
        fit(self.fonts.face(weight), text, size, max_width)
    }

    fn title(&mut self, title: &str) {
        let line = self.fit(Weight::Bold, title, TITLE_SIZE, CONTENT_WIDTH);
        let baseline = self.baseline(TITLE_HEIGHT, TITLE_SIZE);
        self.run(Weight::Bold, TITLE_SIZE, baseline, vec![(MARGIN, line)]);
        self.y += TITLE_HEIGHT;
    }

    fn summary(&mut self, lines: &[(String, String)]) {
        if lines.is_empty() {
            return;
        }
        let key_width = lines
            .iter()
            .map(|(key, _)| self.fonts.bold.width(&format!("{key}:"), SUMMARY_SIZE))
            .fold(0.0, f32::max)
            .min(MAX_SUMMARY_KEY_WIDTH);
        let value_x = MARGIN + key_width + 6.0;
        for (key, value) in lines {
            self.ensure_room(SUMMARY_HEIGHT);
            let baseline = self.baseline(SUMMARY_HEIGHT, SUMMARY_SIZE);
            let key = self.fit(Weight::Bold, &format!("{key}:"), SUMMARY_SIZE, key_width);
            let value = self.fit(
                Weight::Regular,
                value,
                SUMMARY_SIZE,
                PAGE_WIDTH - MARGIN - value_x,
            );
            self.run(Weight::Bold, SUMMARY_SIZE, baseline, vec![(MARGIN, key)]);
            self.run(
                Weight::Regular,
                SUMMARY_SIZE,
                baseline,
                vec![(value_x, value)],
            );
            self.y += SUMMARY_HEIGHT;
        }
        self.y += SECTION_GAP;
    }

    fn table(&mut self, table: &Table<'_>) {
        let widths = column_widths(self.fonts, table, CONTENT_WIDTH);
        let right_aligned: Vec<bool> = (0..widths.len())
            .map(|column| is_numeric_column(table, column))
            .collect();
        // The heading, the column header and the first row stay together.
        self.ensure_room(HEADING_HEIGHT + 2.0 * ROW_HEIGHT);
        self.table_top(table.heading, table.columns, &widths, &right_aligned);
        if table.rows.is_empty() {
            let baseline = self.baseline(ROW_HEIGHT, CELL_SIZE);
            let line = self.fit(Weight::Regular, "(no rows)", CELL_SIZE, CONTENT_WIDTH);
            let x = MARGIN + CELL_PADDING;
            self.run(Weight::Regular, CELL_SIZE, baseline, vec![(x, line)]);
            self.y += ROW_HEIGHT;
        }
        for (index, row) in table.rows.iter().enumerate() {
            if self.y + ROW_HEIGHT > BODY_BOTTOM {
                self.new_page();
                let heading = format!("{} (continued)", table.heading);
                self.table_top(&heading, table.columns, &widths, &right_aligned);
            }
            if index % 2 == 1 {
                let stripe = Stripe {
                    left: MARGIN,
                    top: self.y,
                    width: widths.iter().sum(),
                    height: ROW_HEIGHT,
                };
                self.page().stripes.push(stripe);
            }
            self.row(Weight::Regular, row, &widths, &right_aligned);
        }
        self.y += SECTION_GAP;
    }

    /// The table heading and its column header row with a rule under it; drawn again at the top
    /// of every page the table continues on.
    fn table_top(&mut self, heading: &str, columns: &[&str], widths: &[f32], right: &[bool]) {
        let baseline = self.baseline(HEADING_HEIGHT, HEADING_SIZE);
        let line = self.fit(Weight::Bold, heading, HEADING_SIZE, CONTENT_WIDTH);
        self.run(Weight::Bold, HEADING_SIZE, baseline, vec![(MARGIN, line)]);
        self.y += HEADING_HEIGHT;
        self.row(Weight::Bold, columns, widths, right);
        let rule = (self.y, MARGIN, MARGIN + widths.iter().sum::<f32>());
        self.page().rules.push(rule);
    }

    fn row<S: AsRef<str>>(&mut self, weight: Weight, cells: &[S], widths: &[f32], right: &[bool]) {
        let baseline = self.baseline(ROW_HEIGHT, CELL_SIZE);
        let mut x = MARGIN;
        let mut pieces = Vec::with_capacity(widths.len());
        for ((cell, &width), &right_aligned) in cells.iter().zip(widths).zip(right) {
            let line = self.fit(weight, cell.as_ref(), CELL_SIZE, width - 2.0 * CELL_PADDING);
            let text_x = if right_aligned {
                x + width - CELL_PADDING - line.width
            } else {
                x + CELL_PADDING
            };
            pieces.push((text_x, line));
            x += width;
        }
        self.run(weight, CELL_SIZE, baseline, pieces);
        self.y += ROW_HEIGHT;
    }

    /// The pages with their footers: the title on the left, "page N of M" on the right.
    fn finish(mut self, title: &str) -> Vec<Page> {
        let count = self.pages.len();
        for index in 0..count {
            let title = self.fit(Weight::Regular, title, FOOTER_SIZE, CONTENT_WIDTH / 2.0);
            let number = self.fit(
                Weight::Regular,
                &format!("page {} of {count}", index + 1),
                FOOTER_SIZE,
                CONTENT_WIDTH / 2.0,
            );
            let number_x = PAGE_WIDTH - MARGIN - number.width;
            self.pages[index].runs.push(Run {
                weight: Weight::Regular,
                size: FOOTER_SIZE,
                baseline: FOOTER_BASELINE,
                pieces: vec![(MARGIN, title), (number_x, number)],
            });
        }
        self.pages
    }
}

/// The bytes codes are made of: printable ASCII but `(`, `)` and `\`, the three that a PDF
/// literal string escapes.
const CODE_BYTES: [u8; 92] = {
    let mut bytes = [0; 92];
    let (mut byte, mut count) = (b' ', 0);
    while byte <= b'~' {
        if byte != b'(' && byte != b')' && byte != b'\\' {
            bytes[count] = byte;
            count += 1;
        }
        byte += 1;
    }
    bytes
};
/// How many codes a font can hand out; past that, characters show as "�".
const CODE_COUNT: usize = CODE_BYTES.len() * CODE_BYTES.len();

/// The codes of one font's characters in this document, handed out in order of first use: the
/// `i`th character gets two bytes `CODE_BYTES[i / 92], CODE_BYTES[i % 92]`, read by the PDF's
/// Identity-H encoding as the CID `(first << 8) | second`.
#[derive(Default)]
struct Codes {
    by_char: HashMap<char, [u8; 2]>,
    chars: Vec<char>,
}

impl Codes {
    fn code(&mut self, c: char) -> [u8; 2] {
        if let Some(&code) = self.by_char.get(&c) {
            return code;
        }
        let index = self.chars.len();
        // The last code is kept for the replacement character.
        if index + 1 >= CODE_COUNT && c != '\u{FFFD}' {
            return self.code('\u{FFFD}');
        }
        let code = [
            CODE_BYTES[index / CODE_BYTES.len()],
            CODE_BYTES[index % CODE_BYTES.len()],
        ];
        self.by_char.insert(c, code);
        self.chars.push(c);
        code
    }

    fn encode(&mut self, text: &str) -> Vec<u8> {
        text.chars().flat_map(|c| self.code(c)).collect()
    }

    /// The characters with their CIDs, in the order of the codes (so of the CIDs).
    fn cids(&self) -> impl Iterator<Item = (u16, char)> + '_ {
        self.chars.iter().enumerate().map(|(index, &c)| {
            let [first, second] = [
                CODE_BYTES[index / CODE_BYTES.len()],
                CODE_BYTES[index % CODE_BYTES.len()],
            ];
            (u16::from_be_bytes([first, second]), c)
        })
    }
}

fn deflate(data: &[u8]) -> Vec<u8> {
    miniz_oxide::deflate::compress_to_vec_zlib(data, COMPRESSION_LEVEL)
}

/// Rounds a coordinate to a hundredth of a point: finer than any screen or printer, and short.
fn round(value: f32) -> f32 {
    (value * 100.0).round() / 100.0
}

fn write_document(title: &str, fonts: &Fonts, pages: &[Page]) -> Vec<u8> {
    let mut next_ref = Ref::new(1);
    let mut alloc = || next_ref.bump();
    let catalog = alloc();
    let page_tree = alloc();
    let info = alloc();
    let font_refs = [alloc(), alloc()];

    let mut pdf = Pdf::new();
    pdf.catalog(catalog).pages(page_tree);
    pdf.document_info(info)
        .title(TextStr(title))
        .producer(TextStr("tradehost"));

    let mut codes = [Codes::default(), Codes::default()];
    let mut page_refs = Vec::with_capacity(pages.len());
    for page in pages {
        let (page_ref, content_ref) = (alloc(), alloc());
        page_refs.push(page_ref);
        let content = page_content(page, &mut codes);
        pdf.stream(content_ref, &deflate(&content))
            .filter(Filter::FlateDecode);
        let mut pdf_page = pdf.page(page_ref);
        pdf_page
            .parent(page_tree)
            .media_box(Rect::new(0.0, 0.0, PAGE_WIDTH, PAGE_HEIGHT))
            .contents(content_ref);
        let mut resources = pdf_page.resources();
        let mut font_resources = resources.fonts();
        for (weight, &font_ref) in [Weight::Regular, Weight::Bold].iter().zip(&font_refs) {
            font_resources.pair(weight.resource(), font_ref);
        }
    }
    pdf.pages(page_tree)
        .kids(page_refs.iter().copied())
        .count(i32::try_from(pages.len()).expect("a report has fewer than 2^31 pages"));

    for ((face, codes), font_ref) in [&fonts.regular, &fonts.bold]
        .into_iter()
        .zip(&codes)
        .zip(font_refs)
    {
        write_font(&mut pdf, &mut alloc, font_ref, face, codes);
    }
    pdf.finish()
}

/// The page's drawing operators: the row stripes, the rules, then the text on top.
fn page_content(page: &Page, codes: &mut [Codes; 2]) -> Vec<u8> {
    let mut content = Content::new();
    if !page.stripes.is_empty() {
        content.set_fill_gray(STRIPE_GREY);
        for stripe in &page.stripes {
            content.rect(
                round(stripe.left),
                round(PAGE_HEIGHT - stripe.top - stripe.height),
                round(stripe.width),
                round(stripe.height),
            );
        }
        content.fill_nonzero();
    }
    if !page.rules.is_empty() {
        content.set_stroke_gray(0.0).set_line_width(RULE_WIDTH);
        for &(y, from, to) in &page.rules {
            content.move_to(round(from), round(PAGE_HEIGHT - y));
            content.line_to(round(to), round(PAGE_HEIGHT - y));
        }
        content.stroke();
    }
    content.set_fill_gray(0.0);
    content.begin_text();
    let mut font = None;
    // Each run starts a text line, placed relative to the start of the previous one.
    let mut line_start = (0.0, 0.0);
    for run in &page.runs {
        if font != Some((run.weight, run.size)) {
            content.set_font(run.weight.resource(), run.size);
            font = Some((run.weight, run.size));
        }
        let (dx, dy) = (
            round(run.pieces[0].0 - line_start.0),
            round(PAGE_HEIGHT - run.baseline - line_start.1),
        );
        content.next_line(dx, dy);
        line_start = (line_start.0 + dx, line_start.1 + dy);
        let codes = &mut codes[run.weight as usize];
        let mut positioned = content.show_positioned();
        let mut items = positioned.items();
        // Moving on to the next piece is an adjustment in thousandths of the font size.
        let mut pen = line_start.0;
        for (x, line) in &run.pieces {
            let adjustment = ((x - pen) / run.size * 1000.0).round();
            if adjustment != 0.0 {
                items.adjust(-adjustment);
            }
            items.show(Str(&codes.encode(&line.text)));
            pen += adjustment * run.size / 1000.0 + line.width;
        }
    }
    content.end_text();
    content.finish().into_vec()
}

/// Writes the font as a CID-keyed Type 0 font: the subset of its glyphs the codes need, their
/// widths, the map from codes (CIDs) to glyphs, and the map from codes back to characters.
fn write_font(
    pdf: &mut Pdf,
    alloc: &mut impl FnMut() -> Ref,
    font_ref: Ref,
    face: &Face,
    codes: &Codes,
) {
    let (cid_font_ref, descriptor_ref, to_unicode_ref, cid_to_gid_ref, file_ref) =
        (alloc(), alloc(), alloc(), alloc(), alloc());

    let mut remapper = GlyphRemapper::new();
    let mut cid_to_gid = Vec::new();
    for (cid, c) in codes.cids() {
        let glyph =
            u16::try_from(face.glyph(c).0.to_u32()).expect("TrueType glyph ids are 16 bits");
        cid_to_gid.resize(2 * usize::from(cid), 0);
        cid_to_gid.extend(remapper.remap(glyph).to_be_bytes());
    }
    let subset = subsetter::subset(face.data, 0, &remapper)
        .unwrap_or_else(|err| panic!("the bundled font cannot be subset: {err}"));

    // A subset's name starts with a tag of six capitals naming the subset.
    let mut hasher = DefaultHasher::new();
    codes.chars.hash(&mut hasher);
    let mut hash = Hasher::finish(&hasher);
    let tag: String = (0..6)
        .map(|_| {
            let letter = char::from(b'A' + (hash % 26) as u8);
            hash /= 26;
            letter
        })
        .collect();
    let postscript_name: String = face
        .font
        .localized_strings(StringId::POSTSCRIPT_NAME)
        .english_or_first()
        .map(|name| name.chars().collect())
        .unwrap_or_default();
    let base_font = format!("{tag}+{postscript_name}");
    let system_info = SystemInfo {
        registry: Str(b"Adobe"),
        ordering: Str(b"Identity"),
        supplement: 0,
    };

    pdf.type0_font(font_ref)
        .base_font(Name(base_font.as_bytes()))
        .encoding_predefined(Name(b"Identity-H"))
        .descendant_font(cid_font_ref)
        .to_unicode(to_unicode_ref);

    let mut cid_font = pdf.cid_font(cid_font_ref);
    cid_font
        .subtype(CidFontType::Type2)
        .base_font(Name(base_font.as_bytes()))
        .system_info(system_info)
        .font_descriptor(descriptor_ref)
        .cid_to_gid_map_stream(cid_to_gid_ref);
    let mut widths = cid_font.widths();
    for (cid, c) in codes.cids() {
        widths.consecutive(cid, [face.glyph(c).1 * 1000.0]);
    }
    widths.finish();
    cid_font.finish();

    let metrics = face.font.metrics(Size::unscaled(), LocationRef::default());
    let bounds = metrics.bounds.unwrap_or_default();
    let weight = face.font.attributes().weight.value();
    pdf.font_descriptor(descriptor_ref)
        .name(Name(base_font.as_bytes()))
        .flags(FontFlags::NON_SYMBOLIC)
        .bbox(Rect::new(
            face.to_pdf_units(bounds.x_min),
            face.to_pdf_units(bounds.y_min),
            face.to_pdf_units(bounds.x_max),
            face.to_pdf_units(bounds.y_max),
        ))
        .italic_angle(metrics.italic_angle)
        .ascent(face.to_pdf_units(metrics.ascent))
        .descent(face.to_pdf_units(metrics.descent))
        .cap_height(face.to_pdf_units(metrics.cap_height.unwrap_or(metrics.ascent)))
        // The usual estimate of the vertical stems' width from the font's weight class.
        .stem_v(10.0 + 0.244 * (weight - 50.0))
        .font_file2(file_ref);

    let mut to_unicode = UnicodeCmap::new(Name(b"Adobe-Identity-UCS"), system_info);
    for (cid, c) in codes.cids() {
        to_unicode.pair(cid, c);
    }
    pdf.cmap(to_unicode_ref, &deflate(to_unicode.finish().as_slice()))
        .filter(Filter::FlateDecode);
    pdf.stream(cid_to_gid_ref, &deflate(&cid_to_gid))
        .filter(Filter::FlateDecode);
    pdf.stream(file_ref, &deflate(&subset))
        .filter(Filter::FlateDecode)
        .pair(
            Name(b"Length1"),
            i32::try_from(subset.len()).expect("a font subset is small"),
        );
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::path::Path;
    use std::process::Command;

    use super::*;

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

    fn pages(report: &Report<'_>) -> Vec<Page> {
        lay_out(&Fonts::load(), report)
    }

    /// Every piece of text on the page: (x, baseline, line).
    fn pieces(page: &Page) -> impl Iterator<Item = (f32, f32, &Line)> {
        page.runs
            .iter()
            .flat_map(|run| run.pieces.iter().map(|(x, line)| (*x, run.baseline, line)))
    }

    fn texts(page: &Page) -> Vec<&str> {
        pieces(page)
            .map(|(_, _, line)| line.text.as_str())
            .collect()
    }

    /// Runs one of poppler's command-line tools and answers its standard output.
    fn poppler(tool: &str, args: &[&OsStr]) -> Vec<u8> {
        let output = Command::new(tool)
            .args(args)
            .output()
            .unwrap_or_else(|err| {
                panic!(
                    "could not run `{tool}` ({err}): these tests read the PDF back with \
                     poppler's tools, from the Debian package poppler-utils \
                     (apt-get install -y poppler-utils)"
                )
            });
        assert!(
            output.status.success(),
            "{tool} {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    }

    /// The text of each page as `pdftotext -layout` reads it.
    fn pdftotext(file: &Path) -> Vec<String> {
        let args = [
            "-layout".as_ref(),
            "-enc".as_ref(),
            "UTF-8".as_ref(),
            file.as_os_str(),
            "-".as_ref(),
        ];
        let text = String::from_utf8(poppler("pdftotext", &args)).expect("pdftotext writes UTF-8");
        let mut pages: Vec<String> = text.split('\u{c}').map(str::to_string).collect();
        // Every page ends in a form feed, so the last piece is empty.
        assert_eq!(pages.pop().as_deref(), Some(""));
        pages
    }

    #[test]
    fn a_report_reads_back_as_a_person_sees_it() {
        let mut rows: Vec<Vec<String>> = (0..300)
            .map(|index| {
                vec![
                    format!("2026-01-{:02} 10:{:02}", index % 28 + 1, index % 60),
                    if index % 2 == 0 { "BTC-EUR" } else { "ETH-EUR" }.to_string(),
                    format!("{}.{:02}", 60_000 + index, index % 100),
                    format!("-{}.5", index % 40),
                    format!("trade {index} — café in Zürich, 5 €"),
                ]
            })
            .collect();
        rows[7][4] = "a note much longer than its column can hold, so the report cuts it and \
                      shows that it did with an ellipsis at the end, then some more words"
            .repeat(2);
        let report = Report {
            title: "Trade ledger — Müller & Söhne (€)",
            summary: vec![
                ("Account".into(), "paper-1".into()),
                ("Net profit".into(), "1 234,50 € — net of fees".into()),
            ],
            tables: vec![Table {
                heading: "Trades",
                columns: &["Time", "Symbol", "Price", "PnL", "Note"],
                rows,
            }],
        };
        let pdf = render(&report);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("report.pdf");
        std::fs::write(&file, &pdf).unwrap();

        let pages = pdftotext(&file);
        let count = pages.len();
        assert!(count >= 2, "300 rows on {count} pages");
        let first = &pages[0];
        for expected in [
            "Trade ledger — Müller & Söhne (€)",
            "Account:",
            "Net profit:",
            "1 234,50 € — net of fees",
            "Time",
            "Symbol",
            "Note",
            "BTC-EUR",
            "60000.00",
            "trade 0 — café in Zürich, 5 €",
            "-6.5",
            "trade 6 — café in Zürich, 5 €",
            &format!("page 1 of {count}"),
        ] {
            assert!(
                first.contains(expected),
                "{expected:?} missing on page 1:\n{first}"
            );
        }
        let cut = first
            .lines()
            .find(|line| line.contains("a note much longer"))
            .expect("the long note is on page 1");
        assert!(
            cut.trim_end().ends_with('…') && !cut.contains("some more words"),
            "{cut}"
        );
        // The rows go on after page 1, under the header again.
        let last = &pages[count - 1];
        assert!(
            last.contains("Trades (continued)") && last.contains("Symbol"),
            "{last}"
        );
        assert!(
            last.contains("trade 299 — café") && last.contains(&format!("page {count} of {count}"))
        );

        let png = dir.path().join("page-1.png");
        let prefix = dir.path().join("page-1");
        let args = ["-png", "-r", "100", "-f", "1", "-l", "1", "-singlefile"].map(OsStr::new);
        poppler(
            "pdftoppm",
            &[&args[..], &[file.as_os_str(), prefix.as_os_str()]].concat(),
        );
        let size = std::fs::metadata(&png)
            .expect("pdftoppm wrote the PNG")
            .len();
        assert!(size > 10_000, "page 1 as PNG is only {size} bytes");
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut pixels).unwrap();
        // A4 landscape at 100 dpi: 842 x 595 points of 1/72 inch.
        assert!(info.width.abs_diff(1169) <= 1 && info.height.abs_diff(826) <= 1);
        let pixels = &pixels[..info.buffer_size()];
        let dark = pixels
            .chunks(3)
            .filter(|rgb| rgb.iter().all(|&c| c < 100))
            .count();
        let white = pixels
            .chunks(3)
            .filter(|rgb| rgb.iter().all(|&c| c == 255))
            .count();
        let all = pixels.len() / 3;
        assert!(
            dark > all / 100,
            "text on page 1: {dark} dark pixels of {all}"
        );
        assert!(
            white > all / 2,
            "a white page: {white} white pixels of {all}"
        );
        let grey = pixels
            .chunks(3)
            .filter(|rgb| rgb.iter().all(|&c| (230..=242).contains(&c)))
            .count();
        assert!(
            grey > all / 50,
            "grey stripes behind every other row: {grey} grey pixels"
        );

        // What the drawn glyphs say, read off the pixels (not the text layer pdftotext reads):
        // a wrong glyph mapping or a missing font shows here.
        let sharp = dir.path().join("page-1-sharp");
        let args = ["-png", "-r", "200", "-f", "1", "-l", "1", "-singlefile"].map(OsStr::new);
        poppler(
            "pdftoppm",
            &[&args[..], &[file.as_os_str(), sharp.as_os_str()]].concat(),
        );
        let output = Command::new("tesseract")
            .arg(sharp.with_extension("png"))
            .arg("-")
            .output()
            .expect("tesseract runs: install the Debian package tesseract-ocr");
        assert!(output.status.success(), "tesseract failed");
        let seen = String::from_utf8_lossy(&output.stdout);
        for expected in [
            "Trade ledger",
            "Account",
            "Net profit",
            "Symbol",
            "BTC-EUR",
            "ETH-EUR",
            "60000.00",
            "page 1 of",
        ] {
            assert!(
                seen.contains(expected),
                "{expected:?} not seen on page 1:\n{seen}"
            );
        }
    }

    #[test]
    fn text_beyond_latin1_is_kept() {
        let report = Report {
            title: "Zürich → 東京 € Ω",
            summary: vec![("Émetteur".into(), "🚀 café naïve — “quoted”".into())],
            tables: vec![Table {
                heading: "Ωμέγα",
                columns: &["名前", "Сумма"],
                rows: vec![vec!["Łódź".into(), "−12,5 ₽".into()]],
            }],
        };
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("report.pdf");
        std::fs::write(&file, render(&report)).unwrap();
        let pages = pdftotext(&file);
        assert_eq!(pages.len(), 1);
        for expected in [
            "Zürich → 東京 € Ω",
            "Émetteur:",
            "🚀 café naïve — “quoted”",
            "Ωμέγα",
            "名前",
            "Сумма",
            "Łódź",
            "−12,5 ₽",
        ] {
            assert!(
                pages[0].contains(expected),
                "{expected:?} missing:\n{}",
                pages[0]
            );
        }
        let args = ["-enc".as_ref(), "UTF-8".as_ref(), file.as_os_str()];
        let info = String::from_utf8(poppler("pdfinfo", &args)).unwrap();
        assert!(
            info.contains("Zürich → 東京 € Ω"),
            "the title in the properties:\n{info}"
        );
        // Both fonts are embedded subsets, with a map back to Unicode.
        let fonts = String::from_utf8(poppler("pdffonts", &[file.as_os_str()])).unwrap();
        for name in ["+DejaVuSansCondensed ", "+DejaVuSansCondensed-Bold "] {
            let line = fonts
                .lines()
                .find(|line| line.contains(name))
                .unwrap_or_else(|| panic!("{name} in\n{fonts}"));
            assert!(
                line.contains("CID TrueType") && line.contains("yes yes yes"),
                "{line}"
            );
        }
    }

    #[test]
    fn a_report_without_tables_has_one_page() {
        let report = Report {
            title: "Empty",
            summary: Vec::new(),
            tables: Vec::new(),
        };
        let pages = pages(&report);
        assert_eq!(pages.len(), 1);
        assert_eq!(texts(&pages[0]), ["Empty", "Empty", "page 1 of 1"]);
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
        let pages = pages(&report);
        let count = pages.len();
        assert!(count > 10, "5,000 rows on {count} pages");
        let mut rows_seen = Vec::new();
        for (index, page) in pages.iter().enumerate() {
            let texts = texts(page);
            assert!(
                texts.contains(&"Symbol") && texts.contains(&"Note"),
                "header row on page {}",
                index + 1
            );
            assert!(texts.contains(&format!("page {} of {count}", index + 1).as_str()));
            if index > 0 {
                assert!(texts.contains(&"All trades (continued)") || index == count - 1);
            }
            rows_seen.extend(
                texts
                    .iter()
                    .filter_map(|text| text.strip_prefix("row-"))
                    .map(str::to_string),
            );
            for (x, baseline, line) in pieces(page) {
                assert!(
                    x >= MARGIN && x + line.width <= PAGE_WIDTH - MARGIN + 0.01,
                    "{:?} at x {x} within the margins",
                    line.text
                );
                assert!(
                    baseline <= BODY_BOTTOM || baseline == FOOTER_BASELINE,
                    "body text above the footer"
                );
                assert!(baseline > MARGIN && baseline <= FOOTER_BASELINE);
            }
            assert!(
                page.stripes
                    .iter()
                    .all(|stripe| stripe.top >= MARGIN && stripe.top + stripe.height <= BODY_BOTTOM)
            );
        }
        let expected: Vec<String> = (0..5_000).map(|index| format!("{index:04}")).collect();
        assert_eq!(rows_seen, expected, "every row once, in order");
        let last = texts(&pages[count - 1]);
        assert!(last.contains(&"Nothing here") && last.contains(&"(no rows)"));
    }

    #[test]
    fn long_cells_are_cut_to_their_column() {
        let fonts = Fonts::load();
        let face = &fonts.regular;
        let long =
            "a note much longer than any column of a landscape page can hold, and then some more";
        let cut = fit(face, long, CELL_SIZE, 60.0);
        assert!(
            cut.text.ends_with('…') && cut.text.len() < long.len(),
            "{cut:?}"
        );
        assert!(cut.width <= 60.0 && cut.width == face.width(&cut.text, CELL_SIZE));
        assert_eq!(fit(face, "fits", CELL_SIZE, 60.0).text, "fits");
        assert_eq!(fit(face, "wide", CELL_SIZE, 1.0).text, "");
        // No space before the ellipsis.
        let words = fit(face, "ab cd", CELL_SIZE, face.width("ab …", CELL_SIZE));
        assert_eq!(words.text, "ab…");
        assert_eq!(fit(face, "a\tb\r\nc", CELL_SIZE, 60.0).text, "a b  c");

        let mut rows = trade_rows(10);
        rows[3][17] = long.into();
        let table = Table {
            heading: "T",
            columns: &COLUMNS,
            rows,
        };
        let widths = column_widths(&fonts, &table, CONTENT_WIDTH);
        assert!(widths.iter().sum::<f32>() <= CONTENT_WIDTH + 1e-3);
        // The short columns keep their natural width; the note takes what is left, capped.
        assert!(
            (widths[2] - (fonts.bold.width("Side", CELL_SIZE) + 2.0 * CELL_PADDING)).abs() < 1e-4
        );
        assert!(widths[17] <= MAX_COLUMN_WIDTH && widths[17] > widths[2]);
        assert!(is_numeric_column(&table, 4) && !is_numeric_column(&table, 0));
    }

    #[test]
    fn codes_are_printable_ascii_that_needs_no_escape() {
        let mut codes = Codes::default();
        assert_eq!(codes.encode("aba"), [*b"  ", *b" !", *b"  "].concat());
        let distinct: Vec<char> = ('\u{100}'..).take(CODE_COUNT + 10).collect();
        for &c in &distinct {
            codes.code(c);
        }
        assert_eq!(codes.chars.len(), CODE_COUNT);
        assert_eq!(codes.chars.last(), Some(&'\u{FFFD}'));
        // Characters past the last code share the replacement character's.
        assert_eq!(codes.code(distinct[CODE_COUNT + 5]), codes.code('\u{FFFD}'));
        let cids: Vec<u16> = codes.cids().map(|(cid, _)| cid).collect();
        assert!(cids.windows(2).all(|pair| pair[0] < pair[1]), "CIDs ascend");
        for byte in cids.iter().flat_map(|cid| cid.to_be_bytes()) {
            assert!(
                (b' '..=b'~').contains(&byte) && !b"()\\".contains(&byte),
                "{byte}"
            );
        }
        assert_eq!(codes.cids().next(), Some((0x2020, 'a')));
    }

    #[test]
    fn numbers_are_right_aligned_in_their_column() {
        let report = Report {
            title: "T",
            summary: Vec::new(),
            tables: vec![Table {
                heading: "H",
                columns: &["Name", "Amount"],
                rows: vec![
                    vec!["a".into(), "1.5".into()],
                    vec!["b".into(), "1234.5".into()],
                ],
            }],
        };
        let pages = pages(&report);
        let right_edge = |wanted: &str| {
            let (x, _, line) = pieces(&pages[0])
                .find(|(_, _, line)| line.text == wanted)
                .unwrap();
            x + line.width
        };
        assert!((right_edge("1.5") - right_edge("1234.5")).abs() < 1e-3);
        assert!((right_edge("Amount") - right_edge("1.5")).abs() < 1e-3);
    }
}
