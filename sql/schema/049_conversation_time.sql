-- Conversation time beside stored time. `created_at` of history and extraction_runs is when the row
-- was STORED (an ingest of a year of chats stores it all in one second); `said_at` is when it
-- happened IN THE CONVERSATION: the time of the newest message the event or run came from (the
-- add's `timestamp`, else the time it was added). NULL where no conversation is behind the row
-- (an analyst's UPDATE, DELETE, RESOLVE, EXPIRE) and on rows written before this column existed
-- (readers then fall back to stored time: `memstore history --since`, the dashboard).
ALTER TABLE history ADD COLUMN IF NOT EXISTS said_at TIMESTAMP;
ALTER TABLE extraction_runs ADD COLUMN IF NOT EXISTS said_at TIMESTAMP;
