// Package bench holds raygw's checked-in benchmark files: the starter
// workloads (workloads/*.jsonl) and one threshold file per profile
// (thresholds/<profile>.json), embedded so `raygw bench assert` works from
// any directory.
package bench

import (
	"embed"
	"fmt"
	"io/fs"
)

//go:embed workloads/*.jsonl thresholds/*.json
var files embed.FS

// Workload returns the checked-in workload file name (e.g. "email-1b.jsonl").
func Workload(name string) ([]byte, error) {
	b, err := fs.ReadFile(files, "workloads/"+name)
	if err != nil {
		return nil, fmt.Errorf("checked-in workload %q: %w", name, err)
	}
	return b, nil
}

// Thresholds returns the threshold file of a profile (e.g. "1b").
func Thresholds(profile string) ([]byte, error) {
	b, err := fs.ReadFile(files, "thresholds/"+profile+".json")
	if err != nil {
		return nil, fmt.Errorf("no benchmark thresholds for profile %q: %w", profile, err)
	}
	return b, nil
}
