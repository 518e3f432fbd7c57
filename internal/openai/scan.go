package openai

import (
	"encoding/json"
	"unicode/utf8"
)

// Small JSON helpers for the request hot path. They work on input that
// encoding/json has already accepted, or fall back to encoding/json, so
// their results are the ones encoding/json would give.

// isSpace reports JSON insignificant whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first non-space byte at or after i.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] == '"',
// or -1 when it does not end.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// ValueEnd returns the index just past the JSON value starting at b[i]
// (which must not be a space): the matching bracket of an object or array,
// the closing quote of a string, the end of a literal or number. It returns
// -1 when an object, array or string does not end. The value is not
// validated: decode b[i:end] to learn whether it is valid.
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				if i = stringEnd(b, i); i < 0 {
					return -1
				}
				i-- // the loop steps past the closing quote
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

// unknownMembers returns the members of the valid JSON object body whose
// names are not in known, as decoding body into a map[string]json.RawMessage
// and deleting the known names would: names unescaped, the last of duplicate
// names kept, values copied without surrounding space, and nil when every
// name is known.
func unknownMembers(body []byte, known map[string]bool) map[string]json.RawMessage {
	var extra map[string]json.RawMessage
	i := SkipSpace(body, 0) + 1 // past '{'
	for {
		i = SkipSpace(body, i)
		switch body[i] {
		case '}':
			return extra
		case ',':
			i = SkipSpace(body, i+1)
		}
		end := stringEnd(body, i)
		name := body[i+1 : end-1]
		var unquoted string
		escaped := false
		for _, c := range name {
			if c == '\\' {
				escaped = true
				break
			}
		}
		if escaped {
			unquoted = unquote(body[i:end])
		}
		i = SkipSpace(body, SkipSpace(body, end)+1) // past ':'
		vend := ValueEnd(body, i)
		val := body[i:vend]
		i = vend
		if escaped {
			if known[unquoted] {
				continue
			}
		} else if known[string(name)] {
			continue
		} else {
			unquoted = string(name)
		}
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		extra[unquoted] = append(json.RawMessage(nil), val...)
	}
}

// unquote decodes a valid JSON string literal.
func unquote(lit []byte) string {
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}

// plainJSONString reports whether json.Marshal writes s as s between two
// quotes: no byte that it escapes (quote, backslash, control characters,
// <, > and & as HTML-safe JSON does, U+2028, U+2029, invalid UTF-8).
func plainJSONString(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		case c >= 0x80:
			ascii = false
		}
	}
	if ascii {
		return true
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += n
	}
	return true
}

// appendJSONString appends s encoded as json.Marshal encodes a string.
func appendJSONString(dst []byte, s string) []byte {
	if plainJSONString(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}

// appendRawJSON appends raw as json.Marshal encodes a json.RawMessage:
// "null" for nil, otherwise compacted with HTML-safe escaping, and an error
// for invalid JSON.
func appendRawJSON(dst []byte, raw json.RawMessage) ([]byte, error) {
	if raw == nil {
		return append(dst, "null"...), nil
	}
	plain := json.Valid(raw)
	for _, c := range raw {
		if isSpace(c) || c == '<' || c == '>' || c == '&' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return append(dst, raw...), nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// plainJSONText reports whether the JSON string literal lit (quotes
// included) decodes to the bytes between its quotes: no escape, no control
// character, valid UTF-8.
func plainJSONText(lit []byte) bool {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return false
	}
	ascii := true
	for _, c := range lit[1 : len(lit)-1] {
		switch {
		case c < 0x20, c == '"', c == '\\':
			return false
		case c >= 0x80:
			ascii = false
		}
	}
	return ascii || utf8.Valid(lit[1:len(lit)-1])
}

// NumberEnd returns the index just past the longest JSON number at b[i],
// where the decoder's scanner ends it, or -1 when b[i:] does not start with
// a complete number (a sign or dot or exponent without digits).
func NumberEnd(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digitsEnd(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digitsEnd(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digitsEnd(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digitsEnd(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
