-- Sealed values (sandboxes.access_token, secrets.value) are bound to their
-- rows from now on. The migration's step in Go, resealBound
-- (ledger/seal.go), seals again the values sealed before.
SELECT 1;
