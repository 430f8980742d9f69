-- Template warm pools: per template, how many members to keep ready and
-- their size, and who owns (and pays for) them while they wait. A member
-- is a sandbox whose pool names its template; a checkout clears it.
CREATE TABLE template_pools (
    template_id  TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    project_id   TEXT NOT NULL REFERENCES projects (id),
    min_ready    INTEGER NOT NULL,
    max_ready    INTEGER NOT NULL,
    milli_cpu    BIGINT NOT NULL,
    memory_mb    BIGINT NOT NULL,
    disk_mb      BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
ALTER TABLE sandboxes ADD COLUMN pool TEXT NOT NULL DEFAULT '';
CREATE INDEX sandboxes_pool ON sandboxes (pool, state) WHERE pool <> '';
-- A waiting member's agent also takes next_token (sealed like the access
-- token): its checkout makes it the access token without a call to the
-- agent.
ALTER TABLE sandboxes ADD COLUMN next_token TEXT NOT NULL DEFAULT '';
