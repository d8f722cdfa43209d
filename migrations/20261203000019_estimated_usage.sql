-- Of a run's prompt and completion tokens, how many agentd estimated because the provider sent no
-- usage (llama.cpp's server streams none; see src/llm/estimate.rs). 0: every figure was reported.

ALTER TABLE runs ADD COLUMN estimated_tokens int8 NOT NULL DEFAULT 0;
