-- Who reaches a sandbox's ports at its preview URLs (sbx.Preview): public,
-- or private (the traffic token, a preview link, an API key); the Host the
-- app sees; whether preview traffic wakes it when paused.
ALTER TABLE sandboxes ADD COLUMN preview_public BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE sandboxes ADD COLUMN preview_localhost BOOLEAN NOT NULL DEFAULT false;
-- The ports it serves (its runtime's, or as created), a JSON array.
ALTER TABLE sandboxes ADD COLUMN ports TEXT NOT NULL DEFAULT '[]';
ALTER TABLE sandboxes ADD COLUMN preview_no_wake BOOLEAN NOT NULL DEFAULT false;

-- Links to one port of a sandbox that work without other credentials until
-- they expire or are revoked; only a hash of the secret is kept.
CREATE TABLE preview_links (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    sandbox_id  TEXT NOT NULL REFERENCES sandboxes(id),
    port        INTEGER NOT NULL,
    secret_hash TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);
CREATE INDEX preview_links_sandbox ON preview_links (sandbox_id, created_at);
