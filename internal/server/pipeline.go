package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/raygw/raygw/internal/admission"
	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/openai"
	"github.com/raygw/raygw/internal/respcache"
)

// Response headers that make the pipeline visible per request.
const (
	headerQueueMS  = "X-Ray-Queue-Ms"
	headerQueuePos = "X-Ray-Queue-Position"
	headerCache    = "X-Ray-Cache"
	headerDedupe   = "X-Ray-Dedupe"
)

// answer is the outcome of one engine run, shared by every waiter of a
// deduplicated run.
type answer struct {
	meta   runMeta
	body   []byte // non-streaming answer
	events [][]byte
}

// runMeta is what a client learns about the scheduling of its run.
type runMeta struct {
	QueueMS  int64 `json:"q"`
	Position int   `json:"p"`
}

// metaPrefix marks the first, internal event of a run; engine events are
// JSON and never start with a NUL byte.
var metaPrefix = []byte("\x00meta")

// event is the meta event: metaPrefix and the JSON of m, as json.Marshal
// writes it, in one allocation.
func (m runMeta) event() []byte {
	b := make([]byte, 0, len(metaPrefix)+48)
	b = append(b, metaPrefix...)
	b = append(b, `{"q":`...)
	b = strconv.AppendInt(b, m.QueueMS, 10)
	b = append(b, `,"p":`...)
	b = strconv.AppendInt(b, int64(m.Position), 10)
	return append(b, '}')
}

// parseMeta decodes the JSON of a meta event as json.Unmarshal does,
// reading the form event writes without it.
func parseMeta(b []byte) (runMeta, bool) {
	if rest, ok := bytes.CutPrefix(b, []byte(`{"q":`)); ok {
		q, rest, okQ := cutInt(rest, ',')
		if rest, ok = bytes.CutPrefix(rest, []byte(`"p":`)); okQ && ok {
			if p, rest, okP := cutInt(rest, '}'); okP && len(rest) == 0 {
				return runMeta{QueueMS: q, Position: int(p)}, true
			}
		}
	}
	return unmarshalMeta(b)
}

func unmarshalMeta(b []byte) (runMeta, bool) {
	var m runMeta
	err := json.Unmarshal(b, &m)
	return m, err == nil
}

// cutInt reads an integer written by strconv.AppendInt up to the byte end
// and returns it and what follows end.
func cutInt(b []byte, end byte) (int64, []byte, bool) {
	i := bytes.IndexByte(b, end)
	if i <= 0 {
		return 0, nil, false
	}
	n, err := strconv.ParseInt(string(b[:i]), 10, 64)
	var canon [24]byte
	if err != nil || !bytes.Equal(strconv.AppendInt(canon[:0], n, 10), b[:i]) {
		return 0, nil, false
	}
	return n, b[i+1:], true
}

// setHeaders sets name/value pairs as h.Set does for canonical names, with
// one allocation for all the values.
func setHeaders(h http.Header, kv ...string) {
	vals := make([]string, len(kv)/2)
	for i := range vals {
		vals[i] = kv[2*i+1]
		h[kv[2*i]] = vals[i : i+1 : i+1]
	}
}

// upstreamPayload encodes a request body for the engine: AppendJSON when
// the body has it (the OpenAI request types), else json.Marshal; the same
// bytes either way.
func upstreamPayload(body any) ([]byte, error) {
	if a, ok := body.(interface{ AppendJSON([]byte) ([]byte, error) }); ok {
		return a.AppendJSON(nil)
	}
	return json.Marshal(body)
}

// run executes a job once: admission, slot choice, the engine call, and the
// cache fill. Stream events go to emit as they arrive.
func (s *Server) run(ctx context.Context, client *openaicompat.Client, j *job, emit func([]byte)) (*answer, error) {
	return s.runJob(ctx, client, j, emit, false)
}

// runJob is run; with lend, emit handles each event before it returns and
// keeps none, so stream events that the cache does not keep are lent to it
// instead of copied.
func (s *Server) runJob(ctx context.Context, client *openaicompat.Client, j *job, emit func([]byte), lend bool) (*answer, error) {
	a := &answer{}
	if sched := j.stages.Sched; sched != nil {
		t, err := sched.Acquire(ctx, admission.Job{PromptTokens: s.estimate(j), OutputCap: j.outputCap, PrefixKey: j.prefix})
		if err != nil {
			return nil, admissionError(err)
		}
		defer t.Release()
		a.meta = runMeta{QueueMS: t.QueueDelay.Milliseconds(), Position: t.Position}
		if t.Slot >= 0 {
			(*j.extra)["id_slot"] = json.RawMessage(strconv.Itoa(t.Slot))
		}
	}
	emit(a.meta.event())
	slot := -1
	if raw, ok := (*j.extra)["id_slot"]; ok {
		slot, _ = strconv.Atoi(string(raw))
	} else if tr := j.stages.Slots; tr != nil && j.prefix != 0 {
		if slot = tr.Pick(ctx, j.prefix); slot >= 0 {
			(*j.extra)["id_slot"] = json.RawMessage(strconv.Itoa(slot))
		}
	}
	if s.log.Enabled(ctx, slog.LevelDebug) { // spares boxing the arguments
		s.log.Debug("engine slot", "request_id", requestIDFrom(ctx), "id_slot", slot, "family", j.family,
			"prefix_key", j.prefix)
	}
	payload, err := upstreamPayload(j.body)
	if err != nil {
		return nil, openai.Internal(err)
	}
	// The engine call may outlive this function by the read of its answer's
	// end (below); a client that leaves still cancels it while it runs.
	parent := ctx
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), durationMS(s.cfg.Model.TimeoutMS))
	detach := context.AfterFunc(parent, cancel)
	resp, err := client.Post(ctx, j.path, payload)
	if err != nil {
		detach()
		cancel()
		return nil, err
	}
	defer func() {
		if detach() && j.stream {
			// The client gets its [DONE] now; the chunked end that follows
			// it is read in the background so the connection is reused.
			go func() { drainClose(resp.Body); cancel() }()
			return
		}
		drainClose(resp.Body)
		cancel()
	}()
	if tr := j.stages.Slots; tr != nil && slot >= 0 && j.prefix != 0 {
		tr.Remember(slot, j.prefix)
	}
	if !j.stream {
		body, err := readAll(resp.Body, resp.ContentLength, maxResponseBytes)
		if err != nil {
			return nil, openaicompat.Classify(ctx, err)
		}
		s.recordUsage(j, body)
		a.body = s.renameModel(body)
	} else if err := s.readStream(ctx, resp.Body, j, a, emit, lend); err != nil {
		return nil, err
	}
	s.observe(j, a)
	if j.cacheable {
		j.stages.Cache.Put(j.cacheKey, &respcache.Entry{ContentType: "application/json", Body: a.body, Events: a.events})
	}
	return a, nil
}

// readStream relays engine events to emit, keeping them for the cache while
// they fit its byte budget. With lend, events the cache does not keep are
// passed to emit in the reader's buffers, valid only during the call.
func (s *Server) readStream(ctx context.Context, body io.Reader, j *job, a *answer, emit func([]byte), lend bool) error {
	in := openai.NewSSEReader(body)
	defer in.Release()
	var scratch []byte // a lent renamed event
	kept, limit := int64(0), s.cfg.Cache.MaxBytes
	for {
		data, err := in.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // closed without [DONE]
			}
			if ctx.Err() != nil {
				return openaicompat.Classify(ctx, ctx.Err())
			}
			return streamError(err)
		}
		if bytes.Equal(data, openai.Done) {
			return nil
		}
		if bytes.Contains(data, []byte(`"timings"`)) || bytes.Contains(data, []byte(`"usage"`)) {
			s.recordUsage(j, data)
		}
		var ev []byte
		if lend && !j.cacheable {
			ev, scratch = s.renameLent(data, scratch)
		} else {
			ev = s.renamedCopy(data) // data is only valid until the next read
		}
		if j.cacheable {
			if kept += int64(len(ev)); kept <= limit {
				a.events = append(a.events, ev)
			} else {
				j.cacheable = false
				a.events = nil
			}
		}
		emit(ev)
	}
}

func streamError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &openai.Error{Status: 502, Type: "server_error", Code: "engine_stream_interrupted",
			Message: "the model engine stopped in the middle of the answer", Cause: err}
	}
	return openai.Unavailable(2, err, "the model engine failed while answering")
}

// estimate is the job's prompt size in tokens for the scheduler's budgets.
func (s *Server) estimate(j *job) int {
	if j.stages.Tokens != nil {
		return j.stages.Tokens.Count(j.promptText) + templateTokensPerMessage*j.messages
	}
	return len(j.promptText)/4 + templateTokensPerMessage*j.messages
}

// admissionError maps a scheduler refusal to its HTTP answer.
func admissionError(err error) error {
	switch {
	case errors.Is(err, admission.ErrTooLarge):
		return openai.TooLarge("request_too_large", "%v", err)
	case errors.Is(err, admission.ErrQueueFull):
		return &openai.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "queue_full",
			Message: "the gateway's queue is full; retry later",
			Header:  http.Header{"Retry-After": {strconv.Itoa(max(1, admission.RetryAfterSeconds(err)))}}}
	case errors.Is(err, admission.ErrQueueTimeout):
		return &openai.Error{Status: http.StatusGatewayTimeout, Type: "server_error", Code: "queue_timeout",
			Message: "the request waited too long in the gateway's queue", Cause: err}
	case errors.Is(err, admission.ErrCanceled):
		return context.Canceled
	}
	return openai.Internal(err)
}

// sink writes one client's answer: JSON, or SSE started lazily at the first
// engine event, so errors before it still get their HTTP status.
type sink struct {
	s     *Server
	w     http.ResponseWriter
	j     *job
	start time.Time
	out   *openai.SSEWriter
	gone  bool // the client stopped reading
}

// event handles one run event for this client.
func (k *sink) event(ev []byte) {
	if bytes.HasPrefix(ev, metaPrefix) {
		if m, ok := parseMeta(ev[len(metaPrefix):]); ok && k.out == nil {
			setHeaders(k.w.Header(), headerQueueMS, strconv.FormatInt(m.QueueMS, 10),
				headerQueuePos, strconv.Itoa(m.Position))
		}
		return
	}
	if k.gone || !k.j.stream {
		return
	}
	if k.out == nil {
		openai.SSEHeaders(k.w.Header())
		k.w.WriteHeader(http.StatusOK)
		k.out = openai.NewSSEWriter(k.w)
		k.s.metrics.TTFT.WithLabelValues(k.j.route).Observe(k.s.now().Sub(k.start).Seconds())
	}
	if k.out.Data(ev) != nil {
		k.gone = true
	}
}

// finish ends the answer after the run returned a or err.
func (k *sink) finish(ctx context.Context, a *answer, err error) error {
	switch {
	case err != nil && k.out == nil:
		return err
	case err != nil:
		k.s.streamFailed(ctx, k.out, err)
		return nil
	case !k.j.stream:
		setHeaders(k.w.Header(), headerQueueMS, strconv.FormatInt(a.meta.QueueMS, 10),
			headerQueuePos, strconv.Itoa(a.meta.Position), "Content-Type", "application/json",
			"Content-Length", strconv.Itoa(len(a.body)))
		k.w.WriteHeader(http.StatusOK)
		_, _ = k.w.Write(a.body)
		return nil
	}
	if k.out == nil { // an empty stream
		openai.SSEHeaders(k.w.Header())
		k.w.WriteHeader(http.StatusOK)
		k.out = openai.NewSSEWriter(k.w)
	}
	_ = k.out.Done()
	return nil
}

// runDirect runs the job for this client alone, streaming as it goes.
// k.event writes each event at once and keeps none, so events are lent.
func (s *Server) runDirect(ctx context.Context, k *sink, client *openaicompat.Client) error {
	a, err := s.runJob(ctx, client, k.j, k.event, true)
	return k.finish(ctx, a, err)
}

// follow delivers a shared run to this client.
func (s *Server) follow(ctx context.Context, k *sink, next func(context.Context) ([]byte, error),
	result func(context.Context) (*answer, error)) error {
	for {
		ev, err := next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return k.finish(ctx, nil, err)
		}
		k.event(ev)
	}
	a, err := result(ctx)
	return k.finish(ctx, a, err)
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// drainTimeout bounds the read of what follows an answer's end.
const drainTimeout = 50 * time.Millisecond

// drainClose reads what is left of an engine answer, such as the chunked
// encoding's end after a stream's [DONE], so the connection goes back to
// the pool instead of being closed; an engine that sends nothing more
// within drainTimeout (or more than 4 KiB) has its connection closed.
func drainClose(body io.ReadCloser) {
	t := time.AfterFunc(drainTimeout, func() { _ = body.Close() })
	_, _ = io.CopyN(io.Discard, body, 4<<10)
	t.Stop()
	_ = body.Close()
}
