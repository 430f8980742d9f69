-- Prices per provider: a rate names the provider whose sandboxes pay it;
-- '' is any provider without a rate of its own for the resource.
ALTER TABLE rates ADD COLUMN provider TEXT NOT NULL DEFAULT '';
