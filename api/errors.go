package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/api/internal/cursor"
	"github.com/permitd/permitd/readmodel"
)

// Error codes of the standard error body.
const (
	CodeValidation  = "VALIDATION_ERROR"
	CodeNotFound    = "NOT_FOUND"
	CodeInternal    = "INTERNAL"
	CodeUnavailable = "BACKEND_UNAVAILABLE"
	CodeUnsupported = "NOT_IMPLEMENTED"
	// CodeKeyStoreUnavailable: 503, the store of issued API keys could
	// not answer, so the key could not be checked.
	CodeKeyStoreUnavailable = "KEY_STORE_UNAVAILABLE"
	// CodeMethodNotAllowed: 405, with the Allow header.
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
)

// retryAfterUnavailable is the Retry-After (seconds) of a 503: about the
// time a replica takes to notice that a dependency is back.
const retryAfterUnavailable = "2"

// ValidationError is a bad input; it always names the parameter.
type ValidationError struct {
	Param string
	Msg   string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid parameter %q: %s", e.Param, e.Msg)
}

func invalid(param, format string, args ...any) error {
	return &ValidationError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

// notFound is a 404 with a message naming what was not found.
type notFound struct{ what string }

func (e notFound) Error() string { return e.what + " not found" }
func (e notFound) Unwrap() error { return readmodel.ErrNotFound }

// writeError is the one error mapper: validation -> 422, not found -> 404,
// backend unavailable -> 503 BACKEND_UNAVAILABLE with Retry-After,
// anything else -> a generic 500 whose detail is only logged.
func writeError(c *gin.Context, log *slog.Logger, err error) {
	var ve *ValidationError
	var nf notFound
	status, code, msg := http.StatusInternalServerError, CodeInternal, "internal server error"
	switch {
	case errors.Is(err, cursor.ErrInvalid):
		status, code, msg = http.StatusUnprocessableEntity, CodeValidation, fmt.Sprintf("invalid parameter %q: %v", "cursor", err)
	case errors.As(err, &ve):
		status, code, msg = http.StatusUnprocessableEntity, CodeValidation, ve.Error()
	case errors.As(err, &nf):
		status, code, msg = http.StatusNotFound, CodeNotFound, nf.Error()
	case errors.Is(err, readmodel.ErrNotFound):
		status, code, msg = http.StatusNotFound, CodeNotFound, "resource not found"
	case errors.Is(err, readmodel.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		status, code, msg = http.StatusServiceUnavailable, CodeUnavailable, "the read model is unavailable; retry after the Retry-After delay"
		c.Header("Retry-After", retryAfterUnavailable)
	case errors.Is(err, readmodel.ErrUnsupported):
		code, msg = CodeUnsupported, "this read is not implemented by the configured backend"
	}
	rid := requestID(c)
	switch status {
	case http.StatusServiceUnavailable:
		log.Warn("read model unavailable", "request_id", rid, "path", c.FullPath(), "err", err)
	case http.StatusInternalServerError:
		log.Error("request failed", "request_id", rid, "path", c.FullPath(), "err", err)
	}
	buf := getBuf()
	*buf = appendErrorBody(*buf, code, msg, rid)
	writeBody(c, status, *buf)
	putBuf(buf)
}

func writeGateway(c *gin.Context, status int, msg string) {
	buf := getBuf()
	*buf = appendGatewayBody(*buf, msg)
	writeBody(c, status, *buf)
	putBuf(buf)
}
