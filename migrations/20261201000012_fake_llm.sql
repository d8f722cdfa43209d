-- Runs whose crew uses a provider of kind "fake" (scripted replies, not a real model) say so in
-- the API (`fake_llm`), so a demo's output is never mistaken for a model's. A constant default:
-- adding the column rewrites no rows.
ALTER TABLE runs ADD COLUMN fake_llm boolean NOT NULL DEFAULT false;
