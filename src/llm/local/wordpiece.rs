//! BERT's WordPiece tokenizer, read from a Hugging Face `tokenizer.json`: the `BertNormalizer`
//! (clean the text, space out CJK characters, strip accents, lowercase), the
//! `BertPreTokenizer` (split at whitespace and around punctuation), the `WordPiece` model
//! (greedy longest match, continuations marked `##`) and `[CLS] ... [SEP]` around the result.
//! What the `tokenizers` library does for these components, checked against it in
//! `tests/e2e/local_embeddings.rs`; not read from the text: added tokens written out in it
//! (`[SEP]` typed by a user is text here, as it should be for an embedding).

use std::collections::HashMap;

use serde::Deserialize;
use unicode_general_category::{get_general_category, GeneralCategory};
use unicode_normalization::UnicodeNormalization;

/// A BERT tokenizer.
#[derive(Debug)]
pub struct WordPiece {
    vocab: HashMap<String, u32>,
    unk: u32,
    cls: u32,
    sep: u32,
    prefix: String,
    max_chars: usize,
    normalizer: Normalizer,
}

#[derive(Debug, Deserialize)]
struct TokenizerFile {
    normalizer: Option<NormalizerFile>,
    pre_tokenizer: Option<TypeOnly>,
    model: ModelFile,
}

#[derive(Debug, Deserialize)]
struct TypeOnly {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Debug, Deserialize)]
struct NormalizerFile {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default = "yes")]
    clean_text: bool,
    #[serde(default = "yes")]
    handle_chinese_chars: bool,
    strip_accents: Option<bool>,
    #[serde(default = "yes")]
    lowercase: bool,
}

#[derive(Debug, Deserialize)]
struct ModelFile {
    #[serde(rename = "type")]
    kind: String,
    vocab: HashMap<String, u32>,
    unk_token: String,
    #[serde(default = "hashes")]
    continuing_subword_prefix: String,
    #[serde(default = "hundred")]
    max_input_chars_per_word: usize,
}

fn yes() -> bool {
    true
}
fn hashes() -> String {
    "##".to_owned()
}
fn hundred() -> usize {
    100
}

#[derive(Debug, Clone, Copy)]
struct Normalizer {
    clean_text: bool,
    chinese: bool,
    strip_accents: bool,
    lowercase: bool,
}

impl WordPiece {
    /// From the text of a `tokenizer.json`; an error says which part is not BERT's.
    pub fn from_json(text: &str) -> Result<WordPiece, String> {
        let file: TokenizerFile =
            serde_json::from_str(text).map_err(|e| format!("tokenizer.json is not a tokenizer: {e}"))?;
        if file.model.kind != "WordPiece" {
            return Err(format!("tokenizer.json: a {} model, not WordPiece (BERT's)", file.model.kind));
        }
        if let Some(pre) = file.pre_tokenizer.as_ref().filter(|p| p.kind != "BertPreTokenizer") {
            return Err(format!("tokenizer.json: a {} pre-tokenizer, not BertPreTokenizer", pre.kind));
        }
        let normalizer = match file.normalizer {
            Some(n) if n.kind == "BertNormalizer" => Normalizer {
                clean_text: n.clean_text,
                chinese: n.handle_chinese_chars,
                strip_accents: n.strip_accents.unwrap_or(n.lowercase),
                lowercase: n.lowercase,
            },
            Some(n) => return Err(format!("tokenizer.json: a {} normalizer, not BertNormalizer", n.kind)),
            None => Normalizer { clean_text: false, chinese: false, strip_accents: false, lowercase: false },
        };
        let vocab = file.model.vocab;
        let id = |token: &str| {
            vocab.get(token).copied().ok_or_else(|| format!("tokenizer.json: the vocabulary has no {token}"))
        };
        Ok(WordPiece {
            unk: id(&file.model.unk_token)?,
            cls: id("[CLS]")?,
            sep: id("[SEP]")?,
            prefix: file.model.continuing_subword_prefix,
            max_chars: file.model.max_input_chars_per_word,
            normalizer,
            vocab,
        })
    }

    /// The token ids of `text` as the model reads it: `[CLS]`, the text's pieces cut to fit
    /// `max_len` in all, `[SEP]`.
    pub fn encode(&self, text: &str, max_len: usize) -> Vec<u32> {
        let keep = max_len.saturating_sub(2);
        let mut ids = vec![self.cls];
        let normalized = self.normalizer.apply(text);
        for word in pre_tokenize(&normalized) {
            if ids.len() > keep {
                break;
            }
            self.word_pieces(word, &mut ids);
        }
        ids.truncate(keep + 1);
        ids.push(self.sep);
        ids
    }

    /// Greedy longest-match pieces of one word (the whole word unknown when a part matches no
    /// piece).
    fn word_pieces(&self, word: &str, ids: &mut Vec<u32>) {
        if word.chars().count() > self.max_chars {
            ids.push(self.unk);
            return;
        }
        let first = ids.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                piece.clear();
                if start > 0 {
                    piece.push_str(&self.prefix);
                }
                piece.push_str(&word[start..end]);
                if let Some(&id) = self.vocab.get(&piece) {
                    found = Some(id);
                    break;
                }
                end = word[..end].char_indices().next_back().map_or(start, |(at, _)| at);
            }
            match found {
                Some(id) => {
                    ids.push(id);
                    start = end;
                }
                None => {
                    ids.truncate(first);
                    ids.push(self.unk);
                    return;
                }
            }
        }
    }
}

impl Normalizer {
    fn apply(self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            if self.clean_text {
                if c == '\0' || c == '\u{fffd}' || is_control(c) {
                    continue;
                }
                if is_whitespace(c) {
                    out.push(' ');
                    continue;
                }
            }
            if self.chinese && is_chinese(c) {
                out.push(' ');
                out.push(c);
                out.push(' ');
            } else {
                out.push(c);
            }
        }
        if self.strip_accents {
            out = out.nfd().filter(|c| get_general_category(*c) != GeneralCategory::NonspacingMark).collect();
        }
        if self.lowercase {
            out = out.to_lowercase();
        }
        out
    }
}

/// Words split at whitespace, and every punctuation character a word of its own.
fn pre_tokenize(text: &str) -> impl Iterator<Item = &str> {
    let mut words = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        if c.is_whitespace() || is_punctuation(c) {
            if let Some(from) = start.take() {
                words.push(&text[from..at]);
            }
            if !c.is_whitespace() {
                words.push(&text[at..at + c.len_utf8()]);
            }
        } else if start.is_none() {
            start = Some(at);
        }
    }
    if let Some(from) = start {
        words.push(&text[from..]);
    }
    words.into_iter()
}

fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Unicode's "other" characters (controls, formats, surrogates, private use, unassigned), as
/// BERT's cleaning drops them; tab and line breaks are whitespace instead.
fn is_control(c: char) -> bool {
    if matches!(c, '\t' | '\n' | '\r') {
        return false;
    }
    use GeneralCategory::{Control, Format, PrivateUse, Surrogate, Unassigned};
    matches!(get_general_category(c), Control | Format | PrivateUse | Surrogate | Unassigned)
}

fn is_punctuation(c: char) -> bool {
    use GeneralCategory::{
        ClosePunctuation, ConnectorPunctuation, DashPunctuation, FinalPunctuation, InitialPunctuation,
        OpenPunctuation, OtherPunctuation,
    };
    c.is_ascii_punctuation()
        || matches!(
            get_general_category(c),
            ConnectorPunctuation
                | DashPunctuation
                | OpenPunctuation
                | ClosePunctuation
                | InitialPunctuation
                | FinalPunctuation
                | OtherPunctuation
        )
}

/// The CJK Unified Ideographs blocks BERT spaces out (not Japanese kana nor Korean Hangul).
fn is_chinese(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B820..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer() -> WordPiece {
        let words = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "quick", "fox", "un", "##aff", "##able", ",", "!",
            "cafe", "中", "国", "-",
        ];
        let vocab: serde_json::Map<String, serde_json::Value> =
            words.iter().enumerate().map(|(i, w)| ((*w).to_owned(), serde_json::json!(i))).collect();
        let file = serde_json::json!({
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                           "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 10, "vocab": vocab},
        });
        WordPiece::from_json(&file.to_string()).expect("a BERT tokenizer")
    }

    #[test]
    fn words_are_lowercased_split_at_punctuation_and_cut_into_pieces() {
        let t = tokenizer();
        assert_eq!(t.encode("The QUICK fox, unaffable!", 64), [2, 4, 5, 6, 10, 7, 8, 9, 11, 3]);
    }

    #[test]
    fn accents_go_controls_go_and_cjk_characters_stand_alone() {
        let t = tokenizer();
        assert_eq!(t.encode("Café\u{200b}\u{7}", 64), [2, 12, 3]);
        assert_eq!(t.encode("中国fox", 64), [2, 13, 14, 6, 3]);
    }

    #[test]
    fn an_unknown_part_makes_the_word_unknown_and_a_long_word_is_unknown() {
        let t = tokenizer();
        assert_eq!(t.encode("unaffxable fox", 64), [2, 1, 6, 3]);
        assert_eq!(t.encode("foxfoxfoxfox", 64), [2, 1, 3], "more than max_input_chars_per_word");
        assert_eq!(t.encode("", 64), [2, 3]);
    }

    #[test]
    fn a_long_text_is_cut_to_the_length_with_its_markers_kept() {
        let t = tokenizer();
        let ids = t.encode(&"the fox unaffable ".repeat(50), 8);
        assert_eq!(ids, [2, 4, 6, 7, 8, 9, 4, 3]);
    }

    #[test]
    fn a_tokenizer_that_is_not_berts_is_refused() {
        let file = serde_json::json!({"model": {"type": "BPE", "vocab": {}, "unk_token": "x"}});
        let error = WordPiece::from_json(&file.to_string()).expect_err("not BERT");
        assert!(error.contains("BPE"), "{error}");
        assert!(WordPiece::from_json("{").is_err());
    }
}
