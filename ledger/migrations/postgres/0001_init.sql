-- Tenancy: orgs hold workspaces, workspaces hold projects, keys act for an org
-- and optionally one project. Times are Unix microseconds (UTC).
CREATE TABLE orgs (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE TABLE workspaces (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    name       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (org_id, name)
);

CREATE TABLE projects (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    name         TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    UNIQUE (workspace_id, name)
);

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    project_id TEXT REFERENCES projects (id),
    name       TEXT NOT NULL,
    prefix     TEXT NOT NULL,
    hash       TEXT NOT NULL UNIQUE, -- hex SHA-256 of the secret
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);

-- The compute ledger: one row per sandbox, never deleted.
CREATE TABLE sandboxes (
    id                  TEXT PRIMARY KEY,
    org_id              TEXT NOT NULL REFERENCES orgs (id),
    workspace_id        TEXT NOT NULL REFERENCES workspaces (id),
    project_id          TEXT NOT NULL REFERENCES projects (id),
    provider            TEXT NOT NULL,
    provider_sandbox_id TEXT NOT NULL,
    kind                TEXT NOT NULL,
    template_id         TEXT NOT NULL,
    state               TEXT NOT NULL,
    intent              TEXT NOT NULL DEFAULT '',
    pause_reason        TEXT NOT NULL DEFAULT '',
    end_reason          TEXT NOT NULL DEFAULT '',
    diagnostic          TEXT NOT NULL DEFAULT '',
    created_at          BIGINT NOT NULL,
    started_at          BIGINT,
    paused_at           BIGINT,
    ended_at            BIGINT,
    timeout_s           BIGINT NOT NULL,
    expires_at          BIGINT,
    auto_pause          BOOLEAN NOT NULL DEFAULT false,
    milli_cpu           BIGINT NOT NULL,
    memory_mb           BIGINT NOT NULL,
    gpu_type            TEXT NOT NULL DEFAULT '',
    gpu_count           INTEGER NOT NULL DEFAULT 0,
    gpu_fraction        INTEGER NOT NULL DEFAULT 0,
    env_var_names       TEXT NOT NULL DEFAULT '[]', -- JSON array of names; values are never stored
    metadata            TEXT NOT NULL DEFAULT '{}', -- JSON object
    billed_micros       BIGINT NOT NULL DEFAULT 0,  -- billed credits, in micro-credits
    last_settled_at     BIGINT,
    handle              TEXT NOT NULL DEFAULT '',   -- the provider's opaque recovery handle
    access_token        TEXT NOT NULL DEFAULT '',   -- sealed with the data dir's key
    updated_at          BIGINT NOT NULL,
    UNIQUE (provider, provider_sandbox_id)
);
CREATE INDEX sandboxes_org_created ON sandboxes (org_id, created_at DESC, id DESC);
CREATE INDEX sandboxes_provider_id ON sandboxes (provider_sandbox_id);
CREATE INDEX sandboxes_expiry ON sandboxes (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX sandboxes_open ON sandboxes (provider, state);

-- Metadata as rows, so that filters stay plain SQL on every dialect.
CREATE TABLE sandbox_metadata (
    sandbox_id TEXT NOT NULL REFERENCES sandboxes (id),
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (sandbox_id, key)
);
CREATE INDEX sandbox_metadata_kv ON sandbox_metadata (key, value);

-- The timeline: every internal step of every sandbox.
CREATE TABLE sandbox_events (
    id         BIGSERIAL PRIMARY KEY,
    sandbox_id TEXT NOT NULL REFERENCES sandboxes (id),
    at         BIGINT NOT NULL,
    step       TEXT NOT NULL,
    detail     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX sandbox_events_sandbox ON sandbox_events (sandbox_id, id);
