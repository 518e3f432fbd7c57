package ggufsynth

import "fmt"

// llama.cpp token types (llama_token_type).
const (
	tokNormal      = 1
	tokUnknown     = 2
	tokControl     = 3
	tokUserDefined = 4
	tokUnused      = 5
	tokByte        = 6
)

// vocab is a synthetic tokenizer: its GGUF metadata entries.
type vocab struct {
	kvs []kv
}

// spaceSPM is SentencePiece's word-boundary marker.
const spaceSPM = "\u2581"

// spmVocab builds a SentencePiece-style (llama) vocabulary of exactly n
// tokens: <unk>, <s>, </s>, the 256 byte-fallback tokens, then pieces over
// a small alphabet in order of length, scored so shorter pieces merge first.
func spmVocab(n int) (vocab, error) {
	const fixed = 3 + 256
	if n < fixed+30 {
		return vocab{}, fmt.Errorf("%w: vocab %d too small for a SentencePiece vocabulary", ErrShape, n)
	}
	tokens := make([]string, 0, n)
	types := make([]int32, 0, n)
	scores := make([]float32, 0, n)
	add := func(s string, typ int32, score float32) {
		tokens = append(tokens, s)
		types = append(types, typ)
		scores = append(scores, score)
	}
	add("<unk>", tokUnknown, 0)
	add("<s>", tokControl, 0)
	add("</s>", tokControl, 0)
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), tokByte, 0)
	}
	alphabet := []string{spaceSPM}
	for c := 'a'; c <= 'z'; c++ {
		alphabet = append(alphabet, string(c))
	}
	alphabet = append(alphabet, ".", ",", "!", "?")
	words(alphabet, n-len(tokens), func(s string) { add(s, tokNormal, -float32(len(tokens))) })
	return vocab{kvs: []kv{
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.unknown_token_id", uint32(0)},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
	}}, nil
}

// words calls emit for count strings over alphabet: every single symbol,
// then every pair, then every triple, ... (shortest first).
func words(alphabet []string, count int, emit func(string)) {
	level := []string{""}
	for count > 0 {
		var next []string
		for _, prefix := range level {
			for _, a := range alphabet {
				if count == 0 {
					return
				}
				w := prefix + a
				emit(w)
				next = append(next, w)
				count--
			}
		}
		level = next
	}
}

// byteUnicode is GPT-2's bytes_to_unicode: printable bytes map to
// themselves, the others to code points from 256 up.
func byteUnicode() [256]string {
	var m [256]string
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = string(rune(b))
		} else {
			m[b] = string(rune(256 + n))
			n++
		}
	}
	return m
}

// bpeSpecials are the control tokens of the synthetic BPE vocabulary.
var bpeSpecials = []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}

// bpeVocab builds a GPT-2 byte-level BPE vocabulary of exactly n tokens:
// the 256 byte symbols, merged tokens with one merge rule each, the special
// tokens, and [PADi] tokens up to n, as Qwen's converted files have.
func bpeVocab(n int, pre string) (vocab, error) {
	pad := n / 512
	regular := n - len(bpeSpecials) - pad
	if regular < 256+30 {
		return vocab{}, fmt.Errorf("%w: vocab %d too small for a BPE vocabulary", ErrShape, n)
	}
	tokens := make([]string, 0, n)
	types := make([]int32, 0, n)
	merges := make([]string, 0, regular-256)
	bu := byteUnicode()
	for b := range 256 {
		tokens = append(tokens, bu[b])
		types = append(types, tokNormal)
	}
	alphabet := []string{bu[' ']}
	for c := 'a'; c <= 'z'; c++ {
		alphabet = append(alphabet, string(c))
	}
	// Merged tokens: every pair, then triples, ... Each is its prefix (a
	// token already) plus one symbol, so "prefix symbol" is its merge rule.
	level := alphabet
	for len(tokens) < regular {
		var next []string
		for _, prefix := range level {
			for _, a := range alphabet {
				if len(tokens) == regular {
					break
				}
				tokens = append(tokens, prefix+a)
				types = append(types, tokNormal)
				merges = append(merges, prefix+" "+a)
				next = append(next, prefix+a)
			}
		}
		level = next
	}
	eos := uint32(len(tokens))
	for _, s := range bpeSpecials {
		tokens = append(tokens, s)
		types = append(types, tokControl)
	}
	for len(tokens) < n {
		tokens = append(tokens, fmt.Sprintf("[PAD%d]", len(tokens)))
		types = append(types, tokUnused)
	}
	return vocab{kvs: []kv{
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", pre},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.merges", merges},
		{"tokenizer.ggml.bos_token_id", eos},
		{"tokenizer.ggml.eos_token_id", eos},
		{"tokenizer.ggml.padding_token_id", eos},
		{"tokenizer.ggml.add_bos_token", false},
	}}, nil
}
