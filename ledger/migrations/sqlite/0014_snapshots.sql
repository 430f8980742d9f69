-- Snapshots: a sandbox's captured state, a record of its own that outlives
-- its source (rows are never deleted: a deleted snapshot keeps its row,
-- state 'deleted'). purpose '' is a user's snapshot, 'fork' the capture a
-- fork restores its children from. access_token is the token of the agent
-- the snapshot holds, sealed and bound to the row, for serve to give each
-- restored agent its own. Storage held (creating, ready) is billed per GiB
-- (pricing.SnapshotStorage) in storage_settlements.
CREATE TABLE snapshots (
    id                TEXT PRIMARY KEY,
    org_id            TEXT NOT NULL REFERENCES orgs (id),
    workspace_id      TEXT NOT NULL REFERENCES workspaces (id),
    project_id        TEXT NOT NULL REFERENCES projects (id),
    source_sandbox_id TEXT NOT NULL REFERENCES sandboxes (id),
    provider          TEXT NOT NULL,
    template_id       TEXT NOT NULL,
    template_version  TEXT NOT NULL DEFAULT '',
    name              TEXT NOT NULL DEFAULT '',
    metadata          TEXT NOT NULL DEFAULT '{}',
    memory            INTEGER NOT NULL,
    purpose           TEXT NOT NULL DEFAULT '',
    state             TEXT NOT NULL,
    size_bytes        BIGINT NOT NULL DEFAULT 0,
    paused_us         BIGINT NOT NULL DEFAULT 0,
    milli_cpu         BIGINT NOT NULL,
    memory_mb         BIGINT NOT NULL,
    disk_mb           BIGINT NOT NULL,
    env_var_names     TEXT NOT NULL DEFAULT '[]',
    handle            TEXT NOT NULL DEFAULT '',
    access_token      TEXT NOT NULL DEFAULT '',
    diagnostic        TEXT NOT NULL DEFAULT '',
    created_at        BIGINT NOT NULL,
    ready_at          BIGINT,
    deleted_at        BIGINT,
    billed_micros     BIGINT NOT NULL DEFAULT 0,
    unbilled_nanos    BIGINT NOT NULL DEFAULT 0,
    last_settled_at   BIGINT NOT NULL
);
CREATE INDEX snapshots_org_created ON snapshots (org_id, created_at DESC, id DESC);
CREATE INDEX snapshots_open ON snapshots (provider, state);

-- The snapshot a sandbox started from, and the sandbox it was forked from.
ALTER TABLE sandboxes ADD COLUMN snapshot_id TEXT NOT NULL DEFAULT '';
ALTER TABLE sandboxes ADD COLUMN forked_from TEXT NOT NULL DEFAULT '';


-- What storage held outside sandboxes paid (snapshots; volumes, 0015): a
-- settlement per interval, of the bytes held then, at the resource's rate
-- (snapshot_storage, volume_storage), as much as the balance could pay.
CREATE TABLE storage_settlements (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    project_id   TEXT NOT NULL REFERENCES projects (id),
    provider     TEXT NOT NULL,
    kind         TEXT NOT NULL, -- snapshot, volume
    resource_id  TEXT NOT NULL, -- the snapshot's or volume's sbx UUID
    bytes        BIGINT NOT NULL,
    from_at      BIGINT NOT NULL,
    to_at        BIGINT NOT NULL,
    micros       BIGINT NOT NULL,
    balance_after BIGINT NOT NULL
);
CREATE INDEX storage_settlements_org_at ON storage_settlements (org_id, to_at);
