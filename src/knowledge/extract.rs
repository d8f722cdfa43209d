//! A document's text from its bytes, by media type: plain text and Markdown as they are; HTML
//! with its headings as Markdown headings, blocks as paragraphs and scripts, styles and markup
//! dropped; JSON as one `path: value` line per value; CSV as one `column: value; ...` line per
//! row; PDF as its pages' text (`pdf-extract`), pages apart as paragraphs. The text keeps the
//! structure the chunker cuts along.

use serde_json::Value;

/// The media types a document may have.
pub const SUPPORTED: &[&str] =
    &["text/plain", "text/markdown", "text/html", "application/json", "text/csv", "application/pdf"];

/// The media type a file name's extension stands for.
pub fn media_type_of_name(name: &str) -> Option<&'static str> {
    let extension = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match extension.as_str() {
        "txt" | "text" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "html" | "htm" => "text/html",
        "json" => "application/json",
        "csv" => "text/csv",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

/// What the first bytes of a file say it is, for the kinds often uploaded by mistake (or on
/// purpose) as documents: (what it is, its media type if it is a supported one).
fn signature(bytes: &[u8]) -> Option<(&'static str, Option<&'static str>)> {
    const SIGNATURES: &[(&[u8], &str, Option<&str>)] = &[
        (b"%PDF-", "a PDF document", Some("application/pdf")),
        (b"MZ", "a Windows executable", None),
        (b"\x7fELF", "an ELF executable", None),
        (b"\xca\xfe\xba\xbe", "a Mach-O or Java class file", None),
        (b"\xcf\xfa\xed\xfe", "a Mach-O executable", None),
        (b"#!", "a script", None),
        (b"PK\x03\x04", "a ZIP archive (or an Office document)", None),
        (b"\x1f\x8b", "a gzip archive", None),
        (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", None),
        (b"Rar!", "a RAR archive", None),
        (b"\x89PNG", "a PNG image", None),
        (b"\xff\xd8\xff", "a JPEG image", None),
        (b"GIF8", "a GIF image", None),
        (b"\xd0\xcf\x11\xe0", "an old Office document", None),
    ];
    SIGNATURES.iter().find(|(magic, _, _)| bytes.starts_with(magic)).map(|(_, what, media)| (*what, *media))
}

/// The media type an upload's content says it has when nothing declared one: a PDF by its
/// header, else text.
pub fn media_type_of_content(bytes: &[u8]) -> &'static str {
    match signature(bytes) {
        Some((_, Some(media_type))) => media_type,
        _ => "text/plain",
    }
}

/// Whether `bytes` can be a document of `media_type`, judged by their content: a PDF starts with
/// `%PDF-`, text is UTF-8, and nothing is an executable, an archive or an image. `Err` says what
/// the content is instead (the upload is refused at once rather than failing later).
pub fn judge_content(media_type: &str, bytes: &[u8]) -> Result<(), String> {
    let found = signature(bytes);
    if media_type == "application/pdf" {
        return match found {
            Some((_, Some("application/pdf"))) => Ok(()),
            Some((what, _)) => Err(format!("the file is {what}, not a PDF")),
            None => Err("the file is not a PDF (it does not start with %PDF-)".to_owned()),
        };
    }
    match found {
        Some((what, Some(actual))) => Err(format!("the file is {what}: upload it as {actual}")),
        Some((what, None)) if what != "a script" => Err(format!("the file is {what}, not {media_type}")),
        _ => match std::str::from_utf8(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)) {
            Ok(_) => Ok(()),
            Err(e) => {
                Err(format!("the file is not UTF-8 text (at byte {}), so not {media_type}", e.valid_up_to()))
            }
        },
    }
}

/// The essence of a `Content-Type` value (`text/html; charset=utf-8` → `text/html`), with the
/// common aliases read as the supported types.
pub fn normalize_media_type(value: &str) -> String {
    let essence = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    match essence.as_str() {
        "text/x-markdown" => "text/markdown".to_owned(),
        "application/xhtml+xml" => "text/html".to_owned(),
        "application/csv" => "text/csv".to_owned(),
        _ => essence,
    }
}

/// What a document's bytes say: its text, and a title if it names one.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    pub text: String,
    pub title: Option<String>,
}

/// The text of `bytes` of `media_type`, or why there is none.
pub fn extract(media_type: &str, bytes: &[u8]) -> Result<Extracted, String> {
    if !SUPPORTED.contains(&media_type) {
        return Err(format!(
            "documents of type '{media_type}' are not supported (supported: {})",
            SUPPORTED.join(", ")
        ));
    }
    if media_type == "application/pdf" {
        return pdf(bytes);
    }
    let text = std::str::from_utf8(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes))
        .map_err(|e| format!("the document is not UTF-8 text (at byte {})", e.valid_up_to()))?;
    let text = text.replace('\0', "");
    let extracted = match media_type {
        "text/html" => html(&text),
        "application/json" => {
            let value: Value =
                serde_json::from_str(&text).map_err(|e| format!("the document is not valid JSON: {e}"))?;
            let mut lines = Vec::new();
            flatten("", &value, &mut lines);
            Extracted { text: lines.join("\n"), title: None }
        }
        "text/csv" => Extracted { text: csv(&text), title: None },
        "text/markdown" => {
            let text = text.replace("\r\n", "\n");
            let title =
                text.lines().find_map(|line| line.trim().strip_prefix("# ")).map(|t| t.trim().to_owned());
            Extracted { title: title.filter(|t| !t.is_empty()), text }
        }
        _ => Extracted { text: text.replace("\r\n", "\n"), title: None },
    };
    if extracted.text.trim().is_empty() {
        return Err("the document has no text".to_owned());
    }
    Ok(extracted)
}

/// The text of a PDF's pages, each page's lines as they come and pages apart as paragraphs. A
/// PDF the extractor cannot read (or that makes it panic: it is a large parser of untrusted
/// input) fails with the reason; one without a text layer (a scan) has no text.
fn pdf(bytes: &[u8]) -> Result<Extracted, String> {
    if !bytes.starts_with(b"%PDF-") {
        return Err("the document is not a PDF (it does not start with %PDF-)".to_owned());
    }
    let pages = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem_by_pages(bytes))
        .map_err(|_| "the PDF could not be read (its structure is damaged or unsupported)".to_owned())?
        .map_err(|e| format!("the PDF could not be read: {e}"))?;
    let pages: Vec<String> = pages
        .iter()
        .map(|page| {
            let lines: Vec<&str> = page.lines().map(str::trim_end).collect();
            lines.join("\n").trim().replace('\0', "")
        })
        .filter(|page| !page.is_empty())
        .collect();
    if pages.is_empty() {
        return Err("the PDF has no text (a scan without a text layer?)".to_owned());
    }
    Ok(Extracted { text: pages.join("\n\n"), title: None })
}

/// `{"a": {"b": [1, "x"]}}` → `a.b[0]: 1`, `a.b[1]: x`.
fn flatten(path: &str, value: &Value, lines: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                let path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                flatten(&path, value, lines);
            }
        }
        Value::Array(items) => {
            for (i, value) in items.iter().enumerate() {
                flatten(&format!("{path}[{i}]"), value, lines);
            }
        }
        Value::Null => {}
        Value::String(text) => lines.push(format!("{path}: {text}")),
        other => lines.push(format!("{path}: {other}")),
    }
}

/// Rows as `column: value; column: value` lines (RFC 4180 quoting), the first row naming the
/// columns; rows are paragraphs, so the chunker keeps them whole.
fn csv(text: &str) -> String {
    let rows = csv_rows(text);
    let Some((header, rows)) = rows.split_first() else { return String::new() };
    rows.iter()
        .filter(|row| row.iter().any(|cell| !cell.trim().is_empty()))
        .map(|row| {
            row.iter()
                .enumerate()
                .filter(|(_, cell)| !cell.trim().is_empty())
                .map(|(i, cell)| match header.get(i).map(|h| h.trim()).filter(|h| !h.is_empty()) {
                    Some(name) => format!("{name}: {}", cell.trim()),
                    None => cell.trim().to_owned(),
                })
                .collect::<Vec<_>>()
                .join("; ")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if cell.is_empty() => quoted = true,
            (',', false) => row.push(std::mem::take(&mut cell)),
            ('\r', false) => {}
            ('\n', false) => {
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            (c, _) => cell.push(c),
        }
    }
    if !cell.is_empty() || !row.is_empty() {
        row.push(cell);
        rows.push(row);
    }
    rows
}

/// Elements whose content is not text.
const SKIPPED: &[&str] = &["script", "style", "noscript", "template", "svg", "iframe"];
/// Elements that break text into paragraphs.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "nav",
    "aside",
    "ul",
    "ol",
    "li",
    "table",
    "tr",
    "blockquote",
    "pre",
    "br",
    "hr",
    "dl",
    "dt",
    "dd",
    "figure",
    "figcaption",
    "form",
];

/// HTML as Markdown-ish text: `<h2>` → `## `, blocks → blank lines, cells separated, entities
/// decoded, the rest of the markup dropped; the `<title>` (or the first `<h1>`) is the title.
fn html(source: &str) -> Extracted {
    let mut out = String::new();
    let mut title = None;
    let mut skipping: Option<String> = None;
    let mut in_title = false;
    let mut title_text = String::new();
    let mut rest = source;
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        if skipping.is_none() {
            let decoded = decode_entities(text);
            if in_title {
                title_text.push_str(&decoded);
            } else {
                push_text(&mut out, &decoded);
            }
        }
        rest = &rest[open..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        let Some(close) = rest.find('>') else {
            rest = "";
            break;
        };
        let tag = &rest[1..close];
        rest = &rest[close + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if let Some(skipped) = &skipping {
            if closing && &name == skipped {
                skipping = None;
            }
            continue;
        }
        if name == "title" {
            in_title = !closing;
            if closing && title.is_none() {
                title = Some(collapse(&title_text)).filter(|t| !t.is_empty());
            }
            continue;
        }
        if !closing && SKIPPED.contains(&name.as_str()) && !tag.ends_with('/') {
            skipping = Some(name);
            continue;
        }
        let level = match name.as_bytes() {
            [b'h', digit @ b'1'..=b'6'] => Some(usize::from(digit - b'0')),
            _ => None,
        };
        match (level, closing) {
            (Some(level), false) => {
                out.push_str("\n\n");
                out.push_str(&"#".repeat(level));
                out.push(' ');
            }
            (Some(_), true) => out.push_str("\n\n"),
            (None, _) if BLOCKS.contains(&name.as_str()) => out.push_str("\n\n"),
            (None, _) if matches!(name.as_str(), "td" | "th") && !out.ends_with(char::is_whitespace) => {
                out.push(' ')
            }
            _ => {}
        }
    }
    if skipping.is_none() {
        push_text(&mut out, &decode_entities(rest));
    }
    let text = tidy(&out);
    let title =
        title.or_else(|| text.lines().find_map(|line| line.strip_prefix("# ").map(|t| t.trim().to_owned())));
    Extracted { text, title }
}

/// Append text, its runs of whitespace as one space.
fn push_text(out: &mut String, text: &str) {
    let collapsed = collapse(text);
    if collapsed.is_empty() {
        return;
    }
    if text.starts_with(char::is_whitespace) && !out.ends_with(char::is_whitespace) && !out.is_empty() {
        out.push(' ');
    }
    out.push_str(&collapsed);
    if text.ends_with(char::is_whitespace) {
        out.push(' ');
    }
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Lines trimmed, at most one blank line between paragraphs.
fn tidy(text: &str) -> String {
    let mut out = String::new();
    let mut blank = false;
    for line in text.lines().map(str::trim) {
        if line.is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push_str("\n\n");
        } else if !out.is_empty() {
            out.push('\n');
        }
        blank = false;
        out.push_str(line);
    }
    out
}

/// The entities text is written with: the five of XML, `&nbsp;` and numeric references.
fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let Some(end) = rest[..rest.len().min(12)].find(';') else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" | "#39" => Some('\''),
            "nbsp" => Some(' '),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pdf_gives_its_pages_text_and_one_without_text_or_broken_fails_with_the_reason() {
        let pdf = include_bytes!("../../tests/knowledge/pdf/night-jobs.pdf");
        let extracted = extract("application/pdf", pdf).expect("text");
        assert!(extracted.text.contains("Recurring invoices are generated at 02:00"), "{}", extracted.text);
        let (first, second) = extracted.text.split_once("Backups").expect("the second page");
        assert!(first.contains("Recurring invoices") && first.ends_with("\n\n"), "{first:?}");
        assert!(second.contains("every Sunday at 04:30"), "{second}");
        let scan = include_bytes!("../../tests/knowledge/pdf/no-text.pdf");
        assert_eq!(
            extract("application/pdf", scan),
            Err("the PDF has no text (a scan without a text layer?)".into())
        );
        let cut = &pdf[..pdf.len() / 2];
        assert!(extract("application/pdf", cut).is_err_and(|e| e.starts_with("the PDF could not be read")));
        assert!(extract("application/pdf", b"hello").is_err_and(|e| e.contains("not a PDF")));
    }

    #[test]
    fn html_keeps_headings_and_paragraphs_and_drops_scripts_and_markup() {
        let page = "<html><head><title>Lumen &amp; Co</title><style>p{}</style></head><body>\
            <script>var x = '<p>no</p>';</script><h1>Guide</h1><p>First <b>bold</b> line.</p>\
            <!-- a comment --><h2>Install</h2><ul><li>One</li><li>Two &lt;3&gt;</li></ul>\
            <table><tr><td>a</td><td>b</td></tr></table></body></html>";
        let extracted = extract("text/html", page.as_bytes()).expect("text");
        assert_eq!(extracted.title.as_deref(), Some("Lumen & Co"));
        assert_eq!(extracted.text, "# Guide\n\nFirst bold line.\n\n## Install\n\nOne\n\nTwo <3>\n\na b");
    }

    #[test]
    fn json_and_csv_become_lines_of_named_values() {
        let json = br#"{"plan": {"name": "Pro", "seats": [5, 10]}, "note": null}"#;
        assert_eq!(
            extract("application/json", json).expect("text").text,
            "plan.name: Pro\nplan.seats[0]: 5\nplan.seats[1]: 10"
        );
        let csv = "code,meaning\nLL-1,\"Disk full, \"\"really\"\"\"\r\nLL-2,Offline\n\n";
        assert_eq!(
            extract("text/csv", csv.as_bytes()).expect("text").text,
            "code: LL-1; meaning: Disk full, \"really\"\n\ncode: LL-2; meaning: Offline"
        );
    }

    #[test]
    fn uploads_are_judged_by_what_their_bytes_are() {
        let pdf = include_bytes!("../../tests/knowledge/pdf/night-jobs.pdf");
        assert_eq!(judge_content("application/pdf", pdf), Ok(()));
        assert_eq!(media_type_of_content(pdf), "application/pdf");
        assert_eq!(media_type_of_content(b"plain words"), "text/plain");
        assert_eq!(judge_content("text/markdown", "# Caf\u{e9}".as_bytes()), Ok(()));
        assert_eq!(judge_content("text/plain", b"\xEF\xBB\xBFwith a BOM"), Ok(()));
        assert_eq!(judge_content("text/plain", b"#!/bin/sh\necho text"), Ok(()));
        let refused = [
            ("text/plain", b"MZ\x90\x00".as_slice(), "the file is a Windows executable, not text/plain"),
            ("text/markdown", b"\x7fELF\x02", "the file is an ELF executable, not text/markdown"),
            (
                "application/pdf",
                b"PK\x03\x04",
                "the file is a ZIP archive (or an Office document), not a PDF",
            ),
            ("application/pdf", b"hello", "the file is not a PDF (it does not start with %PDF-)"),
            ("text/html", b"%PDF-1.7 ...", "the file is a PDF document: upload it as application/pdf"),
            ("text/csv", b"a,b\n\xe9,1", "the file is not UTF-8 text (at byte 4), so not text/csv"),
            ("application/json", b"\x89PNG\r\n", "the file is a PNG image, not application/json"),
        ];
        for (media_type, bytes, why) in refused {
            assert_eq!(judge_content(media_type, bytes), Err(why.to_owned()), "{media_type}");
        }
    }

    #[test]
    fn bad_documents_say_why() {
        assert_eq!(extract("text/plain", b"  \n ").unwrap_err(), "the document has no text");
        assert!(extract("text/plain", b"\xff\xfe").unwrap_err().contains("not UTF-8"));
        assert!(extract("application/json", b"{").unwrap_err().contains("not valid JSON"));
        assert!(extract("image/png", b"x").unwrap_err().contains("not supported"));
        assert_eq!(extract("text/html", b"<script>x</script>").unwrap_err(), "the document has no text");
    }

    #[test]
    fn media_types_come_from_names_and_headers() {
        assert_eq!(media_type_of_name("Guide.MD"), Some("text/markdown"));
        assert_eq!(media_type_of_name("a.pdf"), Some("application/pdf"));
        assert_eq!(media_type_of_name("noext"), None);
        assert_eq!(normalize_media_type("text/HTML; charset=utf-8"), "text/html");
        assert_eq!(normalize_media_type("text/x-markdown"), "text/markdown");
    }
}
