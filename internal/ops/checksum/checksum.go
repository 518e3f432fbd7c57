// Package checksum computes and compares the SHA-256 digests that model and
// binary staging and downloads verify.
package checksum

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
)

// File returns the lowercase hex SHA-256 of the file at path.
func File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
