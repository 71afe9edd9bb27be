package api

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"
)

// defaultRequestTimeout bounds a business request when Deps leaves it 0.
const defaultRequestTimeout = 10 * time.Second

// withDeadline bounds everything a business request waits on (the read
// model's retries included): past d the read fails with
// context.DeadlineExceeded, which the error mapper answers 503
// BACKEND_UNAVAILABLE with Retry-After, never a hang.
//
// A streaming handler (the export) bounds each of its reads instead of the
// whole response: it finds the context without the deadline under
// ctxStream (streamContext).
func withDeadline(d time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Set(ctxStream, c.Request.Context())
		ctx, cancel := context.WithTimeout(c.Request.Context(), d)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

// ctxStream holds the request's context as it was before withDeadline.
const ctxStream = "permitd.stream_ctx"

// streamContext is the request's context without the business request
// deadline (still cancelled when the client goes away), for a handler
// that streams for longer than one request may take and bounds each read
// itself.
func streamContext(c *gin.Context) context.Context {
	if v, ok := c.Get(ctxStream); ok {
		if ctx, ok := v.(context.Context); ok {
			return ctx
		}
	}
	return c.Request.Context()
}
