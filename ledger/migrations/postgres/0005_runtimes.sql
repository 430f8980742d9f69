-- A runtime's configuration: what its next sandbox is made with. Ports,
-- env and labels are JSON. Its status is read from its current sandbox
-- (sandbox_id), so the column that held it goes.
ALTER TABLE runtimes DROP COLUMN status;
ALTER TABLE runtimes ADD COLUMN template_id TEXT NOT NULL DEFAULT 'base';
ALTER TABLE runtimes ADD COLUMN milli_cpu BIGINT NOT NULL DEFAULT 0 CHECK (milli_cpu >= 0);
ALTER TABLE runtimes ADD COLUMN memory_mb BIGINT NOT NULL DEFAULT 0 CHECK (memory_mb >= 0);
ALTER TABLE runtimes ADD COLUMN timeout_s BIGINT NOT NULL DEFAULT 0 CHECK (timeout_s >= 0);
ALTER TABLE runtimes ADD COLUMN ports TEXT NOT NULL DEFAULT '[]';
ALTER TABLE runtimes ADD COLUMN env TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runtimes ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
CREATE INDEX runtimes_workspace ON runtimes (workspace_id, created_at, id);
