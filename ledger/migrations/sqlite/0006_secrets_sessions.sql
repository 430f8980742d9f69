-- Secrets: named values of an org (user_id NULL) or of one member of it
-- (user_id), write-only through the API. value holds the value sealed with
-- the server's seal key (AES-256-GCM, base64), never the plaintext. A name is
-- unique within its scope: the org's own, or one member's own in the org.
CREATE TABLE secrets (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    user_id    TEXT REFERENCES users (id),
    name       TEXT NOT NULL,
    value      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX secrets_org_name ON secrets (org_id, name) WHERE user_id IS NULL;
CREATE UNIQUE INDEX secrets_user_name ON secrets (org_id, user_id, name) WHERE user_id IS NOT NULL;

-- Sessions: an agent's session on a runtime (never a sandbox, so it outlives
-- them), with its transcript numbered from 1; last_seq is the seq of its
-- newest message (0: none), moved by each append under the session's lock.
CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    runtime_id   TEXT NOT NULL REFERENCES runtimes (id),
    title        TEXT NOT NULL DEFAULT '',
    created_by   TEXT NOT NULL,
    last_seq     BIGINT NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX sessions_workspace ON sessions (workspace_id, created_at, id);
CREATE INDEX sessions_runtime ON sessions (runtime_id, created_at, id);

CREATE TABLE session_messages (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    seq        BIGINT NOT NULL CHECK (seq >= 1),
    role       TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
