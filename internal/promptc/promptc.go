// Package promptc owns the prompt compiler: it shrinks prompts before they
// reach the engine (collapse runs of blanks, drop repeated lines, never inside
// ``` code blocks) and names the request's prompt family and stable prefix.
//
// The handler calls it right after decoding and resolving the model, before
// the response cache (so equivalent prompts share cache entries):
//
//	pc := promptc.FromConfig(cfg, tokenEstimator) // once; tokenEstimator may be nil
//	res := pc.Chat(chatReq)        // or pc.Completion(completionReq); rewrites the request in place
//	// res.Family     -> adaptive caps, metrics label
//	// res.PrefixKey  -> admission.Job.PrefixKey and slots.Tracker.Pick/Remember
//	// res.CharsSaved(), res.TokensSaved -> metrics
//
// With RAY_PROMPT_COMPILER_ENABLED=false the request is left untouched but
// Family and PrefixKey are still reported.
package promptc

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"unicode/utf8"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/openai"
)

// TokenCounter estimates the tokens of a text; tokenest implements it.
type TokenCounter interface {
	Count(text string) int
}

// Options configures a Compiler.
type Options struct {
	Enabled             bool
	CollapseWhitespace  bool
	DedupeRepeatedLines bool
	FamilyMetadataKeys  []string     // first key present in metadata names the family
	Tokens              TokenCounter // nil: TokensSaved stays 0
}

// Family sources reported in Result.FamilySource.
const (
	SourceMetadata = "metadata"      // a FAMILY_METADATA_KEYS entry
	SourceSystem   = "system-prompt" // hash of the leading system/developer messages
	SourceScaffold = "prompt-scaffold"
)

// Result describes one compilation.
type Result struct {
	Family       string // "" when nothing identifies one
	FamilySource string // one of the Source* constants, or ""
	// PrefixKey hashes the prompt's stable prefix (the leading system and
	// developer messages; for text prompts the first paragraph when more
	// follows). 0 when there is none.
	PrefixKey   uint64
	CharsBefore int // characters (runes) of all rewritten texts before
	CharsAfter  int
	TokensSaved int // estimated; 0 without a TokenCounter
}

// CharsSaved is CharsBefore - CharsAfter.
func (r Result) CharsSaved() int { return r.CharsBefore - r.CharsAfter }

// Compiler is stateless after construction and safe for concurrent use.
type Compiler struct{ opts Options }

// FromConfig builds the compiler of the RAY_PROMPT_COMPILER_* settings.
func FromConfig(cfg *config.Config, tokens TokenCounter) *Compiler {
	p := cfg.PromptCompiler
	return New(Options{Enabled: p.Enabled, CollapseWhitespace: p.CollapseWhitespace,
		DedupeRepeatedLines: p.DedupeRepeatedLines, FamilyMetadataKeys: p.FamilyMetadataKeys, Tokens: tokens})
}

// New returns a compiler with opts.
func New(opts Options) *Compiler { return &Compiler{opts: opts} }

// Text compiles one text as the compiler would compile a message.
func (c *Compiler) Text(s string) string {
	if !c.opts.Enabled {
		return s
	}
	return c.compileText(s, &textState{})
}

// Chat compiles every message's text in place and reports the family.
func (c *Compiler) Chat(r *openai.ChatRequest) Result {
	var res Result
	if c.opts.Enabled {
		for i := range r.Messages {
			c.compileContent(&r.Messages[i].Content, &res)
		}
	}
	h := fnv.New64a()
	for _, m := range r.Messages {
		if m.Role != "system" && m.Role != "developer" {
			break
		}
		fmt.Fprintf(h, "%s\x00%s\x00", m.Role, m.Content.String())
		res.PrefixKey = nonZero(h.Sum64())
	}
	c.family(&res, r.Metadata, SourceSystem, "sys-")
	return res
}

// Completion compiles the prompt in place (PromptText and the raw Prompt,
// which becomes a JSON string) and reports the family.
func (c *Compiler) Completion(r *openai.CompletionRequest) Result {
	var res Result
	if c.opts.Enabled {
		before := r.PromptText
		after := c.compileText(before, &textState{keepTrailing: true})
		c.count(&res, before, after)
		if after != before {
			r.PromptText = after
			r.Prompt, _ = json.Marshal(after) // a string never fails to marshal
		}
	}
	if head, _, ok := strings.Cut(r.PromptText, "\n\n"); ok && strings.TrimSpace(head) != "" {
		h := fnv.New64a()
		h.Write([]byte(head))
		res.PrefixKey = nonZero(h.Sum64())
	}
	c.family(&res, r.Metadata, SourceScaffold, "pfx-")
	return res
}

func (c *Compiler) compileContent(ct *openai.Content, res *Result) {
	st := &textState{}
	if ct.Parts == nil {
		before := ct.Text
		ct.Text = c.compileText(before, st)
		c.count(res, before, ct.Text)
		return
	}
	for j := range ct.Parts {
		before := ct.Parts[j].Text
		ct.Parts[j].Text = c.compileText(before, st)
		c.count(res, before, ct.Parts[j].Text)
	}
}

func (c *Compiler) count(res *Result, before, after string) {
	res.CharsBefore += utf8.RuneCountInString(before)
	res.CharsAfter += utf8.RuneCountInString(after)
	if c.opts.Tokens != nil && before != after {
		res.TokensSaved += c.opts.Tokens.Count(before) - c.opts.Tokens.Count(after)
	}
}

// family names the family from metadata (first listed key present with a
// non-empty value), else from the prefix hash.
func (c *Compiler) family(res *Result, meta map[string]string, source, prefix string) {
	for _, k := range c.opts.FamilyMetadataKeys {
		if v := meta[k]; v != "" {
			res.Family, res.FamilySource = v, SourceMetadata
			return
		}
	}
	if res.PrefixKey != 0 {
		res.Family, res.FamilySource = fmt.Sprintf("%s%016x", prefix, res.PrefixKey), source
	}
}

func nonZero(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}
