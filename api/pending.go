package api

import (
	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/readmodel"
)

// Handlers whose reads land with later issues. They sit behind the key
// check and the quota already and answer 500 NOT_IMPLEMENTED until then.
func (s *server) searchPermits(c *gin.Context) error         { return readmodel.ErrUnsupported }
func (s *server) searchProperty(c *gin.Context) error        { return readmodel.ErrUnsupported }
func (s *server) propertyPermits(c *gin.Context) error       { return readmodel.ErrUnsupported }
func (s *server) catalog(c *gin.Context) error               { return readmodel.ErrUnsupported }
func (s *server) geoSignalsForLocation(c *gin.Context) error { return readmodel.ErrUnsupported }
func (s *server) searchGeoSignals(c *gin.Context) error      { return readmodel.ErrUnsupported }
func (s *server) permitLeads(c *gin.Context) error           { return readmodel.ErrUnsupported }
func (s *server) permitStats(c *gin.Context) error           { return readmodel.ErrUnsupported }
