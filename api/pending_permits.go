package api

import (
	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/readmodel"
)

// Placeholders until the permit reads land (issue 3): they sit behind the
// key check and quota and answer 500 NOT_IMPLEMENTED. Replace this file.
func (s *server) searchPermits(c *gin.Context) error   { return readmodel.ErrUnsupported }
func (s *server) searchProperty(c *gin.Context) error  { return readmodel.ErrUnsupported }
func (s *server) propertyPermits(c *gin.Context) error { return readmodel.ErrUnsupported }
