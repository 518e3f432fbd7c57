package hostile_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

const (
	chatBody = `{"model":"stories","messages":[{"role":"user","content":"Once upon"}],"max_tokens":4}`
	compBody = `{"model":"stories","prompt":"Once upon","max_tokens":4}`
)

type group struct {
	name  string
	cases []hcase
}

func caseGroups() []group {
	return []group{
		{"truncated", truncatedCases()},
		{"malformed", malformedCases()},
		{"nesting", nestingCases()},
		{"numbers", numberCases()},
		{"types", typeCases()},
		{"validation", validationCases()},
		{"encoding", encodingCases()},
		{"content-type", contentTypeCases()},
		{"body", bodyCases()},
		{"path", pathCases()},
		{"header", headerCases()},
		{"auth", authCases()},
		{"method", methodCases()},
		{"passthrough", passthroughCases()},
	}
}

// chatWith is the valid chat body with extra top-level JSON members.
func chatWith(members string) string {
	return `{"model":"stories","messages":[{"role":"user","content":"Once"}],` + members + `}`
}

func compWith(members string) string { return `{"model":"stories","prompt":"Once",` + members + `}` }

func truncatedCases() []hcase {
	var out []hcase
	for _, b := range []struct{ path, body string }{{"/v1/chat/completions", chatBody}, {"/v1/completions", compBody}} {
		for _, n := range []int{1, 2, 9, 10, 17, 30, 40, len(b.body) - 2, len(b.body) - 1} {
			out = append(out, hcase{name: fmt.Sprintf("%s at %d", b.path, n), path: b.path, body: b.body[:n], status: 400, msg: "malformed JSON"})
		}
	}
	return out
}

func malformedCases() []hcase {
	bodies := map[string]string{
		"close only":        `}`,
		"missing value":     `{"model":}`,
		"trailing comma":    `{"model":"stories","messages":[{"role":"user","content":"a"}],}`,
		"missing comma":     `{"model":"stories" "messages":[]}`,
		"single quotes":     `{'model':'stories'}`,
		"comment":           `{/* hi */"model":"stories"}`,
		"NaN":               chatWith(`"temperature":NaN`),
		"Infinity":          chatWith(`"temperature":Infinity`),
		"hex number":        chatWith(`"max_tokens":0x10`),
		"leading zero":      chatWith(`"max_tokens":08`),
		"unquoted key":      `{model:"stories"}`,
		"bare word":         `stories`,
		"trailing garbage":  chatBody + `x`,
		"two objects":       chatBody + chatBody,
		"unterminated str":  `{"model":"stories`,
		"bad escape":        chatWith(`"user":"\x"`),
		"control char":      "{\"model\":\"sto\x01ries\"}",
		"array":             `[]`,
		"null":              `null`,
		"string":            `"stories"`,
		"number":            `123`,
		"true":              `true`,
		"array of requests": `[` + chatBody + `]`,
	}
	var out []hcase
	for name, b := range bodies {
		out = append(out, hcase{name: name, body: b, status: 400})
	}
	return out
}

func nestingCases() []hcase {
	deep := func(open, close string, n int) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	return []hcase{
		{name: "33 arrays in an extra field", body: chatWith(`"x":` + deep("[", "]", 33)), status: 400, msg: "nested"},
		{name: "40 objects", body: chatWith(`"x":` + strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat("}", 40)), status: 400, msg: "nested"},
		{name: "47000 open brackets", body: strings.Repeat("[", bodyLimit-1000), status: 400, msg: "nested"},
		{name: "deep content parts", body: `{"model":"stories","messages":[{"role":"user","content":` + deep("[", "]", 40) + `}]}`, status: 400, msg: "nested"},
		{name: "brackets inside strings do not count", body: chatWith(`"user":"` + strings.Repeat("[", 1000) + `","max_tokens":2`), status: 200, engine: true},
		{name: "depth 32 is allowed", body: chatWith(`"max_tokens":2,"x":` + deep("[", "]", 31)), status: 200, engine: true},
	}
}

func numberCases() []hcase {
	c := func(name, members, param string) hcase {
		return hcase{name: name, body: chatWith(members), status: 400, param: param}
	}
	return []hcase{
		c("max_tokens 1e400", `"max_tokens":1e400`, "max_tokens"),
		c("max_tokens 1e3 float", `"max_tokens":1e3`, "max_tokens"),
		c("max_tokens 2^66", `"max_tokens":100000000000000000000`, "max_tokens"),
		c("max_tokens 10000 digits", `"max_tokens":`+strings.Repeat("9", 10000), "max_tokens"),
		c("max_tokens -1", `"max_tokens":-1`, "max_tokens"),
		c("max_tokens 0", `"max_tokens":0`, "max_tokens"),
		c("max_tokens 2^31", `"max_tokens":2147483648`, "max_tokens"),
		c("max_tokens 1.5", `"max_tokens":1.5`, "max_tokens"),
		c("max_completion_tokens 1e400", `"max_completion_tokens":1e400`, "max_completion_tokens"),
		c("temperature 1e400", `"temperature":1e400`, "temperature"),
		c("temperature -1e400", `"temperature":-1e400`, "temperature"),
		c("temperature 2.0000001", `"temperature":2.0000001`, "temperature"),
		c("temperature 1e999999999", `"temperature":1e999999999`, "temperature"),
		c("top_p 1e309", `"top_p":1e309`, "top_p"),
		c("top_p -0.1", `"top_p":-0.1`, "top_p"),
		c("seed 1e19", `"seed":1e19`, "seed"),
		c("seed 2^64", `"seed":18446744073709551616`, "seed"),
		c("n 1e10", `"n":1e10`, "n"),
		c("n 2", `"n":2`, "n"),
		c("presence_penalty 3", `"presence_penalty":3`, "presence_penalty"),
		c("frequency_penalty -1e400", `"frequency_penalty":-1e400`, "frequency_penalty"),
		c("logit_bias 1e400", `"logit_bias":{"1":1e400}`, "logit_bias"),
		c("logit_bias 101", `"logit_bias":{"1":101}`, "logit_bias"),
		c("top_logprobs 21", `"top_logprobs":21`, "top_logprobs"),
		{name: "completion logprobs 6", path: "/v1/completions", body: compWith(`"logprobs":6`), status: 400, param: "logprobs"},
	}
}

func typeCases() []hcase {
	c := func(members, param string) hcase {
		return hcase{name: members, body: chatWith(members), status: 400, param: param}
	}
	p := func(members, param string) hcase {
		return hcase{name: "completion " + members, path: "/v1/completions", body: compWith(members), status: 400, param: param}
	}
	msg := func(name, messages, param string) hcase {
		return hcase{name: name, body: `{"model":"stories","messages":` + messages + `}`, status: 400, param: param}
	}
	return []hcase{
		{name: "model number", body: `{"model":5,"messages":[{"role":"user","content":"a"}]}`, status: 400, param: "model"},
		{name: "model list", body: `{"model":["stories"],"messages":[{"role":"user","content":"a"}]}`, status: 400, param: "model"},
		{name: "model object", body: `{"model":{},"messages":[{"role":"user","content":"a"}]}`, status: 400, param: "model"},
		msg("messages string", `"hi"`, "messages"),
		msg("messages object", `{}`, "messages"),
		msg("messages of numbers", `[5]`, "messages"),
		msg("role number", `[{"role":5,"content":"a"}]`, "role"),
		msg("content number", `[{"role":"user","content":5}]`, "content"),
		msg("content object", `[{"role":"user","content":{}}]`, "content"),
		msg("content part type number", `[{"role":"user","content":[{"type":5}]}]`, "content"),
		msg("content part image", `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://127.0.0.1/"}}]}]`, "type"),
		msg("name number", `[{"role":"user","content":"a","name":5}]`, "name"),
		msg("tool_call_id number", `[{"role":"tool","content":"a","tool_call_id":5}]`, "tool_call_id"),
		c(`"stream":"yes"`, "stream"),
		c(`"stream":1`, "stream"),
		c(`"stream_options":{"include_usage":true}`, "stream_options"),
		c(`"temperature":"hot"`, "temperature"),
		c(`"max_tokens":"8"`, "max_tokens"),
		c(`"max_tokens":true`, "max_tokens"),
		c(`"stop":5`, "stop"),
		c(`"stop":[1]`, "stop"),
		c(`"stop":["a","b","c","d","e"]`, "stop"),
		c(`"stop":""`, "stop"),
		c(`"logit_bias":[]`, "logit_bias"),
		c(`"metadata":{"a":1}`, "metadata"),
		c(`"user":5`, "user"),
		c(`"seed":"1"`, "seed"),
		c(`"logprobs":"x"`, "logprobs"),
		c(`"top_logprobs":"x"`, "top_logprobs"),
		c(`"n":"1"`, "n"),
		p(`"prompt":5`, "prompt"),
		p(`"prompt":[1]`, "prompt"),
		p(`"prompt":{}`, "prompt"),
		p(`"prompt":["a","b"]`, "prompt"),
		p(`"echo":"no"`, "echo"),
		p(`"suffix":5`, "suffix"),
		p(`"logprobs":"x"`, "logprobs"),
	}
}

func validationCases() []hcase {
	many := strings.Repeat(`{"role":"user","content":"a"},`, 257)
	return []hcase{
		{name: "missing model", body: `{"messages":[{"role":"user","content":"a"}]}`, status: 400, param: "model"},
		{name: "empty model", body: `{"model":"","messages":[{"role":"user","content":"a"}]}`, status: 400, param: "model"},
		{name: "blank model", body: `{"model":"  ","messages":[{"role":"user","content":"a"}]}`, status: 400, param: "model"},
		{name: "model 300 bytes", body: `{"model":"` + strings.Repeat("m", 300) + `","messages":[{"role":"user","content":"a"}]}`, status: 400, param: "model"},
		{name: "unknown model", body: `{"model":"gpt-4","messages":[{"role":"user","content":"a"}]}`, status: 404, code: "model_not_found"},
		{name: "no messages", body: `{"model":"stories","messages":[]}`, status: 400, param: "messages"},
		{name: "missing messages", body: `{"model":"stories"}`, status: 400, param: "messages"},
		{name: "257 messages", body: `{"model":"stories","messages":[` + many[:len(many)-1] + `]}`, status: 400, param: "messages"},
		{name: "unknown role", body: `{"model":"stories","messages":[{"role":"wizard","content":"a"}]}`, status: 400, param: "role"},
		{name: "missing role", body: `{"model":"stories","messages":[{"content":"a"}]}`, status: 400, param: "role"},
		{name: "missing prompt", path: "/v1/completions", body: `{"model":"stories"}`, status: 400, param: "prompt"},
		{name: "null prompt", path: "/v1/completions", body: `{"model":"stories","prompt":null}`, status: 400, param: "prompt"},
		{name: "empty prompt list", path: "/v1/completions", body: `{"model":"stories","prompt":[]}`, status: 400, param: "prompt"},
		{name: "stop 300 bytes", body: chatWith(`"stop":"` + strings.Repeat("s", 300) + `"`), status: 400, param: "stop"},
	}
}

func encodingCases() []hcase {
	content := func(s string) string {
		return `{"model":"stories","messages":[{"role":"user","content":"` + s + `"}],"max_tokens":2}`
	}
	return []hcase{
		{name: "invalid utf-8", body: content("\xff\xfe"), status: 400, msg: "UTF-8"},
		{name: "overlong utf-8", body: content("\xc0\xaf"), status: 400, msg: "UTF-8"},
		{name: "truncated utf-8", body: content("\xe2\x82"), status: 400, msg: "UTF-8"},
		{name: "utf-16 surrogate bytes", body: content("\xed\xa0\x80"), status: 400, msg: "UTF-8"},
		{name: "latin-1", body: content("caf\xe9"), status: 400, msg: "UTF-8"},
		{name: "raw NUL in string", body: content("a\x00b"), status: 400, msg: "NUL"},
		{name: "raw NUL between tokens", body: "{\x00\"model\":\"stories\"}", status: 400, msg: "NUL"},
		{name: "utf-8 BOM", body: "\xef\xbb\xbf" + chatBody, status: 400},
		{name: "utf-16le body", body: utf16le(chatBody), status: 400},
		{name: "escaped NUL is text", body: content(`a\u0000b`), status: 200, engine: true},
		{name: "lone surrogate escape", body: content(`\ud800`), status: 200, engine: true},
	}
}

func utf16le(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteByte(byte(r))
		b.WriteByte(0)
	}
	return b.String()
}

func contentTypeCases() []hcase {
	var out []hcase
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
		"application/xml", "application/json; ;;", "application/jsonx", "json", "text/json"} {
		out = append(out, hcase{name: ct, body: chatBody, header: []string{"Content-Type: " + ct}, status: 415})
	}
	return out
}

func bodyCases() []hcase {
	big := `{"model":"stories","prompt":"` + strings.Repeat("a", bodyLimit) + `"}`
	return []hcase{
		{name: "empty", body: "", status: 400},
		{name: "whitespace", body: "   \n\t ", status: 400},
		{name: "limit plus one", path: "/v1/completions", body: big[:bodyLimit+1], status: 413, code: "request_too_large"},
		{name: "declared 10 GB, nothing sent", body: "", header: []string{"Content-Length: 10000000000"}, status: 413, code: "request_too_large"},
		{name: "negative length", body: "", header: []string{"Content-Length: -5"}, status: 400, plain: true},
		{name: "two lengths", raw: "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n{AUTH}\r\n{XFF}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", status: 400, plain: true},
		{name: "bad chunk size", raw: "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n{AUTH}\r\n{XFF}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", status: 400},
		// RFC 9112 §6.1 asks for 501 on an unknown transfer coding; net/http
		// answers it before raygw sees the request.
		{name: "transfer-encoding gzip (RFC 501)", raw: "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n{AUTH}\r\n{XFF}\r\nTransfer-Encoding: gzip\r\n\r\n", status: 501, plain: true, rfc5xx: true},
	}
}

func pathCases() []hcase {
	get := func(path string, status int, location string, auth bool) hcase {
		c := hcase{name: path, method: http.MethodGet, path: path, status: status, plain: status == 307}
		if !auth {
			c.name += " without key"
			c.header = []string{"-Authorization"}
		}
		if location != "" {
			c.check = func(t *testing.T, r response) {
				if got := r.header.Get("Location"); got != location {
					t.Errorf("Location %q, want %q", got, location)
				}
			}
		}
		return c
	}
	return []hcase{
		get("/v1/../v1/models", 307, "/v1/models", true),
		get("//v1/models", 307, "/v1/models", true),
		get("/v1/./models", 307, "/v1/models", true),
		get("/v1//models", 307, "/v1/models", true),
		get("//evil.example/v1/models", 307, "/evil.example/v1/models", true),
		get("/../../etc/passwd", 307, "/etc/passwd", true),
		get("/v1/../metrics", 307, "/metrics", false),
		get("/healthz/../metrics", 307, "/metrics", false),
		get("/v1%2Fmodels", 404, "", true),
		get("/v1/models%2F", 404, "", true),
		get("/v1/models/", 404, "", true),
		get("/V1/MODELS", 404, "", true),
		get("/v1/models;x=1", 404, "", true),
		get("/v1/models%00", 404, "", true),
		get("/%2e%2e/metrics", 404, "", false),
		get("/metrics", 401, "", false),
		get("/v1/models", 401, "", false),
		{name: "absolute-form target", raw: "GET http://evil.example/v1/models HTTP/1.1\r\nHost: evil.example\r\n{AUTH}\r\n{XFF}\r\n\r\n", status: 200},
		{name: "asterisk target", raw: "GET * HTTP/1.1\r\nHost: x\r\n\r\n", status: 400, plain: true},
		{name: "relative target", raw: "GET v1/models HTTP/1.1\r\nHost: x\r\n{AUTH}\r\n\r\n", status: 400, plain: true},
		{name: "missing host", raw: "GET /v1/models HTTP/1.1\r\n{AUTH}\r\n\r\n", status: 400, plain: true},
		{name: "two hosts", raw: "GET /v1/models HTTP/1.1\r\nHost: a\r\nHost: b\r\n{AUTH}\r\n\r\n", status: 400, plain: true},
	}
}

func headerCases() []hcase {
	many := make([]string, 0, 2100)
	for i := range 2100 {
		many = append(many, fmt.Sprintf("X-H%d: %032d", i, i))
	}
	return []hcase{
		{name: "one 70 KB header", method: http.MethodGet, path: "/v1/models", header: []string{"X-Big: " + strings.Repeat("a", 70<<10)}, status: 431, plain: true},
		{name: "2100 headers", method: http.MethodGet, path: "/v1/models", header: many, status: 431, plain: true},
		{name: "70 KB Authorization", method: http.MethodGet, path: "/v1/models", header: []string{"Authorization: Bearer " + strings.Repeat("k", 70<<10)}, status: 431, plain: true},
		{name: "60 KB Authorization", method: http.MethodGet, path: "/v1/models", header: []string{"Authorization: Bearer " + strings.Repeat("k", 60<<10)}, status: 401},
		{name: "NUL in header value", raw: "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n{AUTH}\r\n\r\n", status: 400, plain: true},
		{name: "space in header name", raw: "GET /v1/models HTTP/1.1\r\nHost: x\r\nBad Header: a\r\n{AUTH}\r\n\r\n", status: 400, plain: true},
		// RFC 9112 §5.2: obs-fold is either rejected or replaced by a space; net/http replaces it.
		{name: "obs-fold", raw: "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n{AUTH}\r\n{XFF}\r\n\r\n", status: 200},
		{name: "bare LF line endings", raw: "GET /v1/models HTTP/1.1\nHost: x\nAuthorization: Bearer " + apiKey + "\n\n", status: 200},
	}
}

func authCases() []hcase {
	a := func(name string, headers []string, status int) hcase {
		return hcase{name: name, method: http.MethodGet, path: "/v1/models", header: headers, status: status, code: codeFor(status)}
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	return []hcase{
		a("no header", []string{"-Authorization"}, 401),
		a("scheme only", []string{"Authorization: Bearer"}, 401),
		a("scheme and space", []string{"Authorization: Bearer "}, 401),
		a("basic key", []string{"Authorization: Basic " + b64(apiKey)}, 401),
		a("basic user:key", []string{"Authorization: Basic " + b64("user:"+apiKey)}, 401),
		a("token scheme", []string{"Authorization: Token " + apiKey}, 401),
		a("bare key", []string{"Authorization: " + apiKey}, 401),
		a("key plus word", []string{"Authorization: Bearer " + apiKey + " extra"}, 401),
		a("key plus char", []string{"Authorization: Bearer " + apiKey + "x"}, 401),
		a("key prefix", []string{"Authorization: Bearer " + apiKey[:len(apiKey)-1]}, 401),
		a("key upper-cased", []string{"Authorization: Bearer " + strings.ToUpper(apiKey)}, 401),
		a("tab separator", []string{"Authorization: Bearer\t" + apiKey}, 401),
		a("600-byte token", []string{"Authorization: Bearer " + strings.Repeat("k", 600)}, 401),
		a("non-ascii token", []string{"Authorization: Bearer ключ"}, 401),
		a("x-api-key only", []string{"-Authorization", "X-Api-Key: " + apiKey}, 401),
		a("unrelated extra headers", []string{"X-Dummy: 1", "Cookie: session=1", "Proxy-Authorization: Bearer " + apiKey}, 200),
		{name: "two Authorization headers", raw: "GET /v1/models HTTP/1.1\r\nHost: x\r\n{AUTH}\r\n{AUTH}\r\n{XFF}\r\n\r\n", status: 401, code: "invalid_api_key"},
		{name: "key in query", method: http.MethodGet, path: "/v1/models?api_key=" + apiKey, header: []string{"-Authorization"}, status: 401, code: "invalid_api_key"},
		a("lower-case scheme", []string{"Authorization: bearer " + apiKey}, 200),
		{name: "lower-case header name", raw: "GET /v1/models HTTP/1.1\r\nHost: x\r\nauthorization: Bearer " + apiKey + "\r\n{XFF}\r\n\r\n", status: 200},
		{name: "chat without key", body: chatBody, header: []string{"-Authorization"}, status: 401, code: "invalid_api_key"},
		{name: "oversized body without key", path: "/v1/completions", header: []string{"-Authorization", "Content-Length: 10000000000"}, status: 401, code: "invalid_api_key"},
	}
}

func codeFor(status int) string {
	if status == 401 {
		return "invalid_api_key"
	}
	return ""
}

func methodCases() []hcase {
	m := func(method, path string) hcase {
		return hcase{name: method + " " + path, method: method, path: path, body: "", status: 404, code: "not_found"}
	}
	return []hcase{
		m(http.MethodDelete, "/v1/models"),
		m(http.MethodPut, "/v1/models"),
		m(http.MethodPost, "/v1/models"),
		m(http.MethodPatch, "/v1/chat/completions"),
		m(http.MethodGet, "/v1/chat/completions"),
		m(http.MethodGet, "/v1/completions"),
		m(http.MethodPost, "/healthz"),
		m(http.MethodOptions, "/v1/chat/completions"),
		m(http.MethodTrace, "/v1/models"),
		m("FOO", "/v1/models"),
		m(http.MethodHead, "/v1/chat/completions"),
	}
}

// passthroughCases are valid OpenAI requests carrying llama.cpp-native
// fields. They reach the engine, so they must not undo raygw's limits.
func passthroughCases() []hcase {
	return []hcase{
		{name: "n_predict cannot override max_tokens", path: "/v1/completions", body: compWith(`"max_tokens":2,"n_predict":64`),
			status: 200, engine: true, check: maxCompletionTokens(2)},
		{name: "upper-case MAX_TOKENS", path: "/v1/completions", body: compWith(`"max_tokens":2,"MAX_TOKENS":4`),
			status: 200, engine: true, check: maxCompletionTokens(4)},
		{name: "id_slot out of range", path: "/v1/completions", body: compWith(`"max_tokens":2,"id_slot":99`), status: 200, engine: true},
		{name: "n_probs 100000", path: "/v1/completions", body: compWith(`"max_tokens":2,"n_probs":100000`), status: 200, engine: true},
	}
}

func maxCompletionTokens(n int) func(t *testing.T, r response) {
	return func(t *testing.T, r response) {
		var u struct {
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(r.body, &u); err != nil {
			t.Fatalf("answer: %v: %s", err, clip(r.body))
		}
		if u.Usage.CompletionTokens > n {
			t.Errorf("engine generated %d tokens for a request capped at %d", u.Usage.CompletionTokens, n)
		}
	}
}
