-- One erasure receipt's verification (JSON), to settle it when a downstream copy finishes later.
SELECT verification FROM erasure_receipts WHERE id = $id;
