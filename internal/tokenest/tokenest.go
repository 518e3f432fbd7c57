// Package tokenest owns token estimates: the exact count from the engine's
// /tokenize endpoint (bounded by a timeout) and a calibrated
// characters-per-token estimate that needs no round trip.
//
// The hot path uses the estimate; the engine calibrates it:
//
//	est := tokenest.FromConfig(cfg, httpClient)   // once
//	_ = est.Calibrate(ctx, samplePrompts...)      // at start, once the engine is ready (optional)
//	n := est.Count(promptText)                    // per request: admission.Job.PromptTokens
//	est.Observe(promptChars, usage.PromptTokens)  // after each answer: keeps the ratio honest
//
// CountContext asks the engine first and falls back to the estimate; use it
// where exactness matters more than a round trip (e.g. a 413 decision near
// the context window). Estimator is safe for concurrent use.
package tokenest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/raygw/raygw/internal/config"
)

// ErrTokenize wraps every failure to get an exact count.
var ErrTokenize = errors.New("tokenest: engine tokenize failed")

// DefaultCharsPerToken suits BPE tokenizers of current 1B-class models on
// English text; Calibrate and Observe replace it with the real ratio.
const DefaultCharsPerToken = 4.0

// Ratio bounds: no tokenizer is outside them, and they stop one odd sample
// from wrecking the estimate.
const (
	minRatio = 1.0
	maxRatio = 8.0
)

// Options configures an Estimator.
type Options struct {
	BaseURL       string        // llama-server base URL; "" disables exact counts
	Client        *http.Client  // nil: http.DefaultClient
	Timeout       time.Duration // bound on one /tokenize call (0: 250ms)
	CharsPerToken float64       // starting ratio (0: DefaultCharsPerToken)
	Logger        *slog.Logger
}

// Estimator counts tokens.
type Estimator struct {
	opts  Options
	log   *slog.Logger
	ratio atomic.Uint64 // float64 bits of chars per token
}

// FromConfig builds an estimator for the configured llama-server.
func FromConfig(cfg *config.Config, client *http.Client) *Estimator {
	base := cfg.LlamaCpp.BaseURL
	if base == "" {
		base = "http://" + cfg.LlamaAddr()
	}
	return New(Options{BaseURL: base, Client: client})
}

// New returns an estimator with opts.
func New(opts Options) *Estimator {
	if opts.Client == nil {
		opts.Client = http.DefaultClient
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 250 * time.Millisecond
	}
	if opts.CharsPerToken <= 0 {
		opts.CharsPerToken = DefaultCharsPerToken
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	e := &Estimator{opts: opts, log: opts.Logger.With("component", "tokenest")}
	e.setRatio(opts.CharsPerToken)
	return e
}

// CharsPerToken is the current ratio.
func (e *Estimator) CharsPerToken() float64 { return math.Float64frombits(e.ratio.Load()) }

func (e *Estimator) setRatio(r float64) {
	e.ratio.Store(math.Float64bits(min(max(r, minRatio), maxRatio)))
}

// Count estimates text's tokens from its characters, rounding up; a
// non-empty text counts at least 1.
func (e *Estimator) Count(text string) int {
	n := utf8.RuneCountInString(text)
	if n == 0 {
		return 0
	}
	return max(1, int(math.Ceil(float64(n)/e.CharsPerToken())))
}

// Exact asks the engine's /tokenize for text's token count.
func (e *Estimator) Exact(ctx context.Context, text string) (int, error) {
	if e.opts.BaseURL == "" {
		return 0, fmt.Errorf("%w: no engine URL", ErrTokenize)
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	body, _ := json.Marshal(map[string]string{"content": text}) // strings always marshal
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.opts.BaseURL+"/tokenize", bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrTokenize, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.opts.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrTokenize, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%w: status %d", ErrTokenize, resp.StatusCode)
	}
	var out struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&out); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrTokenize, err)
	}
	if out.Tokens == nil {
		return 0, fmt.Errorf("%w: answer has no tokens list", ErrTokenize)
	}
	return len(out.Tokens), nil
}

// CountContext returns the exact count when the engine answers in time, else
// the estimate; exact reports which.
func (e *Estimator) CountContext(ctx context.Context, text string) (n int, exact bool) {
	n, err := e.Exact(ctx, text)
	if err != nil {
		e.log.Debug("tokenize failed; using the estimate", "err", err)
		return e.Count(text), false
	}
	e.Observe(utf8.RuneCountInString(text), n)
	return n, true
}

// Observe feeds one real measurement (characters of a prompt and its token
// count, e.g. usage.prompt_tokens) into the ratio: a moving average with
// weight 1/16. Samples under 16 tokens are ignored.
func (e *Estimator) Observe(chars, tokens int) {
	if tokens < 16 || chars <= 0 {
		return
	}
	sample := float64(chars) / float64(tokens)
	for {
		old := e.ratio.Load()
		r := math.Float64frombits(old)
		r += (min(max(sample, minRatio), maxRatio) - r) / 16
		if e.ratio.CompareAndSwap(old, math.Float64bits(r)) {
			return
		}
	}
}

// Calibrate sets the ratio from the engine's exact counts of samples (total
// characters / total tokens).
func (e *Estimator) Calibrate(ctx context.Context, samples ...string) error {
	chars, tokens := 0, 0
	for _, s := range samples {
		n, err := e.Exact(ctx, s)
		if err != nil {
			return err
		}
		chars += utf8.RuneCountInString(s)
		tokens += n
	}
	if tokens == 0 {
		return fmt.Errorf("%w: samples hold no tokens", ErrTokenize)
	}
	e.setRatio(float64(chars) / float64(tokens))
	return nil
}
