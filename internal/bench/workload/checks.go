package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Check is one compiled quality expectation on a response's text.
type Check interface {
	// Name is a short label: regex, contains or json_schema.
	Name() string
	// Eval returns "" when text passes, else why it failed.
	Eval(text string) string
}

// Result is the outcome of one check on one response.
type Result struct {
	Check  string `json:"check"`
	Passed bool   `json:"passed"`
	Reason string `json:"reason,omitempty"`
}

// Evaluate runs every check of the item on text.
func (it *Item) Evaluate(text string) []Result {
	out := make([]Result, 0, len(it.Checks))
	for _, c := range it.Checks {
		why := c.Eval(text)
		out = append(out, Result{Check: c.Name(), Passed: why == "", Reason: why})
	}
	return out
}

func compileChecks(it *Item) ([]Check, error) {
	var checks []Check
	if it.ExpectRegex != "" {
		re, err := regexp.Compile(it.ExpectRegex)
		if err != nil {
			return nil, fmt.Errorf("expect_regex: %w", err)
		}
		checks = append(checks, regexCheck{re})
	}
	for _, s := range it.ExpectContains {
		if s == "" {
			return nil, fmt.Errorf("expect_contains: empty string")
		}
	}
	if len(it.ExpectContains) > 0 {
		checks = append(checks, containsCheck(it.ExpectContains))
	}
	if len(it.ExpectJSONSchema) > 0 && string(it.ExpectJSONSchema) != "null" {
		sch, err := compileSchema(it.ExpectJSONSchema)
		if err != nil {
			return nil, fmt.Errorf("expect_json_schema: %w", err)
		}
		checks = append(checks, schemaCheck{sch})
	}
	return checks, nil
}

type regexCheck struct{ re *regexp.Regexp }

func (regexCheck) Name() string { return "regex" }
func (c regexCheck) Eval(text string) string {
	if c.re.MatchString(text) {
		return ""
	}
	return fmt.Sprintf("output does not match %q", c.re.String())
}

type containsCheck []string

func (containsCheck) Name() string { return "contains" }
func (c containsCheck) Eval(text string) string {
	for _, s := range c {
		if !strings.Contains(text, s) {
			return fmt.Sprintf("output does not contain %q", s)
		}
	}
	return ""
}

type schemaCheck struct{ sch *jsonschema.Schema }

func (schemaCheck) Name() string { return "json_schema" }
func (c schemaCheck) Eval(text string) string {
	raw, ok := ExtractJSON(text)
	if !ok {
		return "output holds no JSON value"
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return "output JSON does not parse: " + err.Error()
	}
	if err := c.sch.Validate(inst); err != nil {
		return "output JSON does not match the schema: " + oneLine(err.Error())
	}
	return ""
}

func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	// No loaders: a workload schema may not read files or fetch URLs.
	c.UseLoader(jsonschema.SchemeURLLoader{})
	const loc = "mem:///expect.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

// ExtractJSON finds the JSON value in a model's output: the whole text, the
// body of a ``` fence, or the first object or array in the text.
func ExtractJSON(text string) ([]byte, bool) {
	t := strings.TrimSpace(text)
	if i := strings.Index(t, "```"); i >= 0 {
		rest := t[i+3:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:]
		}
		if j := strings.Index(rest, "```"); j >= 0 {
			rest = rest[:j]
		}
		t = strings.TrimSpace(rest)
	}
	if json.Valid([]byte(t)) {
		return []byte(t), true
	}
	for i := 0; i < len(t); i++ {
		if t[i] != '{' && t[i] != '[' {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(t[i:]))
		var v json.RawMessage
		if err := dec.Decode(&v); err == nil {
			return v, true
		}
	}
	return nil, false
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
