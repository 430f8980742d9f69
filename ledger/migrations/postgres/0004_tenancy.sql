-- Tenancy: users and their memberships of workspaces with a role, keys of a
-- member, verification (KYC) of orgs and users, a plan of limits per org,
-- and a runtime per project.

-- People, known by email across orgs.
CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    email          TEXT NOT NULL UNIQUE,
    name           TEXT NOT NULL DEFAULT '',
    kyc_status     TEXT NOT NULL DEFAULT 'unverified' CHECK (kyc_status IN ('unverified', 'pending', 'verified')),
    kyc_updated_at BIGINT,
    created_at     BIGINT NOT NULL
);

-- A user's membership of a workspace; the role applies in the workspace,
-- and a user's highest role in an org is their role for the org's own routes.
CREATE TABLE memberships (
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    user_id      TEXT NOT NULL REFERENCES users (id),
    role         TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX memberships_user ON memberships (user_id, org_id);

-- A member's key acts as that user.
ALTER TABLE api_keys ADD COLUMN user_id TEXT REFERENCES users (id);

-- Verification. Orgs that exist before this migration were made by the
-- operator before the gate existed: they stay able to create sandboxes.
ALTER TABLE orgs ADD COLUMN kyc_status TEXT NOT NULL DEFAULT 'unverified' CHECK (kyc_status IN ('unverified', 'pending', 'verified'));
ALTER TABLE orgs ADD COLUMN kyc_updated_at BIGINT;
UPDATE orgs SET kyc_status = 'verified';

-- The org's plan: 0 is no limit.
ALTER TABLE orgs ADD COLUMN plan_name TEXT NOT NULL DEFAULT '';
ALTER TABLE orgs ADD COLUMN plan_max_sandboxes BIGINT NOT NULL DEFAULT 0 CHECK (plan_max_sandboxes >= 0);
ALTER TABLE orgs ADD COLUMN plan_max_milli_cpu BIGINT NOT NULL DEFAULT 0 CHECK (plan_max_milli_cpu >= 0);
ALTER TABLE orgs ADD COLUMN plan_max_memory_mb BIGINT NOT NULL DEFAULT 0 CHECK (plan_max_memory_mb >= 0);
ALTER TABLE orgs ADD COLUMN plan_max_gpu_percent BIGINT NOT NULL DEFAULT 0 CHECK (plan_max_gpu_percent >= 0);
ALTER TABLE orgs ADD COLUMN plan_max_members BIGINT NOT NULL DEFAULT 0 CHECK (plan_max_members >= 0);
ALTER TABLE orgs ADD COLUMN plan_max_timeout_s BIGINT NOT NULL DEFAULT 0 CHECK (plan_max_timeout_s >= 0);

-- One runtime per project, made with it: idle (no sandbox), running, paused.
CREATE TABLE runtimes (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    project_id   TEXT NOT NULL UNIQUE REFERENCES projects (id),
    status       TEXT NOT NULL DEFAULT 'idle',
    sandbox_id   TEXT REFERENCES sandboxes (id),
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX runtimes_org ON runtimes (org_id);

-- Projects made before this migration get their runtime here, with the
-- project's ID as its own (new runtimes get a fresh UUID).
INSERT INTO runtimes (id, org_id, workspace_id, project_id, status, created_at, updated_at)
    SELECT id, org_id, workspace_id, id, 'idle', created_at, created_at FROM projects;

-- Admission sums an org's sandboxes that hold compute; the member limit
-- pauses and resumes a workspace's.
CREATE INDEX sandboxes_org_state ON sandboxes (org_id, state);
CREATE INDEX sandboxes_workspace_state ON sandboxes (workspace_id, state);
