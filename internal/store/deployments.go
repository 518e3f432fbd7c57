package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Deployment is one persisted deployment: its spec (JSON, owned by
// internal/deploy), generation and last known state.
type Deployment struct {
	Name            string
	Spec            []byte
	Generation      int64
	Status          string
	StatusChangedAt time.Time
	Deleting        bool
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// PutDeployment inserts or replaces a deployment record.
func (s *DB) PutDeployment(ctx context.Context, d Deployment) error {
	now := time.Now().UTC()
	if d.CreatedAt.IsZero() {
		d.CreatedAt = now
	}
	_, err := s.sql.ExecContext(ctx, `INSERT INTO deployments (name, spec, generation, status, status_changed_at, deleting, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(name) DO UPDATE SET spec=excluded.spec, generation=excluded.generation, status=excluded.status,
  status_changed_at=excluded.status_changed_at, deleting=excluded.deleting, updated_at=excluded.updated_at`,
		d.Name, string(d.Spec), d.Generation, d.Status, ts(d.StatusChangedAt), boolInt(d.Deleting), ts(d.CreatedAt), ts(now))
	if err != nil {
		return fmt.Errorf("store deployment %s: %w", d.Name, err)
	}
	return nil
}

// DeleteDeployment removes a record; a missing one is ErrNotFound.
func (s *DB) DeleteDeployment(ctx context.Context, name string) error {
	res, err := s.sql.ExecContext(ctx, `DELETE FROM deployments WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("delete deployment %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("deployment %s: %w", name, ErrNotFound)
	}
	return nil
}

// GetDeployment reads one record.
func (s *DB) GetDeployment(ctx context.Context, name string) (Deployment, error) {
	row := s.sql.QueryRowContext(ctx, `SELECT name, spec, generation, status, status_changed_at, deleting, created_at, updated_at
FROM deployments WHERE name = ?`, name)
	d, err := scan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("deployment %s: %w", name, ErrNotFound)
	}
	return d, err
}

// ListDeployments returns every record by name.
func (s *DB) ListDeployments(ctx context.Context) ([]Deployment, error) {
	rows, err := s.sql.QueryContext(ctx, `SELECT name, spec, generation, status, status_changed_at, deleting, created_at, updated_at
FROM deployments ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list deployments: %w", err)
	}
	defer rows.Close()
	var out []Deployment
	for rows.Next() {
		d, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

type scanner interface{ Scan(...any) error }

func scan(r scanner) (Deployment, error) {
	var d Deployment
	var spec, changed, created, updated string
	var deleting int
	if err := r.Scan(&d.Name, &spec, &d.Generation, &d.Status, &changed, &deleting, &created, &updated); err != nil {
		return d, err
	}
	d.Spec = []byte(spec)
	d.Deleting = deleting != 0
	d.StatusChangedAt, _ = time.Parse(time.RFC3339Nano, changed)
	d.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	d.UpdatedAt, _ = time.Parse(time.RFC3339Nano, updated)
	return d, nil
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
