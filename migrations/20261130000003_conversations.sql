-- A task's messages and tool calls may belong to a sub-conversation (a coworker's, in the
-- hierarchical process): `task` names the task, `conversation` the conversation within it.
ALTER TABLE messages ADD COLUMN conversation text;
UPDATE messages SET conversation = task;
ALTER TABLE tool_calls ADD COLUMN conversation text;
UPDATE tool_calls SET conversation = task;
