package client

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// Models lists the gateway's local models: installed ones and the
// catalog's.
func (c *Client) Models(ctx context.Context) ([]api.ModelInfo, error) {
	var list []api.ModelInfo
	if err := c.callJSON(ctx, http.MethodGet, api.PathModels, nil, nil, "", &list); err != nil {
		return nil, err
	}
	return list, nil
}

// ModelInfo describes one model, with the details of its file's header
// when it is installed.
func (c *Client) ModelInfo(ctx context.Context, name string) (*api.ModelInfo, error) {
	var info api.ModelInfo
	if err := c.callJSON(ctx, http.MethodGet, api.PathModelInfo, url.Values{"name": {name}}, nil, "", &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// ImportModel registers a GGUF file on the gateway's machine. req.Path must
// be absolute: the gateway, not the caller, opens it.
func (c *Client) ImportModel(ctx context.Context, req api.ImportModelRequest) (*api.ModelInfo, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode import request: %w", err)
	}
	var info api.ModelInfo
	if err := c.callJSON(ctx, http.MethodPost, api.PathModelImport, nil, bytes.NewReader(body), "application/json", &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// RemoveModel unregisters a model (the gateway deletes its file when it
// lies in the models directory) and returns it as it was.
func (c *Client) RemoveModel(ctx context.Context, name string) (*api.ModelInfo, error) {
	var info api.ModelInfo
	if err := c.callJSON(ctx, http.MethodPost, api.PathModelRemove, url.Values{"name": {name}}, nil, "", &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// PullModel has the gateway download a model and follows its progress:
// progress (if not nil) gets the bytes done and the total (-1 when
// unknown) as they arrive. It returns the installed model, the gateway's
// *api.Error, or ErrStreamEnded. Cancelling ctx stops the download; the
// gateway keeps the partial file and a later pull resumes it.
func (c *Client) PullModel(ctx context.Context, req api.PullRequest, progress func(done, total int64)) (*api.ModelInfo, error) {
	resp, err := c.postStream(ctx, api.PathModelPull, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	info, err := readPullStream(resp.Body, progress)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return info, err
}

// readPullStream reads PullEvents until done or error. Events of unknown
// types are skipped, so a newer gateway can add some.
func readPullStream(r io.Reader, progress func(done, total int64)) (*api.ModelInfo, error) {
	sr := &sseReader{r: bufio.NewReaderSize(r, 16<<10)}
	for {
		name, data, err := sr.next()
		if err == io.EOF {
			return nil, ErrStreamEnded
		}
		if err != nil {
			return nil, err
		}
		var ev api.PullEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("gateway sent a malformed %q event: %w", name, err)
		}
		if ev.Type == "" {
			ev.Type = api.PullEventType(name)
		}
		switch ev.Type {
		case api.PullProgress:
			if progress != nil {
				progress(ev.Done, ev.Total)
			}
		case api.PullDone:
			if ev.Model == nil {
				return nil, errors.New("gateway sent a done event without the model")
			}
			return ev.Model, nil
		case api.PullError:
			if ev.Error == nil || ev.Error.Message == "" {
				return nil, &api.Error{Code: api.CodeInternal, Message: "the gateway reported an error without details"}
			}
			return nil, ev.Error
		}
	}
}

// How UploadModel goes on after a dropped connection: at most
// uploadAttempts tries in a row that send nothing, waiting uploadBackoff,
// then twice as long each time up to uploadMaxBackoff (about 20 s in all,
// as SendRetry). Any chunk that gets through starts the count again.
var (
	uploadAttempts   = 8
	uploadBackoff    = 250 * time.Millisecond
	uploadMaxBackoff = 4 * time.Second
)

// UploadModel sends the GGUF file at path (on this machine) to the gateway
// and installs it as name ("": derived from the file name, as an import
// derives it), by the protocol of api.UploadRequest. It hashes the file
// first, then starts the upload or resumes an unfinished one of the same
// file, sends it in api.UploadChunk pieces, and finishes it: the gateway
// checks the sha256 before it installs anything. progress (if not nil)
// gets the bytes the gateway has and the file's size.
//
// A dropped connection or a gateway that restarts is waited for (backoff,
// at most uploadAttempts tries in a row that send nothing), and the upload
// goes on from the offset the gateway reports; a gateway that is not
// running at the start is reported at once. Cancelling ctx stops the
// upload; the gateway keeps what it has for 24 hours, and the same call
// later resumes it.
func (c *Client) UploadModel(ctx context.Context, path, name string, progress func(done, total int64)) (*api.ModelInfo, error) {
	if progress == nil {
		progress = func(int64, int64) {}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("upload %s: not a regular file", path)
	}
	sum, err := hashFile(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("upload: hash %s: %w", path, err)
	}
	req := api.UploadRequest{Name: name, File: filepath.Base(path), Size: fi.Size(), SHA256: sum}
	u := uploader{c: c, f: f, size: fi.Size(), wait: uploadBackoff}
	var st api.UploadStatus
	if err := u.retry(ctx, func() error { return c.postJSON(ctx, api.PathModelUpload, req, &st) }); err != nil {
		return nil, err
	}
	if st.Model != nil {
		progress(req.Size, req.Size)
		return st.Model, nil // installed with this very file already
	}
	u.id = st.ID
	if err := u.send(ctx, st.Offset, progress); err != nil {
		return nil, err
	}
	return u.finish(ctx, sum)
}

// uploader is one UploadModel: the file, the upload and the retry state.
type uploader struct {
	c       *Client
	f       *os.File
	id      string
	size    int64
	tries   int           // failed tries in a row
	reached bool          // some request got through to the gateway
	wait    time.Duration // the next backoff
}

// retry calls call until it succeeds, fails for good, or has failed
// uploadAttempts times in a row. A conflict (another offset) is for the
// caller.
func (u *uploader) retry(ctx context.Context, call func() error) error {
	for {
		err := call()
		if err == nil || isConflict(err) {
			u.reached = true
			return err
		}
		if err := u.failed(ctx, err); err != nil {
			return err
		}
	}
}

// failed counts a failed try (a dropped connection, a conflict) and waits
// before the next; it returns err when there is to be none.
func (u *uploader) failed(ctx context.Context, err error) error {
	down := errors.Is(err, ErrGatewayDown)
	if !(Retriable(err) || isConflict(err)) || (down && !u.reached) {
		return err
	}
	u.reached = u.reached || !down
	u.tries++
	if u.tries > uploadAttempts {
		return fmt.Errorf("upload: gave up after %d tries in a row (run it again to resume): %w", uploadAttempts, err)
	}
	t := time.NewTimer(u.wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	u.wait = min(u.wait*2, uploadMaxBackoff)
	return nil
}

// progressed resets the count of failed tries.
func (u *uploader) progressed() { u.tries, u.wait, u.reached = 0, uploadBackoff, true }

// send PUTs the file from offset on, in chunks, going on from what the
// gateway reports after each one, a conflict or a dropped connection.
func (u *uploader) send(ctx context.Context, offset int64, progress func(done, total int64)) error {
	buf := make([]byte, min(int64(api.UploadChunk), u.size))
	progress(offset, u.size)
	for offset < u.size {
		n := min(int64(len(buf)), u.size-offset)
		if k, err := u.f.ReadAt(buf[:n], offset); err != nil && (k < int(n) || !errors.Is(err, io.EOF)) {
			return fmt.Errorf("upload: read %s: %w", u.f.Name(), err)
		}
		var st api.UploadStatus
		q := url.Values{"offset": {strconv.FormatInt(offset, 10)}}
		err := u.c.callJSON(ctx, http.MethodPut, api.PathModelUpload+"/"+u.id, q, bytes.NewReader(buf[:n]), "application/octet-stream", &st)
		if err == nil {
			if st.Offset > offset {
				u.progressed()
			}
			offset = st.Offset
			progress(offset, u.size)
			continue
		}
		if err := u.failed(ctx, err); err != nil {
			return err
		}
		// Where does the upload stand? (A cut chunk keeps what arrived.)
		if err := u.retry(ctx, func() error {
			return u.c.callJSON(ctx, http.MethodGet, api.PathModelUpload+"/"+u.id, nil, nil, "", &st)
		}); err != nil {
			return err
		}
		if st.Offset > offset {
			u.progressed()
		}
		offset = st.Offset
		progress(offset, u.size)
	}
	return nil
}

// finish has the gateway check and install the file. A connection that
// drops while it does may leave it installed: then the upload is gone
// and the model is there, with this sha256.
func (u *uploader) finish(ctx context.Context, sum string) (*api.ModelInfo, error) {
	var info api.ModelInfo
	q := url.Values{"id": {u.id}}
	retried := false
	err := u.retry(ctx, func() error {
		err := u.c.callJSON(ctx, http.MethodPost, api.PathModelUploadFinish, q, nil, "", &info)
		retried = retried || err != nil
		return err
	})
	var ae *api.Error
	if err != nil && retried && errors.As(err, &ae) && ae.Code == api.CodeNotFound {
		if list, lerr := u.c.Models(ctx); lerr == nil {
			for _, m := range list {
				if m.Installed && m.SHA256 == sum {
					return &m, nil
				}
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return &info, nil
}

// isConflict is a 409: the gateway holds another offset, or another
// request is on the upload.
func isConflict(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == api.CodeConflict
}

// hashFile is the sha256 of f (from its start) in hex; ctx stops it.
func hashFile(ctx context.Context, f *os.File) (string, error) {
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for off := int64(0); ; {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := f.ReadAt(buf, off)
		h.Write(buf[:n])
		off += int64(n)
		if errors.Is(err, io.EOF) {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		if err != nil {
			return "", err
		}
	}
}
