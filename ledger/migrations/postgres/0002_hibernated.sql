-- A paused sandbox is hibernated when its memory was checkpointed to disk and
-- its processes released; resuming it is a restore.
ALTER TABLE sandboxes ADD COLUMN hibernated BOOLEAN NOT NULL DEFAULT false;
