-- Templates a project builds through the API: the recipe its last build
-- took, and the version creates start from. A name is unique among the
-- project's templates that are not deleted.
CREATE TABLE project_templates (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    project_id   TEXT NOT NULL REFERENCES projects (id),
    name         TEXT NOT NULL,
    recipe       TEXT NOT NULL,
    version      TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    deleted_at   BIGINT NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX project_templates_name ON project_templates (project_id, name) WHERE deleted_at = 0;
-- Each build of one: its state, the step it is at, its sandbox, and how
-- it ended.
CREATE TABLE template_builds (
    id          TEXT PRIMARY KEY,
    template_id TEXT NOT NULL REFERENCES project_templates (id),
    org_id      TEXT NOT NULL REFERENCES orgs (id),
    state       TEXT NOT NULL,
    step        INTEGER NOT NULL DEFAULT 0,
    steps       INTEGER NOT NULL DEFAULT 0,
    sandbox_id  TEXT NOT NULL DEFAULT '',
    version     TEXT NOT NULL DEFAULT '',
    error       TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    started_at  BIGINT NOT NULL DEFAULT 0,
    finished_at BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX template_builds_template ON template_builds (template_id, created_at);
CREATE INDEX template_builds_open ON template_builds (state) WHERE state IN ('queued', 'building');
-- A build's log, kept after it ends.
CREATE TABLE template_build_logs (
    build_id TEXT NOT NULL REFERENCES template_builds (id),
    seq      BIGINT NOT NULL,
    at       BIGINT NOT NULL,
    text     TEXT NOT NULL,
    PRIMARY KEY (build_id, seq)
);
-- Tags name versions of templates (the server's own by name, a project's
-- by ID): a create of NAME:TAG starts from the version the tag names.
CREATE TABLE template_tags (
    template_id TEXT NOT NULL,
    tag         TEXT NOT NULL,
    version     TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (template_id, tag)
);
