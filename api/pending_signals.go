package api

import (
	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/readmodel"
)

// Placeholders until the signal reads land (issue 4): they sit behind the
// key check and quota and answer 500 NOT_IMPLEMENTED. Replace this file.
func (s *server) catalog(c *gin.Context) error               { return readmodel.ErrUnsupported }
func (s *server) geoSignalsForLocation(c *gin.Context) error { return readmodel.ErrUnsupported }
func (s *server) searchGeoSignals(c *gin.Context) error      { return readmodel.ErrUnsupported }
func (s *server) permitLeads(c *gin.Context) error           { return readmodel.ErrUnsupported }
func (s *server) permitStats(c *gin.Context) error           { return readmodel.ErrUnsupported }
