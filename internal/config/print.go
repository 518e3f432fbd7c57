package config

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// Resolved is one setting's value and where it came from, as printed.
type Resolved struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// Resolved lists every setting with its (secret-masked) value and source.
func (l *Loaded) Resolved() []Resolved {
	out := make([]Resolved, 0, len(registry))
	for _, s := range Settings() {
		v := l.get(s)
		if s.Secret && v != "" {
			v = "****"
		}
		out = append(out, Resolved{Name: s.Name, Value: v, Source: l.Sources[s.Name]})
	}
	return out
}

// Print writes the resolved configuration as a table or JSON.
func (l *Loaded) Print(w io.Writer, asJSON bool) error {
	rows := l.Resolved()
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tSOURCE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Value, r.Source)
	}
	return tw.Flush()
}
