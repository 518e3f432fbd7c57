package tokenest

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/testenv"
)

// accuracyTexts are varied texts the accuracy report measures; the
// calibration uses different ones.
var accuracyTexts = map[string]string{
	"prose":   "The little dog ran to the park. He saw a big tree and a bird. The bird sang a happy song, and the dog wagged his tail.",
	"chat":    "You are a helpful assistant. Answer in one short sentence.\nUser: What colour is the sky on a clear day?",
	"code":    "func add(a, b int) int {\n\treturn a + b\n}\n\nfor i := 0; i < 10; i++ {\n\tfmt.Println(add(i, 2))\n}",
	"json":    `{"id": 1234, "name": "Lily", "tags": ["park", "ball"], "score": 98.5, "active": true}`,
	"numbers": "Order 48213 shipped on 2024-03-17 at 14:05; total 1,299.95 EUR, 3 items, tracking 9981-2231-0042.",
	"german":  "Es war einmal ein kleines Mädchen, das gern im Park spielte. Eines Tages fand sie einen großen roten Ball.",
}

var calibrationTexts = []string{
	"Once upon a time there was a girl named Sue. She liked to draw pictures of cats and dogs.",
	"Tim had a red car. He drove it to the shop every day, and he always bought some bread.",
	"Please summarise the following note in two sentences: the meeting moved to Friday at noon.",
}

// TestEngineAccuracy measures the estimate against the real tokenizer of
// the test model, before and after calibration, and reports both.
func TestEngineAccuracy(t *testing.T) {
	e := testenv.StartLlamaServer(t)
	est := New(Options{BaseURL: e.URL})
	ctx := context.Background()
	exact := map[string]int{}
	for name, text := range accuracyTexts {
		n, err := est.Exact(ctx, text)
		if err != nil || n == 0 {
			t.Fatalf("%s: %d, %v", name, n, err)
		}
		exact[name] = n
	}
	report := func(label string) float64 {
		var sum float64
		var lines []string
		for name, text := range accuracyTexts {
			got := est.Count(text)
			errPct := 100 * float64(got-exact[name]) / float64(exact[name])
			sum += math.Abs(errPct)
			lines = append(lines, name+": exact "+itoa(exact[name])+" est "+itoa(got)+" ("+ftoa(errPct)+"%)")
		}
		mean := sum / float64(len(accuracyTexts))
		t.Logf("%s (%.2f chars/token): mean |error| %.1f%%; %s", label, est.CharsPerToken(), mean, strings.Join(lines, "; "))
		return mean
	}
	before := report("default")
	if err := est.Calibrate(ctx, calibrationTexts...); err != nil {
		t.Fatal(err)
	}
	after := report("calibrated")
	if after > before {
		t.Errorf("calibration made the estimate worse: %.1f%% -> %.1f%%", before, after)
	}
	if after > 35 {
		t.Errorf("calibrated mean error %.1f%% above 35%%", after)
	}
}

// BenchmarkExactEngine is one /tokenize round trip to the real engine, to
// compare with BenchmarkCount.
func BenchmarkExactEngine(b *testing.B) {
	e := testenv.StartLlamaServer(b)
	est := New(Options{BaseURL: e.URL})
	text := strings.Repeat(accuracyTexts["prose"]+" ", 4)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := est.Exact(ctx, text); err != nil {
			b.Fatal(err)
		}
	}
}
