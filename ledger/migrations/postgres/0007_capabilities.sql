-- Capabilities: the org's inventory of uploaded bundles (one row per name
-- and version: the manifest as JSON, the tar.gz archive as uploaded), and the
-- bindings that install a capability on a runtime (one per runtime and name;
-- flags are JSON, those set on the binding).
CREATE TABLE capability_bundles (
    org_id      TEXT NOT NULL REFERENCES orgs (id),
    name        TEXT NOT NULL,
    version     TEXT NOT NULL,
    description TEXT NOT NULL,
    manifest    TEXT NOT NULL,
    archive     BYTEA NOT NULL,
    sha256      TEXT NOT NULL,
    size        BIGINT NOT NULL CHECK (size >= 0),
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, name, version)
);
CREATE INDEX capability_bundles_created ON capability_bundles (org_id, created_at);

CREATE TABLE capability_bindings (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    runtime_id TEXT NOT NULL REFERENCES runtimes (id),
    name       TEXT NOT NULL,
    version    TEXT NOT NULL,
    source     TEXT NOT NULL CHECK (source IN ('catalog', 'inventory')),
    enabled    BOOLEAN NOT NULL DEFAULT true,
    flags      TEXT NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (runtime_id, name)
);
CREATE INDEX capability_bindings_runtime ON capability_bindings (runtime_id, created_at, id);
CREATE INDEX capability_bindings_bundle ON capability_bindings (org_id, name, version);
