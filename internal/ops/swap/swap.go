// Package swap owns the swap plan for small VPSes: a guarded bash script that
// creates a swap file through a same-directory temporary path (removed on any
// failure), keeps a free-space cushion on its filesystem, and persists
// vm.swappiness in /etc/sysctl.d.
package swap

import (
	"fmt"
	"path"
	"strings"

	"github.com/raygw/raygw/internal/ops/shell"
)

// Defaults of the plan.
const (
	DefaultSizeMiB      = 1024
	DefaultMinFreeAfter = 512
	DefaultSwappiness   = 10
	DefaultSwapFile     = "/swapfile"
	SysctlFile          = "/etc/sysctl.d/99-raygw-swappiness.conf"
)

// Plan describes the script to render.
type Plan struct {
	SwapFile        string // host path of the swap file
	SizeMiB         int
	MinFreeAfterMiB int
	Swappiness      int
	SysctlOnly      bool
	Root            string // prefix for every host path (a fake root in tests); "" for /
}

// Validate checks the plan's numbers and paths.
func (p Plan) Validate() error {
	switch {
	case p.Swappiness < 0 || p.Swappiness > 200:
		return fmt.Errorf("--swappiness: must be 0-200, got %d", p.Swappiness)
	case p.SysctlOnly:
		return nil
	case p.SizeMiB < 1:
		return fmt.Errorf("--size-mib: must be at least 1, got %d", p.SizeMiB)
	case p.MinFreeAfterMiB < 0:
		return fmt.Errorf("--min-free-after-mib: must not be negative, got %d", p.MinFreeAfterMiB)
	case !path.IsAbs(p.SwapFile) || path.Clean(p.SwapFile) == "/":
		return fmt.Errorf("--swap-file: expected an absolute file path, got %q", p.SwapFile)
	}
	return nil
}

// Script renders the plan as a bash script.
func (p Plan) Script() (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	root := strings.TrimSuffix(p.Root, "/")
	var b strings.Builder
	b.WriteString("#!/usr/bin/env bash\n")
	if p.SysctlOnly {
		fmt.Fprintf(&b, "# raygw swap-plan: persist and apply vm.swappiness=%d only.\n", p.Swappiness)
	} else {
		fmt.Fprintf(&b, "# raygw swap-plan: a %d MiB swap file at %s keeping %d MiB free on its\n# filesystem, and vm.swappiness=%d. Review, then run as root.\n",
			p.SizeMiB, p.SwapFile, p.MinFreeAfterMiB, p.Swappiness)
	}
	b.WriteString("set -euo pipefail\n")
	b.WriteString("if [ \"$(id -u)\" -ne 0 ]; then echo 'swap-plan: run as root' >&2; exit 1; fi\n")
	fmt.Fprintf(&b, "swappiness=%d\n", p.Swappiness)
	fmt.Fprintf(&b, "sysctl_file=%s\n", shell.Quote(root+SysctlFile))
	if !p.SysctlOnly {
		fmt.Fprintf(&b, "swapfile=%s\nsize_mib=%d\nmin_free_after_mib=%d\n", shell.Quote(root+path.Clean(p.SwapFile)), p.SizeMiB, p.MinFreeAfterMiB)
		fmt.Fprintf(&b, "fstab=%s\n", shell.Quote(root+"/etc/fstab"))
		b.WriteString(swapBody)
	}
	b.WriteString(sysctlBody)
	return b.String(), nil
}

const swapBody = `
if swapon --show=NAME --noheadings | grep -qxF -- "$swapfile"; then
  echo "swap-plan: $swapfile is already active swap; leaving it"
else
  if [ -e "$swapfile" ]; then
    echo "swap-plan: $swapfile exists but is not active swap; inspect or remove it first" >&2
    exit 1
  fi
  dir=$(dirname -- "$swapfile")
  avail_mib=$(( $(df -P -k -- "$dir" | awk 'NR==2 {print $4}') / 1024 ))
  need_mib=$(( size_mib + min_free_after_mib ))
  if [ "$avail_mib" -lt "$need_mib" ]; then
    echo "swap-plan: $dir has ${avail_mib} MiB free; a ${size_mib} MiB swap file plus the ${min_free_after_mib} MiB cushion needs ${need_mib} MiB" >&2
    exit 1
  fi
  tmp=$(mktemp -- "$dir/.ray-swap.XXXXXX")
  # Never strand a half-made swap file on a small disk.
  trap 'swapoff -- "$tmp" 2>/dev/null || true; rm -f -- "$tmp"' EXIT
  chmod 0600 -- "$tmp"
  if ! fallocate -l "${size_mib}MiB" -- "$tmp" 2>/dev/null; then
    dd if=/dev/zero of="$tmp" bs=1M count="$size_mib" status=none
  fi
  mkswap -- "$tmp" >/dev/null
  mv -- "$tmp" "$swapfile"
  trap 'swapoff -- "$swapfile" 2>/dev/null || true; rm -f -- "$swapfile"' EXIT
  swapon -- "$swapfile"
  if ! grep -qsE "^[[:space:]]*$swapfile[[:space:]]" "$fstab"; then
    printf '%s none swap sw 0 0\n' "$swapfile" >> "$fstab"
  fi
  trap - EXIT
  echo "swap-plan: $swapfile active (${size_mib} MiB)"
fi
`

const sysctlBody = `
mkdir -p -- "$(dirname -- "$sysctl_file")"
sysctl_tmp=$(mktemp -- "$sysctl_file.XXXXXX")
trap 'rm -f -- "$sysctl_tmp"' EXIT
printf '# written by raygw swap-plan\nvm.swappiness=%s\n' "$swappiness" > "$sysctl_tmp"
chmod 0644 -- "$sysctl_tmp"
mv -- "$sysctl_tmp" "$sysctl_file"
trap - EXIT
sysctl -q -w "vm.swappiness=$swappiness"
echo "swap-plan: vm.swappiness=$swappiness persisted in $sysctl_file"
`
