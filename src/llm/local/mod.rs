//! The `local` provider: sentence-transformers embedding models run on this machine's CPU, so a
//! private deployment embeds without any external service. A model is a folder under the
//! provider's `models_dir` (`local/all-minilm-l6-v2` is `<models_dir>/all-minilm-l6-v2`) holding
//! a BERT encoder's `config.json`, `model.safetensors` (float32) and `tokenizer.json`, and
//! optionally sentence-transformers' `sentence_bert_config.json` (the longest input) and
//! `1_Pooling/config.json` (mean or `[CLS]` pooling). Loaded at its first use and kept; each
//! batch is computed on a blocking thread. No chat models.

mod bert;
mod wordpiece;

pub use bert::{Bert, BertConfig, Pooling};
pub use wordpiece::WordPiece;

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use tokio::sync::Mutex;

use super::{ChatRequest, EmbedFuture, Embeddings, LlmClient, LlmError, LlmErrorKind, LlmFuture};

/// A sentence-embedding model: its tokenizer, its encoder and how it pools.
#[derive(Debug)]
pub struct SentenceModel {
    tokenizer: WordPiece,
    bert: Bert,
    max_len: usize,
    pooling: Pooling,
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
}

impl SentenceModel {
    /// Read the model in `dir`; an error names the file and what is wrong with it.
    pub fn load(dir: &Path) -> Result<SentenceModel, String> {
        let read = |name: &str| {
            std::fs::read(dir.join(name)).map_err(|e| format!("{}: {e}", dir.join(name).display()))
        };
        let json = |name: &str| -> Result<Option<serde_json::Value>, String> {
            match std::fs::read(dir.join(name)) {
                Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| format!("{name}: {e}")),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(format!("{}: {e}", dir.join(name).display())),
            }
        };
        let config: BertConfig =
            serde_json::from_slice(&read("config.json")?).map_err(|e| format!("config.json: {e}"))?;
        let tokenizer = String::from_utf8(read("tokenizer.json")?)
            .map_err(|_| "tokenizer.json is not UTF-8".to_owned())
            .and_then(|text| WordPiece::from_json(&text))?;
        let bert = Bert::load(config, &read("model.safetensors")?)?;
        let sentence: Option<SentenceBertConfig> = json("sentence_bert_config.json")?
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| format!("sentence_bert_config.json: {e}"))?;
        let max_len = sentence
            .and_then(|s| s.max_seq_length)
            .unwrap_or(bert.max_positions())
            .clamp(2, bert.max_positions().max(2));
        let pooling: Option<PoolingConfig> = json("1_Pooling/config.json")?
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| format!("1_Pooling/config.json: {e}"))?;
        let pooling = match pooling {
            None => Pooling::Mean,
            Some(p) if p.pooling_mode_mean_tokens => Pooling::Mean,
            Some(p) if p.pooling_mode_cls_token => Pooling::Cls,
            Some(_) => return Err("1_Pooling/config.json: only mean and CLS pooling are served".to_owned()),
        };
        Ok(SentenceModel { tokenizer, bert, max_len, pooling })
    }

    /// The token ids the model reads of `text` (cut to its longest input).
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text, self.max_len)
    }

    /// The L2-normalised vector of `text`, and the tokens it took.
    pub fn embed(&self, text: &str) -> (Vec<f32>, usize) {
        let ids = self.tokens(text);
        (self.bert.embed(&ids, self.pooling), ids.len())
    }
}

/// The client of a `local` provider.
pub struct LocalClient {
    dir: PathBuf,
    models: Mutex<HashMap<String, Arc<SentenceModel>>>,
}

impl LocalClient {
    /// Models are the folders of `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> LocalClient {
        LocalClient { dir: dir.into(), models: Mutex::new(HashMap::new()) }
    }

    /// The model named `name`, loaded now if it is not yet.
    pub async fn model(&self, name: &str) -> Result<Arc<SentenceModel>, LlmError> {
        let invalid = |message: String| LlmError::new(LlmErrorKind::Other, message);
        let relative = Path::new(name);
        let plain = !name.is_empty()
            && relative
                .components()
                .all(|c| matches!(c, Component::Normal(part) if !part.to_string_lossy().starts_with('.')));
        if !plain {
            return Err(invalid(format!("'{name}' is not a model folder's name")));
        }
        // Held while loading: a second caller waits for the first load instead of repeating it.
        let mut models = self.models.lock().await;
        if let Some(model) = models.get(name) {
            return Ok(model.clone());
        }
        let dir = self.dir.join(relative);
        let loaded = tokio::task::spawn_blocking(move || SentenceModel::load(&dir))
            .await
            .map_err(|e| invalid(format!("loading the model '{name}' failed: {e}")))?
            .map_err(|e| invalid(format!("the local model '{name}' cannot be read: {e}")))?;
        let model = Arc::new(loaded);
        models.insert(name.to_owned(), model.clone());
        Ok(model)
    }

    async fn embeddings(&self, model: &str, inputs: &[String]) -> Result<Embeddings, LlmError> {
        let loaded = self.model(model).await?;
        let texts = inputs.to_vec();
        let (vectors, tokens) = tokio::task::spawn_blocking(move || {
            let mut tokens = 0u64;
            let vectors = texts
                .iter()
                .map(|text| {
                    let (vector, count) = loaded.embed(text);
                    tokens += count as u64;
                    vector
                })
                .collect::<Vec<_>>();
            (vectors, tokens)
        })
        .await
        .map_err(|e| LlmError::new(LlmErrorKind::Other, format!("embedding with '{model}' failed: {e}")))?;
        Ok(Embeddings { vectors, tokens, estimated: false })
    }
}

impl LlmClient for LocalClient {
    fn system(&self) -> &'static str {
        "agentd.local"
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> LlmFuture<'a> {
        Box::pin(async move {
            let message = format!(
                "'{}' is a local provider's model: local providers serve embedding models only",
                request.model
            );
            Err(LlmError::new(LlmErrorKind::Other, message))
        })
    }

    fn embed<'a>(&'a self, model: &'a str, inputs: &'a [String]) -> EmbedFuture<'a> {
        Box::pin(self.embeddings(model, inputs))
    }
}
