-- A plan's disk limit sums the writable-layer caps of the org's sandboxes
-- that hold disk (starting, running, paused). Each sandbox records its cap;
-- sandboxes from before had the provider's default cap, 10 GiB.
ALTER TABLE orgs ADD COLUMN plan_max_disk_mb BIGINT NOT NULL DEFAULT 0 CHECK (plan_max_disk_mb >= 0);
ALTER TABLE sandboxes ADD COLUMN disk_mb BIGINT NOT NULL DEFAULT 10240;
