package stage

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/raygw/raygw/internal/ops/shell"
)

// Commands renders the reviewed shell commands that stage every artifact the
// way Apply does: checksum, same-directory temp copy, service-user checks,
// then an atomic rename.
func (p Plan) Commands() string {
	q := shell.Quote
	var b strings.Builder
	b.WriteString("set -euo pipefail\n")
	for _, a := range p.Artifacts {
		dir := filepath.Dir(a.Target)
		fmt.Fprintf(&b, "\n# %s: %s -> %s\n", a.Kind, a.Source, a.Target)
		fmt.Fprintf(&b, "test -r %s\n", q(a.Source))
		if a.SHA256 != "" {
			fmt.Fprintf(&b, "echo %s | sha256sum -c -\n", q(a.SHA256+"  "+a.Source))
		}
		if a.Kind == Model {
			fmt.Fprintf(&b, "test \"$(head -c 4 %s)\" = GGUF\n", q(a.Source))
		}
		fmt.Fprintf(&b, "install -d -m 0755 %s\n", q(dir))
		fmt.Fprintf(&b, "tmp=$(mktemp %s)\n", q(filepath.Join(dir, TempPrefix+filepath.Base(a.Target)+".XXXXXX")))
		b.WriteString("trap 'rm -f -- \"$tmp\"' EXIT\n")
		fmt.Fprintf(&b, "cp -- %s \"$tmp\"\n", q(a.Source))
		if a.SHA256 != "" {
			fmt.Fprintf(&b, "echo \"%s  $tmp\" | sha256sum -c -\n", a.SHA256)
		}
		if a.Kind == Binary {
			b.WriteString("chown root:root \"$tmp\" && chmod 0755 \"$tmp\"\n")
			fmt.Fprintf(&b, "help=$(runuser -u %s -- timeout 20s \"$tmp\" --help)\n", q(p.User))
			fmt.Fprintf(&b, "for f in %s; do printf '%%s\\n' \"$help\" | grep -qE -- \"(^|[[:space:],|])$f([[:space:],=|]|$)\" || { echo \"llama-server lacks $f\" >&2; exit 1; }; done\n", strings.Join(p.Flags, " "))
		} else {
			fmt.Fprintf(&b, "chown root:\"$(id -g %s)\" \"$tmp\" && chmod 0640 \"$tmp\"\n", q(p.User))
			fmt.Fprintf(&b, "runuser -u %s -- test -r \"$tmp\"\n", q(p.User))
		}
		fmt.Fprintf(&b, "mv -f -- \"$tmp\" %s\n", q(a.Target))
		b.WriteString("trap - EXIT\n")
	}
	return b.String()
}
