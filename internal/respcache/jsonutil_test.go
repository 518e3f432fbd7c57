package respcache

import (
	"bytes"
	"encoding/json"
)

func jsonIndent(dst *bytes.Buffer, src []byte) error { return json.Indent(dst, src, "", "   ") }
