package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/raygw/raygw/internal/bench/report"
	"github.com/raygw/raygw/internal/openai"
)

// QueueHeader is the response header in which raygw reports how long the
// request waited in its admission queue, in milliseconds.
const QueueHeader = "X-Ray-Queue-Ms"

// caller sends one request and measures it.
type caller struct {
	opts  *Options
	start time.Time
}

// streamChunk is what the runner reads from each event (chat or text).
type streamChunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		Message *struct {
			Content string `json:"content"`
		} `json:"message"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Timings *struct {
		CacheN             int     `json:"cache_n"`
		PromptN            int     `json:"prompt_n"`
		PredictedN         int     `json:"predicted_n"`
		PredictedPerSecond float64 `json:"predicted_per_second"`
	} `json:"timings"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// measurement accumulates what one response told us.
type measurement struct {
	text       strings.Builder
	firstToken time.Time
	chunks     int
	done       bool
	streamed   bool
}

func (c *caller) do(ctx context.Context, j job) report.Row {
	t := c.opts.Targets[j.target]
	row := report.Row{Seq: j.seq, ID: j.item.ID, Target: t.Label}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL+j.item.Path(), bytes.NewReader(j.body))
	if err != nil {
		row.ErrorKind, row.Error = "transport", err.Error()
		return row
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	// An empty idempotency key is not sent, but lets the transport replay the
	// request when a kept-alive connection turns out to be closed by the
	// server before any response byte (llama-server closes idle ones).
	req.Header["X-Idempotency-Key"] = nil
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	sent := c.opts.Now()
	row.StartMS = ms(sent.Sub(c.start))
	resp, err := c.opts.Client.Do(req)
	if err != nil {
		row.ErrorKind, row.Error = errKind(ctx, "transport"), err.Error()
		row.E2EMS = ms(c.opts.Now().Sub(sent))
		return row
	}
	defer resp.Body.Close()
	row.Status = resp.StatusCode
	if v := resp.Header.Get(QueueHeader); v != "" {
		if q, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			row.QueueMS = &q
		}
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		row.ErrorKind, row.Error = "http", errorMessage(resp.StatusCode, b)
		row.E2EMS = ms(c.opts.Now().Sub(sent))
		return row
	}
	var m measurement
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		err = c.readStream(resp.Body, &row, &m)
	} else {
		err = c.readJSON(resp.Body, &row, &m)
	}
	end := c.opts.Now()
	row.E2EMS = ms(end.Sub(sent))
	if err != nil {
		row.ErrorKind, row.Error = errKind(ctx, "stream"), err.Error()
		return row
	}
	c.finish(&row, &m, sent, end, j)
	return row
}

func (c *caller) readStream(body io.Reader, row *report.Row, m *measurement) error {
	m.streamed = true
	r := openai.NewSSEReader(body)
	for {
		data, err := r.Next()
		if err == io.EOF {
			if !m.done {
				return errors.New("stream ended without [DONE]")
			}
			return nil
		}
		if err != nil {
			return err
		}
		if bytes.Equal(data, openai.Done) {
			m.done = true
			continue
		}
		if err := c.absorb(data, row, m); err != nil {
			return err
		}
	}
}

func (c *caller) readJSON(body io.Reader, row *report.Row, m *measurement) error {
	b, err := io.ReadAll(io.LimitReader(body, 16<<20))
	if err != nil {
		return err
	}
	return c.absorb(b, row, m)
}

// absorb folds one chunk (or a whole JSON response) into the measurement.
func (c *caller) absorb(data []byte, row *report.Row, m *measurement) error {
	var ch streamChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return fmt.Errorf("bad event: %w", err)
	}
	if ch.Error != nil {
		return fmt.Errorf("error event: %s", ch.Error.Message)
	}
	for _, choice := range ch.Choices {
		piece := choice.Delta.Content + choice.Text
		if choice.Message != nil {
			piece += choice.Message.Content
		}
		if piece != "" {
			if m.firstToken.IsZero() {
				m.firstToken = c.opts.Now()
			}
			m.chunks++
			m.text.WriteString(piece)
		}
		if choice.FinishReason != nil && *choice.FinishReason != "" {
			row.FinishReason = *choice.FinishReason
		}
	}
	if ch.Usage != nil {
		row.PromptTokens = ch.Usage.PromptTokens
		row.CompletionTokens = ch.Usage.CompletionTokens
	}
	if tm := ch.Timings; tm != nil {
		row.HasTimings = true
		row.PromptEvaluated, row.PromptReused = tm.PromptN, tm.CacheN
		row.EngineTokensPerSecond = tm.PredictedPerSecond
		if row.CompletionTokens == 0 {
			row.CompletionTokens = tm.PredictedN
		}
	}
	return nil
}

func (c *caller) finish(row *report.Row, m *measurement, sent, end time.Time, j job) {
	first := m.firstToken
	if first.IsZero() || !m.streamed {
		first = end // nothing streamed: the first token arrived with the last
	}
	row.TTFTMS = ms(first.Sub(sent))
	if row.CompletionTokens == 0 {
		row.CompletionTokens = m.chunks
	}
	switch dec := end.Sub(first); {
	case !m.streamed && row.CompletionTokens > 0:
		row.TokensPerSecond = float64(row.CompletionTokens) / end.Sub(sent).Seconds()
	case row.CompletionTokens > 1 && dec > 0:
		row.TokensPerSecond = float64(row.CompletionTokens-1) / dec.Seconds()
	}
	text := m.text.String()
	if j.item.HasChecks() {
		row.Checks = j.item.Evaluate(text)
	}
	if k := c.opts.KeepOutput; k > 0 {
		if len(text) > k {
			text = text[:k]
		}
		row.Output = text
	}
}

func errKind(ctx context.Context, kind string) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "timeout"
	}
	return kind
}

// errorMessage pulls the OpenAI error message out of an error body.
func errorMessage(status int, b []byte) string {
	var env struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &env) == nil && env.Error.Message != "" {
		return fmt.Sprintf("HTTP %d: %s", status, env.Error.Message)
	}
	return fmt.Sprintf("HTTP %d: %s", status, strings.TrimSpace(string(b)))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
