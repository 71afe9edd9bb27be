package api

import (
	"time"

	"github.com/gin-contrib/cors"
	"github.com/gin-gonic/gin"
)

// CORS lets browser dashboards on the listed origins call the API with
// their own key. Off when Origins is empty (no Access-Control-* header is
// ever sent). A request from a listed origin gets
// Access-Control-Allow-Origin with that origin; a preflight (OPTIONS with
// Access-Control-Request-Method) gets 204 with the allowed methods and
// headers (X-API-Key, If-None-Match, X-Request-ID). ETag, Retry-After,
// RateLimit-* and X-Request-ID are exposed to scripts. A request from any
// other origin is served as if CORS were off: without the headers the
// browser keeps the answer from the page. No credentials: the key travels
// in X-API-Key, never in a cookie.
type CORS struct {
	Origins []string // exact origins, scheme://host[:port]
	// MaxAge is how long a browser may cache a preflight; 0: 10 minutes.
	MaxAge time.Duration
}

func (o CORS) middleware() gin.HandlerFunc {
	allowed := make(map[string]bool, len(o.Origins))
	for _, x := range o.Origins {
		allowed[x] = true
	}
	maxAge := o.MaxAge
	if maxAge == 0 {
		maxAge = 10 * time.Minute
	}
	mw := cors.New(cors.Config{
		AllowOrigins:  o.Origins,
		AllowMethods:  []string{"GET", "HEAD", "OPTIONS"},
		AllowHeaders:  []string{headerAPIKey, "If-None-Match", headerRequestID},
		ExposeHeaders: []string{"ETag", "Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", headerRequestID},
		MaxAge:        maxAge,
	})
	return func(c *gin.Context) {
		// gin-contrib/cors answers 403 to an origin it does not list; an
		// unlisted origin here is served as without CORS instead, so the
		// body is always the spec's.
		if allowed[c.GetHeader("Origin")] {
			mw(c)
		}
	}
}
