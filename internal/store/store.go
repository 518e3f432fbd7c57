// Package store owns raygw's embedded database: one SQLite file under the
// state directory (pure-Go driver modernc.org/sqlite), its schema as
// migrations embedded in the binary and applied in order at open, and the
// deployment records the control plane persists.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the database file inside the state directory.
const FileName = "raygw.db"

// ErrNotFound means no record has the key.
var ErrNotFound = errors.New("not found")

// DB is the opened database.
type DB struct{ sql *sql.DB }

// Open opens (creating if needed) dir/raygw.db and applies pending migrations.
func Open(ctx context.Context, dir string) (*DB, error) {
	if dir == "" {
		return nil, errors.New("RAY_STATE_DIR: the state directory is empty")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("RAY_STATE_DIR: %w", err)
	}
	dsn := "file:" + filepath.Join(dir, FileName) + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.SetMaxOpenConns(1) // one writer; SQLite serialises anyway
	s := &DB{sql: db}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *DB) Close() error { return s.sql.Close() }

// SQL exposes the handle for packages that keep their own tables.
func (s *DB) SQL() *sql.DB { return s.sql }

// migrate applies every embedded migration newer than the recorded version.
func (s *DB) migrate(ctx context.Context) error {
	if _, err := s.sql.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	var current int
	if err := s.sql.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		v, err := strconv.Atoi(strings.SplitN(filepath.Base(f), "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: bad version prefix", f)
		}
		if v <= current {
			continue
		}
		body, _ := migrations.ReadFile(f)
		if err := s.apply(ctx, v, string(body)); err != nil {
			return fmt.Errorf("migration %s: %w", f, err)
		}
	}
	return nil
}

func (s *DB) apply(ctx context.Context, version int, body string) error {
	tx, err := s.sql.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
		version, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	return tx.Commit()
}

// Version is the newest applied migration.
func (s *DB) Version(ctx context.Context) (int, error) {
	var v int
	err := s.sql.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}
