-- Fills an in-memory SQLite database for bench/compare_tools.py: 600 000 rows with text, an
-- index, an aggregate and an update.
CREATE TABLE events(id INTEGER PRIMARY KEY, user TEXT, kind INTEGER, payload TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 600000)
INSERT INTO events(user, kind, payload) SELECT 'user-' || (i % 5000), i % 17, printf('%.*c', 40 + i % 60, 'x') FROM n;
CREATE INDEX events_by_user ON events(user, kind);
SELECT count(*), sum(length(payload)) FROM events GROUP BY kind ORDER BY kind LIMIT 3;
UPDATE events SET payload = payload || '-seen' WHERE kind = 3;
SELECT count(DISTINCT user) FROM events;
