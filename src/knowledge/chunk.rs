//! Cutting a document's text into chunks: along its Markdown headings (a heading starts a new
//! chunk, and every chunk carries the headings it sits under), then paragraph by paragraph up to
//! the base's `max_tokens`, a paragraph too long for one chunk by sentences and then by words. The
//! next chunk of a section begins with the last `overlap` tokens of the one before, so a fact cut
//! in two is whole in one of them.

use crate::domain::knowledge::Chunking;
use crate::store::NewChunk;

/// Headings deeper than this are text.
const MAX_HEADING_LEVEL: usize = 6;

/// The chunks of `text` (Markdown or plain text), with `count` giving a text's tokens.
pub fn chunk(text: &str, chunking: Chunking, count: &dyn Fn(&str) -> u64) -> Vec<NewChunk> {
    let mut chunks = Vec::new();
    for section in sections(text) {
        let heading = section.headings.join(" > ");
        let mut packer =
            Packer { chunking, count, heading: &heading, current: Vec::new(), chunks: &mut chunks };
        for paragraph in &section.paragraphs {
            packer.add_paragraph(paragraph);
        }
        packer.flush();
    }
    chunks
}

/// The paragraphs under one heading path.
#[derive(Debug, Default)]
struct Section {
    headings: Vec<String>,
    paragraphs: Vec<String>,
}

/// Split Markdown into sections at its headings (`#` to `######`), each with its paragraphs
/// (lines separated by blank lines; a fenced code block is one paragraph).
fn sections(text: &str) -> Vec<Section> {
    let mut sections = vec![Section::default()];
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut fenced = false;
    let end_paragraph = |paragraph: &mut Vec<&str>, sections: &mut Vec<Section>| {
        if !paragraph.is_empty() {
            let text = paragraph.join("\n").trim().to_owned();
            if let (false, Some(section)) = (text.is_empty(), sections.last_mut()) {
                section.paragraphs.push(text);
            }
            paragraph.clear();
        }
    };
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            paragraph.push(line);
            continue;
        }
        if fenced {
            paragraph.push(line);
            continue;
        }
        if let Some((level, title)) = heading(trimmed) {
            end_paragraph(&mut paragraph, &mut sections);
            stack.retain(|(l, _)| *l < level);
            stack.push((level, title.to_owned()));
            sections.push(Section {
                headings: stack.iter().map(|(_, t)| t.clone()).collect(),
                paragraphs: Vec::new(),
            });
            continue;
        }
        if line.trim().is_empty() {
            end_paragraph(&mut paragraph, &mut sections);
        } else {
            paragraph.push(line);
        }
    }
    end_paragraph(&mut paragraph, &mut sections);
    sections.retain(|s| !s.paragraphs.is_empty());
    sections
}

/// `## Title` → (2, "Title").
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if level == 0 || level > MAX_HEADING_LEVEL {
        return None;
    }
    let rest = &line[level..];
    if !rest.starts_with(' ') {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim();
    (!title.is_empty()).then_some((level, title))
}

/// Fills chunks of one section.
struct Packer<'a> {
    chunking: Chunking,
    count: &'a dyn Fn(&str) -> u64,
    heading: &'a str,
    /// The pieces of the chunk being filled.
    current: Vec<String>,
    chunks: &'a mut Vec<NewChunk>,
}

impl Packer<'_> {
    fn max(&self) -> u64 {
        u64::from(self.chunking.max_tokens)
    }

    fn tokens(&self, text: &str) -> u64 {
        (self.count)(text)
    }

    fn current_text(&self) -> String {
        self.current.join("\n\n")
    }

    fn add_paragraph(&mut self, paragraph: &str) {
        if self.tokens(paragraph) > self.max() {
            for piece in split_long(paragraph, self.max(), self.count) {
                self.add_piece(piece);
            }
        } else {
            self.add_piece(paragraph.to_owned());
        }
    }

    /// Add a piece no longer than a chunk: to the current chunk if it fits, else to a new one
    /// that starts with the overlap.
    fn add_piece(&mut self, piece: String) {
        let mut candidate = self.current.clone();
        candidate.push(piece.clone());
        if self.current.is_empty() || self.tokens(&candidate.join("\n\n")) <= self.max() {
            self.current = candidate;
            return;
        }
        let previous = self.current_text();
        self.flush();
        let overlap = tail(&previous, u64::from(self.chunking.overlap), self.count);
        if !overlap.is_empty() && self.tokens(&format!("{overlap}\n\n{piece}")) <= self.max() {
            self.current.push(overlap);
        }
        self.current.push(piece);
    }

    fn flush(&mut self) {
        if self.current.is_empty() {
            return;
        }
        let text = self.current_text();
        let tokens = self.tokens(&text);
        self.chunks.push(NewChunk {
            heading: self.heading.to_owned(),
            text,
            tokens: i32::try_from(tokens).unwrap_or(i32::MAX),
        });
        self.current.clear();
    }
}

/// A paragraph longer than `max` tokens in pieces of at most `max`: whole sentences where they
/// fit, words otherwise.
fn split_long(paragraph: &str, max: u64, count: &dyn Fn(&str) -> u64) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    for sentence in sentences(paragraph) {
        let units: Vec<String> = match count(sentence) > max {
            true => sentence.split_whitespace().map(str::to_owned).collect(),
            false => vec![sentence.to_owned()],
        };
        for unit in units {
            let joined = match current.is_empty() {
                true => unit.clone(),
                false => format!("{current} {unit}"),
            };
            if current.is_empty() || count(&joined) <= max {
                current = joined;
            } else {
                pieces.push(std::mem::take(&mut current));
                current = unit;
            }
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// Sentences: text up to and with `.`, `!` or `?` followed by whitespace.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        let ends =
            matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1).is_some_and(|n| n.is_ascii_whitespace());
        if ends {
            let sentence = text[start..=i].trim();
            if !sentence.is_empty() {
                out.push(sentence);
            }
            start = i + 1;
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// The last words of `text` that make up to `tokens` tokens.
fn tail(text: &str, tokens: u64, count: &dyn Fn(&str) -> u64) -> String {
    if tokens == 0 {
        return String::new();
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut start = words.len();
    while start > 0 && count(&words[start - 1..].join(" ")) <= tokens {
        start -= 1;
    }
    words[start..].join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per word, for predictable sizes.
    fn words(text: &str) -> u64 {
        text.split_whitespace().count() as u64
    }

    fn cut(text: &str, max_tokens: u32, overlap: u32) -> Vec<NewChunk> {
        chunk(text, Chunking { max_tokens, overlap }, &words)
    }

    #[test]
    fn headings_start_chunks_and_name_them() {
        let text = "# Guide\nIntro line.\n\n## Install\nRun the installer.\n\n### Linux\nUse the package.\n\n## Use\nOpen it.";
        let chunks = cut(text, 100, 0);
        let headings: Vec<&str> = chunks.iter().map(|c| c.heading.as_str()).collect();
        assert_eq!(headings, ["Guide", "Guide > Install", "Guide > Install > Linux", "Guide > Use"]);
        assert_eq!(chunks[2].text, "Use the package.");
        assert_eq!(chunks[3].tokens, 2);
    }

    #[test]
    fn paragraphs_fill_a_chunk_up_to_its_size_and_the_next_repeats_the_overlap() {
        let text = "one two three four\n\nfive six seven eight\n\nnine ten eleven twelve";
        let chunks = cut(text, 9, 2);
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].text, "one two three four\n\nfive six seven eight");
        assert_eq!(chunks[1].text, "seven eight\n\nnine ten eleven twelve", "the overlap leads");
        assert!(chunks.iter().all(|c| c.tokens <= 9));
    }

    #[test]
    fn a_long_paragraph_is_cut_by_sentences_then_words_and_no_chunk_is_over_the_size() {
        let long_sentence = (1..=30).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
        let text = format!("Short one. Another short one. {long_sentence}.");
        let chunks = cut(&text, 8, 0);
        assert!(chunks.iter().all(|c| c.tokens <= 8), "{chunks:?}");
        let all: Vec<String> =
            chunks.iter().flat_map(|c| c.text.split_whitespace().map(str::to_owned)).collect();
        assert_eq!(all.len(), 5 + 30, "every word is kept once without overlap");
    }

    #[test]
    fn fenced_code_is_not_read_as_headings_and_empty_text_has_no_chunks() {
        let text = "## Shell\n```\n# not a heading\nls\n```";
        let chunks = cut(text, 50, 0);
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].heading, "Shell");
        assert!(chunks[0].text.contains("# not a heading"));
        assert!(cut("  \n\n \n", 50, 0).is_empty());
        assert!(cut("# Only a title", 50, 0).is_empty());
    }
}
