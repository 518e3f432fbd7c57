package jobs

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/auth"
)

// api serves the queue's routes with the tenant taken from X-Test-Tenant,
// as the auth middleware would set it.
func api(q *Queue) http.Handler {
	h := q.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t := r.Header.Get("X-Test-Tenant"); t != "" {
			r = r.WithContext(auth.WithFingerprint(r.Context(), t))
		}
		h.ServeHTTP(w, r)
	})
}

func do(t *testing.T, h http.Handler, method, path, tenant, body string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test-Tenant", tenant)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("%s %s: answer %q is not JSON: %v", method, path, rec.Body, err)
	}
	return rec, m
}

const chatJob = `{"endpoint":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"hi"}]}}`

func TestAPISubmitThenPollUntilDone(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Now = time.Now })
	e.exec.script = []reply{{status: 200, body: `{"object":"chat.completion","id":"chatcmpl-1"}`}}
	h := api(e.q)
	rec, m := do(t, h, "POST", "/v1/jobs", "alice", chatJob)
	if rec.Code != http.StatusAccepted || m["status"] != "queued" || m["object"] != "job" {
		t.Fatalf("POST: %d %v", rec.Code, m)
	}
	id, _ := m["id"].(string)
	if rec.Header().Get("Location") != "/v1/jobs/"+id || m["created_at"] == nil {
		t.Fatalf("Location %q, answer %v", rec.Header().Get("Location"), m)
	}
	// The 202 came after the commit: the job is in the database now.
	if j := e.get(t, "alice", id); j.Status != StatusQueued {
		t.Fatalf("stored status %s", j.Status)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.q.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the job to finish", func() bool {
		_, m = do(t, h, "GET", "/v1/jobs/"+id, "alice", "")
		return m["status"] == "succeeded"
	})
	res, _ := m["result"].(map[string]any)
	if res["id"] != "chatcmpl-1" || m["finished_at"] == nil || m["attempts"] != 1.0 {
		t.Fatalf("done job: %v", m)
	}
	rec, m = do(t, h, "GET", "/v1/jobs/"+id, "mallory", "")
	if rec.Code != http.StatusNotFound || errCode(m) != "job_not_found" {
		t.Fatalf("cross-tenant GET: %d %v", rec.Code, m)
	}
	if rec, _ := do(t, h, "DELETE", "/v1/jobs/"+id, "mallory", ""); rec.Code != http.StatusNotFound {
		t.Fatalf("cross-tenant DELETE: %d", rec.Code)
	}
	rec, m = do(t, h, "DELETE", "/v1/jobs/"+id, "alice", "")
	if rec.Code != http.StatusConflict || errCode(m) != "job_not_cancelable" {
		t.Fatalf("DELETE of a finished job: %d %v", rec.Code, m)
	}
}

func TestAPICallbackEndToEnd(t *testing.T) {
	rcv := newReceiver(t, 200)
	e := newEnv(t, func(o *Options) { o.Now = time.Now })
	h := api(e.q)
	rec, m := do(t, h, "POST", "/v1/jobs", "alice",
		`{"endpoint":"/v1/completions","body":{"model":"m","prompt":"x"},"callback_url":"`+rcv.srv.URL+`/hook"}`)
	if rec.Code != http.StatusAccepted || m["callback_secret"] == nil {
		t.Fatalf("POST: %d %v", rec.Code, m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.q.Run(ctx) }()
	waitFor(t, "the callback", func() bool { return rcv.count() == 1 })
	waitFor(t, "the delivery to be recorded", func() bool {
		_, m := do(t, h, "GET", "/v1/jobs/"+m["id"].(string), "alice", "")
		cb, _ := m["callback"].(map[string]any)
		return cb["status"] == "delivered"
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestAPICancelQueued(t *testing.T) {
	e := newEnv(t, nil)
	h := api(e.q)
	_, m := do(t, h, "POST", "/v1/jobs", "alice", chatJob)
	rec, m := do(t, h, "DELETE", "/v1/jobs/"+m["id"].(string), "alice", "")
	if rec.Code != http.StatusOK || m["status"] != "canceled" {
		t.Fatalf("DELETE: %d %v", rec.Code, m)
	}
	if n := e.runDue(t); n != 0 {
		t.Fatal("a canceled job ran")
	}
}

func TestAPIRejects(t *testing.T) {
	big := `{"endpoint":"/v1/completions","body":{"model":"m","prompt":"` + strings.Repeat("x", 5000) + `"}}`
	tests := []struct {
		name      string
		mut       func(*Options)
		body      string
		status    int
		param     string
		msgSubstr string
	}{
		{"stream", nil, `{"endpoint":"/v1/chat/completions","body":{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}}`,
			400, "body.stream", "streaming"},
		{"bad endpoint", nil, `{"endpoint":"/v1/embeddings","body":{}}`, 400, "endpoint", "/v1/chat/completions"},
		{"missing endpoint", nil, `{"body":{}}`, 400, "endpoint", "required"},
		{"missing body", nil, `{"endpoint":"/v1/completions"}`, 400, "body", "required"},
		{"body not object", nil, `{"endpoint":"/v1/completions","body":"x"}`, 400, "body", "object"},
		{"inner field named", nil, `{"endpoint":"/v1/chat/completions","body":{"model":"m","messages":"hi"}}`, 400, "body.messages", ""},
		{"unknown field", nil, `{"endpoint":"/v1/completions","body":{"model":"m","prompt":"x"},"priority":1}`, 400, "priority", "unknown"},
		{"not JSON", nil, `nope`, 400, "", "JSON object"},
		{"callback disabled", func(o *Options) { o.Config.CallbackAllowedHosts = nil },
			`{"endpoint":"/v1/completions","body":{"model":"m","prompt":"x"},"callback_url":"https://callback.example/h"}`,
			400, "callback_url", "disabled"},
		{"callback host not allowed", nil,
			`{"endpoint":"/v1/completions","body":{"model":"m","prompt":"x"},"callback_url":"http://evil.example/h"}`,
			400, "callback_url", "not allowed"},
		{"callback private", func(o *Options) { o.Config.CallbackAllowPrivateNetwork = false },
			`{"endpoint":"/v1/completions","body":{"model":"m","prompt":"x"},"callback_url":"https://127.0.0.1/h"}`,
			400, "callback_url", "not public"},
		{"too large", func(o *Options) { o.MaxBodyBytes = 4096 }, big, 413, "", "limit"},
		{"queue full", func(o *Options) { o.Config.MaxJobs = 1 }, "", 429, "", "full"},
		{"low storage", func(o *Options) { o.Statfs = func(string) (uint64, error) { return 0, nil } }, chatJob, 507, "", "storage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.mut)
			h := api(e.q)
			body := tt.body
			if tt.status == 429 {
				e.submit(t, "x", Submission{})
				body = chatJob
			}
			rec, m := do(t, h, "POST", "/v1/jobs", "alice", body)
			env, _ := m["error"].(map[string]any)
			msg, _ := env["message"].(string)
			param, _ := env["param"].(string)
			if rec.Code != tt.status || param != tt.param || !strings.Contains(msg, tt.msgSubstr) {
				t.Fatalf("got %d param %q message %q; want %d param %q containing %q", rec.Code, param, msg,
					tt.status, tt.param, tt.msgSubstr)
			}
			if (tt.status == 429 || tt.status == 507) && rec.Header().Get("Retry-After") == "" {
				t.Fatal("no Retry-After")
			}
		})
	}
}

func TestAPIUnknownID(t *testing.T) {
	e := newEnv(t, nil)
	for _, id := range []string{"nope", newID()} {
		rec, m := do(t, api(e.q), "GET", "/v1/jobs/"+id, "alice", "")
		if rec.Code != 404 || errCode(m) != "job_not_found" {
			t.Fatalf("GET %s: %d %v", id, rec.Code, m)
		}
	}
}

func errCode(m map[string]any) string {
	env, _ := m["error"].(map[string]any)
	c, _ := env["code"].(string)
	return c
}
