-- A downstream copy (the lake) finished an erasure after its receipt was stored: the receipt's
-- verification gains that copy's result, and `verified` is recomputed (the store's own check and
-- every copy's). See memstore/governance/downstream.py.
UPDATE erasure_receipts SET verified = $verified, verification = $verification WHERE id = $id;
