// Package stage owns artifact staging: putting the llama-server binary and
// the GGUF model at their configured targets. Sources are verified (access,
// checksum, GGUF header and metadata, binary startup and launch-flag
// support), copied through a same-directory .ray-stage-* temporary file with
// headroom reserves, checked as the service user, and only then renamed over
// the target, so an interrupted copy never replaces the last good file.
package stage

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/engine/llamacpp"
)

// Post-copy reserves on the target filesystem, before RAY_DEPLOY_MIN_FREE_STORAGE_MIB.
const (
	BinaryReserveMiB = 64
	ModelReserveMiB  = 256
	TempPrefix       = ".ray-stage-"
)

// Kind names an artifact.
type Kind string

// Artifact kinds.
const (
	Binary Kind = "llama-server"
	Model  Kind = "model"
)

// ErrNothingToStage means neither source was given.
var ErrNothingToStage = errors.New("nothing to stage: pass --binary-source and/or --source, or set RAY_LLAMA_CPP_BINARY_SOURCE_PATH / RAY_MODEL_SOURCE_PATH")

// Artifact is one file to stage.
type Artifact struct {
	Kind       Kind
	Source     string // absolute local path
	Target     string // absolute host path
	SHA256     string // expected digest, lower-case hex; "" when none
	ReserveMiB int
}

// Inputs are the staging flags; non-empty values override the env file.
type Inputs struct {
	BinarySource, BinarySHA256 string
	ModelSource, ModelSHA256   string
	WorkDir                    string // resolves relative sources
}

// Plan is what will be staged and checked.
type Plan struct {
	Artifacts  []Artifact
	User       string   // RAY_DEPLOY_SERVICE_USER
	MinFreeMiB int      // RAY_DEPLOY_MIN_FREE_STORAGE_MIB
	Flags      []string // generated launch flags the binary must support
}

// NewPlan resolves sources, checksums and targets; flags win over settings.
func NewPlan(c *config.Config, in Inputs) (Plan, error) {
	pick := func(flag, setting string) string {
		if flag != "" {
			return flag
		}
		return setting
	}
	l := llamacpp.FromConfig(c)
	p := Plan{User: c.Deploy.ServiceUser, MinFreeMiB: c.Deploy.MinFreeStorageMiB, Flags: l.Flags()}
	specs := []struct {
		kind            Kind
		src, sum, tgt   string
		reserve         int
		srcName, sumVar string
	}{
		{Binary, pick(in.BinarySource, c.LlamaCpp.BinarySourcePath), pick(in.BinarySHA256, c.LlamaCpp.BinarySHA256), c.LlamaCpp.BinaryPath, BinaryReserveMiB, "--binary-source", "--binary-sha256"},
		{Model, pick(in.ModelSource, c.Model.SourcePath), pick(in.ModelSHA256, c.Model.SHA256), l.ModelPath, ModelReserveMiB, "--source", "--sha256"},
	}
	for _, s := range specs {
		if s.src == "" {
			if s.sum != "" && s.sum == pickFlag(s.kind, in) {
				return p, fmt.Errorf("%s given without %s", s.sumVar, s.srcName)
			}
			continue
		}
		if !filepath.IsAbs(s.tgt) {
			return p, fmt.Errorf("%s target %q must be an absolute path", s.kind, s.tgt)
		}
		sum := strings.ToLower(strings.TrimSpace(s.sum))
		if sum != "" && !isHex64(sum) {
			return p, fmt.Errorf("%s: expected 64 hexadecimal digits, got %q", s.sumVar, s.sum)
		}
		src := s.src
		if !filepath.IsAbs(src) {
			src = filepath.Join(in.WorkDir, src)
		}
		p.Artifacts = append(p.Artifacts, Artifact{Kind: s.kind, Source: filepath.Clean(src), Target: s.tgt, SHA256: sum, ReserveMiB: s.reserve})
	}
	if len(p.Artifacts) == 0 {
		return p, ErrNothingToStage
	}
	return p, nil
}

func pickFlag(k Kind, in Inputs) string {
	if k == Binary {
		return in.BinarySHA256
	}
	return in.ModelSHA256
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}
