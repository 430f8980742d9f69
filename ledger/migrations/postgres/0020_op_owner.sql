-- The serve process running a sandbox's operation in flight (its intent),
-- which holds its owner ID live while it runs: another serve sharing the
-- ledger and the provider leaves a live owner's operation alone and
-- settles a dead one's. '' on rows from before, and on rows no operation
-- has touched since.
ALTER TABLE sandboxes ADD COLUMN op_owner TEXT NOT NULL DEFAULT '';
