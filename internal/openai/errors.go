// Package openai owns the OpenAI wire format as raygw speaks it: request
// types with their validation, the error envelope, and Server-Sent Events.
package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Error is an HTTP error with a client-facing OpenAI envelope and an internal
// cause that is logged but never sent.
type Error struct {
	Status  int
	Type    string // invalid_request_error, authentication_error, ...
	Code    string // model_not_found, rate_limit_exceeded, ...
	Param   string
	Message string
	Header  http.Header // extra response headers (Retry-After, WWW-Authenticate)
	Cause   error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%d %s: %s: %v", e.Status, e.Type, e.Message, e.Cause)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message)
}

func (e *Error) Unwrap() error { return e.Cause }

// Envelope is the JSON body of an error response.
type Envelope struct {
	Error EnvelopeBody `json:"error"`
}

// EnvelopeBody is the inner object of Envelope.
type EnvelopeBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// Constructors for the common classes.

// BadRequest is a 400 invalid_request_error about param.
func BadRequest(param, format string, args ...any) *Error {
	return &Error{Status: 400, Type: "invalid_request_error", Param: param, Message: fmt.Sprintf(format, args...)}
}

// NotFound is a 404 with a code such as model_not_found.
func NotFound(code, format string, args ...any) *Error {
	return &Error{Status: 404, Type: "invalid_request_error", Code: code, Message: fmt.Sprintf(format, args...)}
}

// TooLarge is a 413 request_too_large.
func TooLarge(code, format string, args ...any) *Error {
	return &Error{Status: 413, Type: "invalid_request_error", Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unavailable is a 503 with a Retry-After hint in seconds.
func Unavailable(retryAfter int, cause error, format string, args ...any) *Error {
	e := &Error{Status: 503, Type: "server_error", Code: "engine_unavailable", Message: fmt.Sprintf(format, args...), Cause: cause}
	if retryAfter > 0 {
		e.Header = http.Header{"Retry-After": {strconv.Itoa(retryAfter)}}
	}
	return e
}

// Timeout is a 504 upstream timeout.
func Timeout(cause error, format string, args ...any) *Error {
	return &Error{Status: 504, Type: "server_error", Code: "timeout", Message: fmt.Sprintf(format, args...), Cause: cause}
}

// Internal is a 500 whose cause is logged, not shown.
func Internal(cause error) *Error {
	return &Error{Status: 500, Type: "server_error", Code: "internal_error", Message: "internal error", Cause: cause}
}

// AsError converts any error to *Error, treating unknown errors as 500.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal(err)
}

// WriteError renders err as an OpenAI error envelope.
func WriteError(w http.ResponseWriter, err error) {
	e := AsError(err)
	for k, vs := range e.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	body := EnvelopeBody{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		body.Param = &e.Param
	}
	if e.Code != "" {
		body.Code = &e.Code
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(Envelope{Error: body})
}
