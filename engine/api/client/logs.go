package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/openclaw-edge/edge/engine/api"
)

// Logs copies the gateway's last lines of log to w and, with follow, every
// line logged after them until ctx ends (then it returns ctx.Err()) or the
// gateway stops. lines < 0 asks for the gateway's default.
func (c *Client) Logs(ctx context.Context, lines int, follow bool, w io.Writer) error {
	q := url.Values{}
	if lines >= 0 {
		q.Set("lines", strconv.Itoa(lines))
	}
	if follow {
		q.Set("follow", "1")
	}
	resp, err := c.do(ctx, http.MethodGet, api.PathLogs, q, nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	ew := &errWriter{w: w}
	if _, err := io.Copy(ew, resp.Body); err != nil {
		switch {
		case ew.err != nil:
			return fmt.Errorf("write the gateway's log: %w", ew.err)
		case ctx.Err() != nil:
			return ctx.Err()
		}
		return fmt.Errorf("read the gateway's log: %w: %w", ErrConnectionLost, err)
	}
	return nil
}

// errWriter remembers its writer's error, so a copy can tell it from the
// reader's.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}
