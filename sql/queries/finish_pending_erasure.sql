-- An erasure's receipt is stored: it is no longer pending (same transaction as insert_receipt).
DELETE FROM pending_erasures WHERE id = $id;
