-- A paused sandbox is hibernated when its memory was checkpointed to disk and
-- its processes released; resuming it is a restore.
ALTER TABLE sandboxes ADD COLUMN hibernated INTEGER NOT NULL DEFAULT 0;
