package server

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadLimited(t *testing.T) {
	body := strings.Repeat("x", 1000)
	for _, tc := range []struct {
		name     string
		declared int64
	}{{"unknown length", -1}, {"exact", 1000}, {"declared short", 10}, {"declared long", 5000}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readLimited(iotest.OneByteReader(strings.NewReader(body)), tc.declared)
			if err != nil || string(got) != body {
				t.Fatalf("read %d bytes, err %v", len(got), err)
			}
		})
	}
	boom := errors.New("boom")
	if _, err := readLimited(io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(boom)), 2); !errors.Is(err, boom) {
		t.Fatalf("error lost: %v", err)
	}
}
