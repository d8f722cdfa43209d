//! What calls cost: a model's prices per million input, cached-input and output tokens.

use serde::Deserialize;

use super::TokenUsage;

/// A model's prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million input tokens not read from the cache (cache writes included).
    pub input: f64,
    /// Per million output tokens.
    pub output: f64,
    /// Per million input tokens read from the provider's prompt cache (default: `input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
}

impl Price {
    /// The cost of `usage` in US dollars.
    pub fn cost(&self, usage: &TokenUsage) -> f64 {
        let cached = usage.cached_tokens.min(usage.prompt_tokens);
        let fresh = usage.prompt_tokens - cached;
        (fresh as f64 * self.input
            + cached as f64 * self.cached_input.unwrap_or(self.input)
            + usage.completion_tokens as f64 * self.output)
            / 1_000_000.0
    }

    /// Are the prices usable (finite, not negative)?
    pub fn is_valid(&self) -> bool {
        [self.input, self.output, self.cached_input.unwrap_or(0.0)].iter().all(|p| p.is_finite() && *p >= 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_prices_fresh_cached_and_output_tokens_apart() {
        let price = Price { input: 3.0, output: 15.0, cached_input: Some(0.3) };
        let usage = TokenUsage {
            prompt_tokens: 1_200,
            completion_tokens: 400,
            cached_tokens: 1_000,
            estimated: false,
        };
        // 200 × 3 + 1000 × 0.3 + 400 × 15 = 600 + 300 + 6000 = 6900 per million.
        assert!((price.cost(&usage) - 0.0069).abs() < 1e-12);
        let uncached = Price { cached_input: None, ..price };
        assert!((uncached.cost(&usage) - (1_200.0 * 3.0 + 6_000.0) / 1e6).abs() < 1e-12);
        assert!(
            !Price { input: -1.0, ..price }.is_valid() && !Price { output: f64::NAN, ..price }.is_valid()
        );
    }
}
