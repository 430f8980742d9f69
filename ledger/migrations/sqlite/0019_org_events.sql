-- An org's event log: every state change and timeline step of its
-- sandboxes, runtimes, snapshots and template builds, and its credit
-- events, each written in the transaction that made the change. seq numbers
-- an org's events densely; org_event_seqs holds the last, and each append
-- bumps it first, so that (its row locked until commit) events commit in
-- seq order per org.
CREATE TABLE org_event_seqs (
    org_id TEXT PRIMARY KEY,
    last   BIGINT NOT NULL
);
CREATE TABLE org_events (
    org_id       TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    at           BIGINT NOT NULL,
    type         TEXT NOT NULL,
    workspace_id TEXT NOT NULL DEFAULT '',
    project_id   TEXT NOT NULL DEFAULT '',
    sandbox_id   TEXT NOT NULL DEFAULT '',
    subject      TEXT NOT NULL DEFAULT '',
    data         TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (org_id, seq)
);
CREATE INDEX org_events_at ON org_events (at);
-- An org's webhooks: where its events are POSTed, which types, the signing
-- secret (sealed, bound to the row), and the seq of the last event the
-- dispatcher enqueued for it.
CREATE TABLE webhooks (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    url        TEXT NOT NULL,
    types      TEXT NOT NULL DEFAULT '[]',
    secret     TEXT NOT NULL,
    last_seq   BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);
CREATE INDEX webhooks_org ON webhooks (org_id);
-- Each event sent, or to be sent, to a webhook, and how its attempts went.
CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    webhook_id      TEXT NOT NULL,
    org_id          TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    event_type      TEXT NOT NULL,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    UNIQUE (webhook_id, seq)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
-- A runtime's status follows its sandbox's state: its event is found by
-- the sandbox.
CREATE INDEX runtimes_sandbox ON runtimes (sandbox_id);
