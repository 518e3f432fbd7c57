package openai

import (
	"reflect"
	"strings"
)

// collectFields records the JSON names of v's fields, embedded ones included.
func collectFields(v any, out map[string]bool) {
	t := reflect.TypeOf(v)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			collectFields(reflect.New(f.Type).Elem().Interface(), out)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
}
