CREATE TABLE deployments (
    name              TEXT PRIMARY KEY,
    spec              TEXT    NOT NULL,
    generation        INTEGER NOT NULL,
    status            TEXT    NOT NULL,
    status_changed_at TEXT    NOT NULL,
    deleting          INTEGER NOT NULL DEFAULT 0,
    created_at        TEXT    NOT NULL,
    updated_at        TEXT    NOT NULL
);
