//! A BERT encoder on the CPU, from a Hugging Face `config.json` and `model.safetensors`, as
//! sentence-transformers runs it for an embedding: the last hidden states of one text, pooled
//! (mean of the tokens, or the `[CLS]` token) and L2-normalised. Texts are encoded one at a time,
//! so no padding (nor attention mask) enters the arithmetic; the matrix products are
//! `matrixmultiply`'s (through `ndarray`), which picks the CPU's vector instructions at run time.

use std::collections::HashMap;

use ndarray::{Array1, Array2, ArrayView2, Axis, Slice};
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

/// What `config.json` says of the encoder.
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    #[serde(default)]
    pub model_type: String,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f32,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default = "default_position")]
    pub position_embedding_type: String,
}

fn default_eps() -> f32 {
    1e-12
}
fn default_act() -> String {
    "gelu".to_owned()
}
fn default_position() -> String {
    "absolute".to_owned()
}

/// How the token states become one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    Mean,
    Cls,
}

struct Linear {
    /// `[out, in]`, as torch keeps it.
    weight: Array2<f32>,
    bias: Array1<f32>,
}

impl Linear {
    fn forward(&self, x: &ArrayView2<f32>) -> Array2<f32> {
        x.dot(&self.weight.t()) + &self.bias
    }
}

struct LayerNorm {
    weight: Array1<f32>,
    bias: Array1<f32>,
    eps: f32,
}

impl LayerNorm {
    fn forward(&self, x: &mut Array2<f32>) {
        for mut row in x.rows_mut() {
            let n = row.len() as f32;
            let mean = row.sum() / n;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
            let scale = 1.0 / (var + self.eps).sqrt();
            for ((v, w), b) in row.iter_mut().zip(&self.weight).zip(&self.bias) {
                *v = (*v - mean) * scale * w + b;
            }
        }
    }
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// The encoder's weights.
pub struct Bert {
    config: BertConfig,
    words: Array2<f32>,
    positions: Array2<f32>,
    token_types: Array2<f32>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
}

impl std::fmt::Debug for Bert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bert").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Bert {
    /// From `config.json`'s settings and `model.safetensors`' bytes (float32 tensors, named as
    /// `BertModel` names them, with or without a `bert.` prefix).
    pub fn load(config: BertConfig, safetensors: &[u8]) -> Result<Bert, String> {
        if !config.model_type.is_empty() && config.model_type != "bert" {
            return Err(format!("config.json: a {} model, not BERT", config.model_type));
        }
        if config.hidden_act != "gelu" {
            return Err(format!("config.json: hidden_act {} (only gelu is served)", config.hidden_act));
        }
        if config.position_embedding_type != "absolute" {
            return Err(format!(
                "config.json: position_embedding_type {} (only absolute is served)",
                config.position_embedding_type
            ));
        }
        if config.num_attention_heads == 0 || config.hidden_size % config.num_attention_heads != 0 {
            return Err("config.json: hidden_size is not a multiple of num_attention_heads".to_owned());
        }
        let tensors = SafeTensors::deserialize(safetensors).map_err(|e| format!("model.safetensors: {e}"))?;
        let named: HashMap<String, String> = tensors
            .names()
            .into_iter()
            .map(|name| (name.strip_prefix("bert.").unwrap_or(name).to_owned(), name.to_owned()))
            .collect();
        let read = |name: &str, shape: &[usize]| -> Result<Vec<f32>, String> {
            let full = named.get(name).ok_or_else(|| format!("model.safetensors has no {name}"))?;
            let view = tensors.tensor(full).map_err(|e| format!("model.safetensors: {name}: {e}"))?;
            if view.dtype() != Dtype::F32 {
                return Err(format!(
                    "model.safetensors: {name} is {:?}; only F32 weights are read",
                    view.dtype()
                ));
            }
            if view.shape() != shape {
                return Err(format!(
                    "model.safetensors: {name} is {:?}, config.json says {shape:?}",
                    view.shape()
                ));
            }
            Ok(view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
        };
        let matrix = |name: &str, rows: usize, cols: usize| -> Result<Array2<f32>, String> {
            Array2::from_shape_vec((rows, cols), read(name, &[rows, cols])?)
                .map_err(|e| format!("{name}: {e}"))
        };
        let vector = |name: &str, len: usize| -> Result<Array1<f32>, String> {
            Ok(Array1::from_vec(read(name, &[len])?))
        };
        let h = config.hidden_size;
        let linear = |prefix: &str, out: usize, inp: usize| -> Result<Linear, String> {
            Ok(Linear {
                weight: matrix(&format!("{prefix}.weight"), out, inp)?,
                bias: vector(&format!("{prefix}.bias"), out)?,
            })
        };
        let norm = |prefix: &str| -> Result<LayerNorm, String> {
            Ok(LayerNorm {
                weight: vector(&format!("{prefix}.weight"), h)?,
                bias: vector(&format!("{prefix}.bias"), h)?,
                eps: config.layer_norm_eps,
            })
        };
        let rows = |name: &str| -> Result<usize, String> {
            let full = named.get(name).ok_or_else(|| format!("model.safetensors has no {name}"))?;
            let view = tensors.tensor(full).map_err(|e| format!("model.safetensors: {name}: {e}"))?;
            Ok(view.shape().first().copied().unwrap_or(0))
        };
        let word_rows = rows("embeddings.word_embeddings.weight")?;
        let type_rows = rows("embeddings.token_type_embeddings.weight")?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{i}");
            layers.push(Layer {
                query: linear(&format!("{p}.attention.self.query"), h, h)?,
                key: linear(&format!("{p}.attention.self.key"), h, h)?,
                value: linear(&format!("{p}.attention.self.value"), h, h)?,
                attention_out: linear(&format!("{p}.attention.output.dense"), h, h)?,
                attention_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                intermediate: linear(&format!("{p}.intermediate.dense"), config.intermediate_size, h)?,
                output: linear(&format!("{p}.output.dense"), h, config.intermediate_size)?,
                output_norm: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        Ok(Bert {
            words: matrix("embeddings.word_embeddings.weight", word_rows, h)?,
            positions: matrix("embeddings.position_embeddings.weight", config.max_position_embeddings, h)?,
            token_types: matrix("embeddings.token_type_embeddings.weight", type_rows, h)?,
            embedding_norm: norm("embeddings.LayerNorm")?,
            layers,
            config,
        })
    }

    /// The most tokens a text may have.
    pub fn max_positions(&self) -> usize {
        self.config.max_position_embeddings
    }

    /// The vector of one text's token ids (at most [`Bert::max_positions`] of them, each in the
    /// vocabulary), pooled and L2-normalised.
    pub fn embed(&self, ids: &[u32], pooling: Pooling) -> Vec<f32> {
        let h = self.config.hidden_size;
        let n = ids.len().min(self.max_positions());
        let mut x = Array2::<f32>::zeros((n, h));
        for (t, mut row) in x.rows_mut().into_iter().enumerate() {
            let word = (ids[t] as usize).min(self.words.nrows().saturating_sub(1));
            row.assign(&self.words.row(word));
            row += &self.positions.row(t);
            row += &self.token_types.row(0);
        }
        self.embedding_norm.forward(&mut x);
        for layer in &self.layers {
            x = self.layer(layer, x);
        }
        let mut pooled: Array1<f32> = match pooling {
            Pooling::Mean => x.mean_axis(Axis(0)).unwrap_or_else(|| Array1::zeros(h)),
            Pooling::Cls => x.row(0).to_owned(),
        };
        let norm = pooled.dot(&pooled).sqrt().max(1e-12);
        pooled /= norm;
        pooled.to_vec()
    }

    fn layer(&self, layer: &Layer, x: Array2<f32>) -> Array2<f32> {
        let heads = self.config.num_attention_heads;
        let d = self.config.hidden_size / heads;
        let view = x.view();
        let (q, k, v) = (layer.query.forward(&view), layer.key.forward(&view), layer.value.forward(&view));
        let scale = 1.0 / (d as f32).sqrt();
        let mut context = Array2::<f32>::zeros(x.raw_dim());
        for head in 0..heads {
            let cols = Slice::from(head * d..(head + 1) * d);
            let mut scores = q.slice_axis(Axis(1), cols).dot(&k.slice_axis(Axis(1), cols).t());
            for mut row in scores.rows_mut() {
                let max = row.fold(f32::NEG_INFINITY, |m, v| m.max(*v * scale));
                row.mapv_inplace(|v| (v * scale - max).exp());
                let sum = row.sum();
                row /= sum;
            }
            context.slice_axis_mut(Axis(1), cols).assign(&scores.dot(&v.slice_axis(Axis(1), cols)));
        }
        let mut x = x + layer.attention_out.forward(&context.view());
        layer.attention_norm.forward(&mut x);
        let mut inner = layer.intermediate.forward(&x.view());
        inner.mapv_inplace(gelu);
        let mut out = x + layer.output.forward(&inner.view());
        layer.output_norm.forward(&mut out);
        out
    }
}

/// GELU with the error function, as BERT's `gelu`.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// The error function (`libm`'s, in f64: torch's `erf` is exact to float32).
fn erf(x: f32) -> f32 {
    libm::erf(f64::from(x)) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_is_the_error_function_one() {
        assert!((gelu(0.0)).abs() < 1e-7);
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!((gelu(-1.0) + 0.158_655_25).abs() < 1e-6);
    }

    #[test]
    fn layer_norm_centres_and_scales_each_row() {
        let norm = LayerNorm { weight: Array1::from_vec(vec![1.0; 4]), bias: Array1::zeros(4), eps: 1e-12 };
        let mut x = Array2::from_shape_vec((1, 4), vec![1.0, 2.0, 3.0, 4.0]).expect("shape");
        norm.forward(&mut x);
        let row = x.row(0);
        assert!(row.sum().abs() < 1e-5);
        assert!((row.dot(&row) / 4.0 - 1.0).abs() < 1e-5);
    }

    #[test]
    fn a_model_that_is_not_bert_or_not_float32_is_refused() {
        let config = |model_type: &str| BertConfig {
            model_type: model_type.to_owned(),
            hidden_size: 4,
            num_hidden_layers: 0,
            num_attention_heads: 2,
            intermediate_size: 8,
            max_position_embeddings: 8,
            layer_norm_eps: 1e-12,
            hidden_act: "gelu".to_owned(),
            position_embedding_type: "absolute".to_owned(),
        };
        let error = Bert::load(config("t5"), &[]).expect_err("not bert");
        assert!(error.contains("t5"), "{error}");
        let error = Bert::load(config("bert"), b"not safetensors").expect_err("not safetensors");
        assert!(error.starts_with("model.safetensors"), "{error}");
    }
}
