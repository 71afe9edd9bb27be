package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

func (s *server) live(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

type readyBody struct {
	Status string                    `json:"status"`
	Checks map[string]map[string]any `json:"checks"`
	Clock  readyClock                `json:"clock"`
}

type readyClock struct {
	Today  string `json:"today"`
	Now    string `json:"now"`
	Source string `json:"source"`
}

// ready is 200 when every check passes (the read model answers and the
// indexer has applied at least one batch and caught up), else 503.
func (s *server) ready(c *gin.Context) {
	body := readyBody{
		Status: "ready",
		Checks: map[string]map[string]any{},
		Clock: readyClock{
			Today:  s.today().Format(time.DateOnly),
			Now:    s.Now().UTC().Format(time.RFC3339),
			Source: s.ClockSource,
		},
	}
	for _, check := range s.Checks {
		ch := check(c.Request.Context())
		d := map[string]any{"status": "ok"}
		if !ch.OK {
			d["status"] = "not_ready"
			body.Status = "not_ready"
		}
		for k, v := range ch.Detail {
			d[k] = v
		}
		body.Checks[ch.Name] = d
	}
	status := http.StatusOK
	if body.Status != "ready" {
		status = http.StatusServiceUnavailable
	}
	c.JSON(status, body)
}
