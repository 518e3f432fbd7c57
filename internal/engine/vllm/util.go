package vllm

import (
	"bytes"
	"errors"
	"io"
	"syscall"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// isNotDir reports a model path that is a file (a GGUF), not a directory.
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
