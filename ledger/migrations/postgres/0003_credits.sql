-- Credits. Amounts are integers: balances and charges in micro-credits,
-- prices in nano-credits per second (1 credit = 10^6 micro = 10^9 nano).

-- The operator's keys: top-ups, prices, verification of any org.
ALTER TABLE api_keys ADD COLUMN operator BOOLEAN NOT NULL DEFAULT false;

ALTER TABLE orgs ADD COLUMN balance_micros BIGINT NOT NULL DEFAULT 0 CHECK (balance_micros >= 0);

-- What a sandbox owes below one micro-credit, carried to its next settlement.
ALTER TABLE sandboxes ADD COLUMN unbilled_nanos BIGINT NOT NULL DEFAULT 0;

-- Prices, each from its effective time on; the newest effective one of a
-- resource (and GPU type and share) applies. Never updated or deleted.
CREATE TABLE rates (
    id               BIGSERIAL PRIMARY KEY,
    resource         TEXT NOT NULL,            -- cpu, memory, gpu, paused_storage
    gpu_type         TEXT NOT NULL DEFAULT '', -- gpu: '' is any type without its own rate
    gpu_share        INTEGER NOT NULL DEFAULT 0, -- gpu: 25, 50, 75, 100; 0 is per card, scaled by the share
    nanos_per_second BIGINT NOT NULL CHECK (nanos_per_second >= 0),
    effective_at     BIGINT NOT NULL,
    created_at       BIGINT NOT NULL
);

-- Every charge: what a sandbox owed for an interval, per resource, and what
-- the balance could pay (micros; less than the sum when it ran out).
CREATE TABLE settlements (
    id             BIGSERIAL PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    sandbox_id     TEXT NOT NULL REFERENCES sandboxes (id),
    state          TEXT NOT NULL,
    from_at        BIGINT NOT NULL,
    to_at          BIGINT NOT NULL,
    cpu_micros     BIGINT NOT NULL,
    memory_micros  BIGINT NOT NULL,
    gpu_micros     BIGINT NOT NULL,
    storage_micros BIGINT NOT NULL,
    micros         BIGINT NOT NULL,
    balance_after  BIGINT NOT NULL
);
CREATE INDEX settlements_org_at ON settlements (org_id, to_at);
CREATE INDEX settlements_sandbox ON settlements (sandbox_id);

-- Credits added to an org's balance.
CREATE TABLE top_ups (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    micros     BIGINT NOT NULL CHECK (micros > 0),
    note       TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL
);
CREATE INDEX top_ups_org ON top_ups (org_id, created_at);

-- What existed before credits: each org gets what a first start gives (a
-- million credits), recorded as a top-up, and no sandbox is billed for time
-- before credits existed.
INSERT INTO top_ups (id, org_id, micros, note, created_at)
    SELECT gen_random_uuid()::text, id, 1000000000000, 'credits given to an org from before credits',
        CAST(extract(epoch FROM now()) * 1000000 AS BIGINT) FROM orgs;
UPDATE orgs SET balance_micros = 1000000000000;
UPDATE sandboxes SET last_settled_at = CAST(extract(epoch FROM now()) * 1000000 AS BIGINT)
    WHERE state IN ('starting', 'running', 'paused');
