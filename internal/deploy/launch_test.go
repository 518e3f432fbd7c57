package deploy

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/engine/llamacpp"
	"github.com/raygw/raygw/internal/runtime/local"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Fatalf("%s differs:\n--- want\n%s\n--- got\n%s", name, want, got)
	}
}

// TestReplicaCommandGolden renders a llama.cpp replica (slot 1 of a
// deployment with 2 CPUs and 1 GPU per replica, LoRA adapters) on a
// 4-CPU machine, with the local runtime's pinning and GPU environment.
func TestReplicaCommandGolden(t *testing.T) {
	d := Defaults{CPUs: 4, Llama: llamacpp.Launch{Binary: "/opt/llama/llama-server", Host: "0.0.0.0", Port: 8081,
		CtxSize: 4096, Parallel: 4, Threads: 4, ThreadsBatch: 4, ThreadsHTTP: 4, BatchSize: 512, UBatchSize: 512,
		CacheReuse: 256, CacheRAMMiB: 1024, ContBatching: true, Metrics: true, Slots: true, KVUnified: false}}
	s := Spec{Name: "web", ModelName: "acme/story-v2", ModelPath: "/models/story.gguf", ModelClass: ClassLlamaCpp,
		Replicas: 2, CPUsPerReplica: 2, GPUsPerReplica: 1,
		EngineConfig: EngineConfig{CtxSize: 2048, Parallel: 2, ExtraArgs: []string{"--temp", "0.7"}}}
	s.EngineConfig.LoRAModules = []vllmLoRA{{Name: "support", Path: "/adapters/support.gguf"}, {Name: "code", Path: "/adapters/code.gguf"}}
	rs, err := replicaSpec(s, d, "web-2", 1)
	if err != nil {
		t.Fatal(err)
	}
	argv, env := rs.Command("127.0.0.1", 40001)
	argv, env = (&local.Runtime{Taskset: "/usr/bin/taskset"}).Wrap(argv, env, rs.CPUs, rs.GPUs)
	got := strings.Join(argv, "\n") + "\n" + env[len(env)-1] + "\n"
	golden(t, "llamacpp-replica.golden", got)
	if w := contextWindow(s, d); w != 1024 {
		t.Fatalf("per-slot window %d, want 2048/2", w)
	}
}

func TestCPUAndGPUSets(t *testing.T) {
	tests := []struct {
		slot, n, total int
		want           string
	}{
		{0, 1, 2, "[0]"}, {1, 1, 2, "[1]"}, {2, 1, 2, "[0]"}, {1, 2, 4, "[2 3]"}, {1, 3, 4, "[3 0 1]"}, {0, 4, 2, "[0 1]"},
	}
	for _, tc := range tests {
		if got := fmtInts(cpuSet(tc.slot, tc.n, tc.total)); got != tc.want {
			t.Errorf("cpuSet(%d,%d,%d) = %s, want %s", tc.slot, tc.n, tc.total, got, tc.want)
		}
	}
	if got := fmtInts(gpuSet(2, 2)); got != "[4 5]" {
		t.Errorf("gpuSet(2,2) = %s", got)
	}
	if cpuSet(0, 0, 4) != nil {
		t.Error("0 CPUs must mean no pinning")
	}
}
