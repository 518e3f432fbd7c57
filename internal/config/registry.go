package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Setting describes one RAY_* variable.
type Setting struct {
	Name   string // RAY_* variable name
	Doc    string // one-line meaning
	Kind   string // string, int, float, bool or list
	Secret bool   // masked when printed
	index  []int  // field path inside Config
}

var registry = buildRegistry()

// Settings returns every recognised RAY_* setting, sorted by name.
func Settings() []Setting {
	out := make([]Setting, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Known reports whether name is a recognised RAY_* setting.
func Known(name string) bool { _, ok := registry[name]; return ok }

func buildRegistry() map[string]Setting {
	out := map[string]Setting{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			idx := append(append([]int{}, prefix...), i)
			name, ok := f.Tag.Lookup("env")
			if !ok {
				if f.Type.Kind() == reflect.Struct {
					walk(f.Type, idx)
				}
				continue
			}
			out[name] = Setting{Name: name, Doc: f.Tag.Get("doc"), Kind: kindOf(f.Type),
				Secret: f.Tag.Get("secret") == "true", index: idx}
		}
	}
	walk(reflect.TypeOf(Config{}), nil)
	return out
}

func kindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int64:
		return "int"
	case reflect.Float64:
		return "float"
	case reflect.Bool:
		return "bool"
	case reflect.Slice:
		return "list"
	}
	panic("config: unsupported field type " + t.String())
}

// set parses raw into the field for s, naming the variable in any error.
func (c *Config) set(s Setting, raw string) error {
	v := reflect.ValueOf(c).Elem().FieldByIndex(s.index)
	raw = strings.TrimSpace(raw)
	switch v.Kind() {
	case reflect.String:
		v.SetString(raw)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: expected a whole number, got %q", s.Name, raw)
		}
		if v.OverflowInt(n) {
			return fmt.Errorf("%s: %d is out of range", s.Name, n)
		}
		v.SetInt(n)
	case reflect.Float64:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return fmt.Errorf("%s: expected a number, got %q", s.Name, raw)
		}
		v.SetFloat(f)
	case reflect.Bool:
		b, err := parseBool(raw)
		if err != nil {
			return fmt.Errorf("%s: expected true or false, got %q", s.Name, raw)
		}
		v.SetBool(b)
	case reflect.Slice:
		v.Set(reflect.ValueOf(splitList(raw)))
	}
	return nil
}

// get renders the field for s back to its variable form.
func (c *Config) get(s Setting) string {
	v := reflect.ValueOf(c).Elem().FieldByIndex(s.index)
	switch v.Kind() {
	case reflect.Slice:
		return strings.Join(v.Interface().([]string), ",")
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return fmt.Sprint(v.Interface())
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean")
}

func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
