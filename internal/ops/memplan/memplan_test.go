package memplan

import (
	"errors"
	"testing"

	"github.com/raygw/raygw/internal/config"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		total, rss      int
		gwMax, llamaMax int
		wantErr         error
	}{
		{4096, 512, 640, 2944, nil},
		{8192, 1024, 1280, 5888, nil},
		{2048, 512, 640, 0, ErrTooSmall},
		{1024, 100, 320, 0, ErrTooSmall},
	}
	for _, tt := range tests {
		p, err := Split(tt.total, "RAY_DEPLOY_MEMORY_MIB", tt.rss)
		if !errors.Is(err, tt.wantErr) {
			t.Fatalf("Split(%d): err %v, want %v", tt.total, err, tt.wantErr)
		}
		if err != nil {
			continue
		}
		if p.Gateway.MaxMiB != tt.gwMax || p.Llama.MaxMiB != tt.llamaMax {
			t.Errorf("Split(%d) = gateway %d llama %d, want %d %d", tt.total, p.Gateway.MaxMiB, p.Llama.MaxMiB, tt.gwMax, tt.llamaMax)
		}
		if p.Gateway.MinMiB+p.Llama.MinMiB >= tt.total-p.OSReserveMiB {
			t.Errorf("floors %d+%d exceed %d", p.Gateway.MinMiB, p.Llama.MinMiB, tt.total-p.OSReserveMiB)
		}
		if p.Gateway.MaxMiB+p.Llama.MaxMiB+p.OSReserveMiB != tt.total {
			t.Errorf("split does not add up to %d", tt.total)
		}
	}
}

func TestTarget(t *testing.T) {
	c := &config.Config{}
	c.Model.MemoryClassMiB = 4096
	if v, s := Target(c, 0); v != 4096 || s != "RAY_MODEL_MEMORY_CLASS_MIB" {
		t.Errorf("class fallback: %d %s", v, s)
	}
	c.Deploy.MemoryMiB = 3000
	if v, s := Target(c, 0); v != 3000 || s != "RAY_DEPLOY_MEMORY_MIB" {
		t.Errorf("deploy: %d %s", v, s)
	}
	if v, s := Target(c, 5000); v != 5000 || s != "--memory-mib" {
		t.Errorf("override: %d %s", v, s)
	}
}
