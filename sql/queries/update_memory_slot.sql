-- What an edited memory now states (subject + slot), so it is superseded / flagged by its new text.
UPDATE memories SET subject = $subject, slot = $slot, slot_value = $slot_value WHERE id = $id;
