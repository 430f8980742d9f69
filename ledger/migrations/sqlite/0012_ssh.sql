-- SSH: public keys registered to a member of an org (user_id) or to a
-- project (project_id), which the SSH gateway lets in as an API key of that
-- member or project; a key is registered at most once in an org. And the
-- short-lived tokens `sbx sandbox ssh` uses as a password: each opens one
-- sandbox, as the API key that made it, until expires_at; only the token's
-- SHA-256 is kept, and expired ones are removed as new ones are made.
CREATE TABLE ssh_keys (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES orgs (id),
    user_id     TEXT REFERENCES users (id),
    project_id  TEXT REFERENCES projects (id),
    name        TEXT NOT NULL,
    type        TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    public_key  TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    CHECK ((user_id IS NULL) <> (project_id IS NULL))
);
CREATE UNIQUE INDEX ssh_keys_org_fingerprint ON ssh_keys (org_id, fingerprint);
CREATE INDEX ssh_keys_fingerprint ON ssh_keys (fingerprint);
CREATE INDEX ssh_keys_org ON ssh_keys (org_id, created_at, id);

CREATE TABLE ssh_tokens (
    id         TEXT PRIMARY KEY,
    hash       TEXT NOT NULL UNIQUE,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    sandbox_id TEXT NOT NULL REFERENCES sandboxes (id),
    key_id     TEXT NOT NULL REFERENCES api_keys (id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX ssh_tokens_expires ON ssh_tokens (expires_at);
