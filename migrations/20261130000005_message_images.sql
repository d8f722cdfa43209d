-- Images a message carries to the model (tool results that are images), as
-- [{"media_type": "image/png", "data": "<base64>"}].
ALTER TABLE messages ADD COLUMN images jsonb;
