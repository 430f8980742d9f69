-- Volumes: named storage with a size cap in a project, outliving the
-- sandboxes that mount it. Rows are never deleted (state 'deleted'); a
-- live volume's name is unique in its project. sandbox_volumes records
-- what each sandbox mounts, where, and how: at most one sandbox that is
-- not final mounts a volume read-write (checked where the row is written).
CREATE TABLE volumes (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    project_id   TEXT NOT NULL REFERENCES projects (id),
    name         TEXT NOT NULL,
    provider     TEXT NOT NULL,
    size_mb      BIGINT NOT NULL,
    state        TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    deleted_at   BIGINT,
    billed_micros   BIGINT NOT NULL DEFAULT 0, -- its storage, per GiB of its cap held (volume_storage)
    unbilled_nanos  BIGINT NOT NULL DEFAULT 0,
    last_settled_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX volumes_live_name ON volumes (project_id, name) WHERE state <> 'deleted';
CREATE INDEX volumes_org_created ON volumes (org_id, created_at DESC, id DESC);

CREATE TABLE sandbox_volumes (
    sandbox_id TEXT NOT NULL REFERENCES sandboxes (id),
    volume_id  TEXT NOT NULL REFERENCES volumes (id),
    path       TEXT NOT NULL,
    read_only  BOOLEAN NOT NULL,
    PRIMARY KEY (sandbox_id, volume_id)
);
CREATE INDEX sandbox_volumes_volume ON sandbox_volumes (volume_id);
