-- A create that carried an Idempotency-Key: a retry with the same key, by
-- the same API key, within 24 hours finds the sandbox the first one made
-- (request_hash tells a retry from another request reusing the key).
CREATE TABLE idempotency_keys (
    api_key_id   TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    sandbox_id   TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (api_key_id, key)
);
