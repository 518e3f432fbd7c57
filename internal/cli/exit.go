package cli

import "errors"

// ExitError carries a specific exit code (doctor's worst result, say).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode returns the process exit code.
func (e *ExitError) ExitCode() int { return e.Code }

func asExit(err error, target *interface{ ExitCode() int }) bool {
	var ee *ExitError
	if errors.As(err, &ee) {
		*target = ee
		return true
	}
	return false
}
