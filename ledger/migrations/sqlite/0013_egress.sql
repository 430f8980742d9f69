-- A sandbox's egress policy (sbx.Egress as JSON: mode, allow, deny), the
-- one its provider enforces; '' for sandboxes recorded before sandboxes had
-- policies of their own, and for providers that enforce none. A runtime's
-- configuration may name the policy of its sandboxes ('' : none named).
ALTER TABLE sandboxes ADD COLUMN egress TEXT NOT NULL DEFAULT '';
ALTER TABLE runtimes ADD COLUMN egress TEXT NOT NULL DEFAULT '';
