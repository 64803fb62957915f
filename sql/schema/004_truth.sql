-- Truth maintenance: which attribute ("slot") of which subject a memory states, so a newer fact on
-- the same subject + slot can supersede an older one (memstore/providers/fact_slots.py fills them).
ALTER TABLE memories ADD COLUMN IF NOT EXISTS subject VARCHAR;     -- e.g. 'alice', 'alice''s sister'
ALTER TABLE memories ADD COLUMN IF NOT EXISTS slot VARCHAR;        -- e.g. 'lives_in', 'plan:move to denver'
ALTER TABLE memories ADD COLUMN IF NOT EXISTS slot_value VARCHAR;  -- e.g. 'seattle'; NULL = the slot ended
