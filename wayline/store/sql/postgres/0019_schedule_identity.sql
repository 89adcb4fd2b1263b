-- 0019: the identity of the graph a schedule was made for (its structural fingerprint, the
-- shape behind it, and its engine), copied onto every run a tick queues, so a
-- schedule-fired run is claimed only by a worker serving that shape of the graph.
-- Schedules made before carry '' and fire runs claimed by name and version, as before.
ALTER TABLE schedules ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE schedules ADD COLUMN shape TEXT;
ALTER TABLE schedules ADD COLUMN engine TEXT NOT NULL DEFAULT 'wayline';
