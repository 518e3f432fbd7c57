package openai

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// fieldRule checks one engine field forwarded beyond the OpenAI schema.
type fieldRule func(name string, raw json.RawMessage) error

func numRange(lo, hi float64) fieldRule {
	return func(name string, raw json.RawMessage) error {
		v, ok := jsonFloat(raw)
		if !ok || v < lo || v > hi {
			return BadRequest(name, "%s must be a number between %g and %g", name, lo, hi)
		}
		return nil
	}
}

func intRange(lo, hi int64) fieldRule {
	return func(name string, raw json.RawMessage) error {
		v, ok := jsonInt(raw)
		if !ok || v < lo || v > hi {
			return BadRequest(name, "%s must be an integer between %d and %d", name, lo, hi)
		}
		return nil
	}
}

func boolean(name string, raw json.RawMessage) error {
	if string(raw) != "true" && string(raw) != "false" && !decodes(raw, new(bool)) {
		return BadRequest(name, "%s must be a boolean", name)
	}
	return nil
}

func stringMax(n int) fieldRule {
	return func(name string, raw json.RawMessage) error {
		var v string
		if json.Unmarshal(raw, &v) != nil || len(v) > n {
			return BadRequest(name, "%s must be a string of at most %d bytes", name, n)
		}
		return nil
	}
}

func objectMax(n int) fieldRule {
	return func(name string, raw json.RawMessage) error {
		if len(raw) > n || !strings.HasPrefix(strings.TrimSpace(string(raw)), "{") {
			return BadRequest(name, "%s must be a JSON object of at most %d bytes", name, n)
		}
		return nil
	}
}

// jsonFloat is json.Unmarshal of raw into a float64: the value, or false
// when it fails. A plain JSON number takes the short way.
func jsonFloat(raw json.RawMessage) (float64, bool) {
	if isJSONNumber(raw) {
		v, err := strconv.ParseFloat(string(raw), 64)
		return v, err == nil
	}
	var v float64
	return v, decodes(raw, &v)
}

// jsonInt is json.Unmarshal of raw into an int64, like jsonFloat.
func jsonInt(raw json.RawMessage) (int64, bool) {
	if isJSONNumber(raw) {
		v, err := strconv.ParseInt(string(raw), 10, 64)
		return v, err == nil
	}
	var v int64
	return v, decodes(raw, &v)
}

// decodes reports whether raw decodes into v.
func decodes(raw json.RawMessage, v any) bool { return json.Unmarshal(raw, v) == nil }

// isJSONNumber reports whether b is exactly one JSON number.
func isJSONNumber(b []byte) bool { return NumberEnd(b, 0) == len(b) }

// EngineFields are the request fields beyond the OpenAI schema that raygw
// forwards to the engine (llama.cpp sampling options, grammars, LoRA
// selection). Each is checked; any other unknown field is dropped, so no
// client can reach engine options that cost without bound (n_probs) or
// bypass the gateway's limits (n_predict, id_slot).
var EngineFields = map[string]fieldRule{
	"top_k":              intRange(0, 1000),
	"min_p":              numRange(0, 1),
	"typical_p":          numRange(0, 1),
	"repeat_penalty":     numRange(0, 10),
	"repeat_last_n":      intRange(-1, 1<<16),
	"ignore_eos":         boolean,
	"cache_prompt":       boolean,
	"mirostat":           intRange(0, 2),
	"mirostat_tau":       numRange(0, 100),
	"mirostat_eta":       numRange(0, 1),
	"dynatemp_range":     numRange(0, 5),
	"dynatemp_exponent":  numRange(0, 10),
	"xtc_probability":    numRange(0, 1),
	"xtc_threshold":      numRange(0, 1),
	"dry_multiplier":     numRange(0, 10),
	"dry_base":           numRange(1, 10),
	"dry_allowed_length": intRange(0, 1000),
	"dry_penalty_last_n": intRange(-1, 1<<16),
	"grammar":            stringMax(16 << 10),
	"json_schema":        objectMax(16 << 10),
	"lora_name":          stringMax(256),
}

// filterExtra keeps the allowed engine fields, checks them, and reports the
// names of the dropped ones.
func filterExtra(extra map[string]json.RawMessage) (map[string]json.RawMessage, []string, error) {
	var dropped []string
	for name, raw := range extra {
		rule, ok := EngineFields[name]
		if !ok {
			dropped = append(dropped, name)
			delete(extra, name)
			continue
		}
		if err := rule(name, raw); err != nil {
			return nil, nil, err
		}
	}
	sort.Strings(dropped)
	return extra, dropped, nil
}
