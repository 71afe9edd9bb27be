// Command floor is the load harness's bare Gin server: it answers each
// recorded URL with the bytes and content type permitd answered, and does
// nothing else, so that a run can say how close permitd comes to what Gin
// and net/http alone cost. It is started by test/load/driver.
//
//	floor -addr 127.0.0.1:0 -recordings file.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/internal/servelines"
)

// Recording is one recorded answer; the driver writes a JSON array of
// them.
type Recording struct {
	URL         string `json:"url"` // path and query, as sent
	ContentType string `json:"content_type"`
	Body        []byte `json:"body"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	file := flag.String("recordings", "", "JSON array of recordings")
	flag.Parse()
	raw, err := os.ReadFile(*file)
	if err != nil {
		log.Fatal(err)
	}
	var recs []Recording
	if err := json.Unmarshal(raw, &recs); err != nil {
		log.Fatal(err)
	}
	byURL := make(map[string]*Recording, len(recs))
	for i := range recs {
		byURL[recs[i].URL] = &recs[i]
	}

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/*path", func(c *gin.Context) {
		rec, ok := byURL[c.Request.RequestURI]
		if !ok {
			c.Status(http.StatusNotFound)
			return
		}
		c.Data(http.StatusOK, rec.ContentType, rec.Body)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%shttp://%s\n", servelines.Serving, ln.Addr())
	log.Fatal(http.Serve(ln, r))
}
