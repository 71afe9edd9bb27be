package api

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"
)

// defaultRequestTimeout bounds a business request when Params leaves it 0.
const defaultRequestTimeout = 10 * time.Second

// withDeadline bounds everything a business request waits on (the read
// model's retries included): past d the read fails with
// context.DeadlineExceeded, which the error mapper answers 503
// BACKEND_UNAVAILABLE with Retry-After, never a hang.
// A streaming route (the export) is registered outside it and bounds
// each of its reads instead (routes.go).
func withDeadline(d time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), d)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}
