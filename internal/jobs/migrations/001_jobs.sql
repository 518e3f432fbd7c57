-- Jobs of the async queue. Times are Unix milliseconds (UTC).
CREATE TABLE jobs (
  id                  TEXT PRIMARY KEY,
  tenant              TEXT NOT NULL,
  endpoint            TEXT NOT NULL,
  body                BLOB NOT NULL,
  status              TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),
  attempts            INTEGER NOT NULL DEFAULT 0,
  interruptions       INTEGER NOT NULL DEFAULT 0,
  next_run_at         INTEGER NOT NULL,
  created_at          INTEGER NOT NULL,
  started_at          INTEGER,
  finished_at         INTEGER,
  result_status       INTEGER,
  result_body         BLOB,
  error               TEXT,
  error_code          TEXT,
  callback_url        TEXT,
  callback_secret     TEXT,
  callback_state      TEXT NOT NULL DEFAULT 'none' CHECK (callback_state IN ('none', 'pending', 'delivered', 'failed')),
  callback_attempts   INTEGER NOT NULL DEFAULT 0,
  callback_next_at    INTEGER,
  callback_in_flight  INTEGER NOT NULL DEFAULT 0, -- 1 while a claimed delivery is unrecorded
  callback_last_error TEXT
) STRICT;

CREATE INDEX jobs_runnable ON jobs (status, next_run_at);
CREATE INDEX jobs_callbacks ON jobs (callback_state, callback_next_at);
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
