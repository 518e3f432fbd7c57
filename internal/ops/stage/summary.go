package stage

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/raygw/raygw/internal/ops/gguf"
	"github.com/raygw/raygw/internal/ops/hostfs"
)

// WriteSummary explains the plan: each artifact's source, target, size,
// checksum, GGUF metadata and target headroom, then the service user and
// the launch flags that will be probed.
func WriteSummary(w io.Writer, p Plan, h *hostfs.Host) {
	for _, a := range p.Artifacts {
		fmt.Fprintf(w, "# %s\n#   source  %s\n#   target  %s\n", a.Kind, a.Source, a.Target)
		size := int64(0)
		if fi, err := os.Stat(a.Source); err != nil {
			fmt.Fprintf(w, "#   source  not readable here: %v\n", err)
		} else {
			size = fi.Size()
			fmt.Fprintf(w, "#   size    %d bytes\n", size)
		}
		if a.SHA256 != "" {
			fmt.Fprintf(w, "#   sha256  %s (verified on the source and on the copy)\n", a.SHA256)
		} else {
			fmt.Fprintf(w, "#   sha256  none given (--sha256 / --binary-sha256 recommended)\n")
		}
		if a.Kind == Model && size > 0 {
			if m, err := gguf.Open(a.Source); err != nil {
				fmt.Fprintf(w, "#   gguf    %v\n", err)
			} else {
				fmt.Fprintf(w, "#   gguf    %s\n", m.Info)
			}
		}
		if h != nil {
			if u, measured, err := h.Usage(filepath.Dir(a.Target)); err == nil {
				keep := max(a.ReserveMiB, p.MinFreeMiB)
				fmt.Fprintf(w, "#   space   %s: %d MiB free; needs %d MiB for the copy plus %d MiB kept free\n",
					measured, u.AvailMiB(), (size+(1<<20-1))>>20, keep)
			}
		}
	}
	fmt.Fprintf(w, "# service user %s: executes the binary, reads the model, runs llama-server --help\n", p.User)
	fmt.Fprintf(w, "# launch flags checked: %d\n", len(p.Flags))
}
