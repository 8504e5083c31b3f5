package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/PaulSonOfLars/gotgbot/v2"
)

// maxResponse bounds a Bot API answer read into memory: a getUpdates of
// 100 updates of 4,096 characters with their entities is well under it.
const maxResponse = 16 << 20

// client is gotgbot's BotClient over our own http.Client, so that:
//   - the token never leaves in an error: net/http's errors quote the
//     request URL, which holds it ("…/bot123:ABC/getUpdates");
//   - an answer is read up to maxResponse, never without bound;
//   - each call has a deadline (the long poll's is its timeout plus a
//     margin), and ctx cancels it (Stop, or the gateway stopping).
type client struct {
	http    *http.Client
	root    string // the apiRoot, without a trailing "/"
	timeout time.Duration
}

var _ gotgbot.BotClient = (*client)(nil)

func (c *client) GetAPIURL(*gotgbot.RequestOpts) string { return c.root }

func (c *client) FileURL(token, path string, _ *gotgbot.RequestOpts) string {
	return c.root + "/file/bot" + token + "/" + path
}

// RequestWithContext posts one method call: JSON, or multipart when files
// go with it (gotgbot's wire format: every parameter a string).
func (c *client) RequestWithContext(ctx context.Context, token, method string, params map[string]string, data map[string]gotgbot.FileReader, opts *gotgbot.RequestOpts) (json.RawMessage, error) {
	timeout := c.timeout
	if opts != nil && opts.Timeout > 0 {
		timeout = opts.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	ctype := "application/json"
	if len(data) > 0 {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for k, v := range params {
			if err := mw.WriteField(k, v); err != nil {
				return nil, fmt.Errorf("telegram %s: %w", method, err)
			}
		}
		for field, f := range data {
			name := f.Name
			if name == "" {
				name = field
			}
			w, err := mw.CreateFormFile(field, name)
			if err != nil {
				return nil, fmt.Errorf("telegram %s: %w", method, err)
			}
			if _, err := io.Copy(w, f.Data); err != nil {
				return nil, fmt.Errorf("telegram %s: read the attachment: %w", method, err)
			}
		}
		if err := mw.Close(); err != nil {
			return nil, fmt.Errorf("telegram %s: %w", method, err)
		}
		body, ctype = &buf, mw.FormDataContentType()
	} else {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("telegram %s: %w", method, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.root+"/bot"+token+"/"+method, body)
	if err != nil {
		return nil, fmt.Errorf("telegram %s: %s", method, redact(err, token))
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &netError{method: method, err: unwrapURL(err), msg: redact(err, token)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, &netError{method: method, err: err, msg: redact(err, token)}
	}
	if len(raw) > maxResponse {
		return nil, fmt.Errorf("telegram %s: the answer is larger than %d MiB", method, maxResponse>>20)
	}
	var r gotgbot.Response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("telegram %s: not a Bot API answer (HTTP %d): %w", method, resp.StatusCode, err)
	}
	if !r.Ok {
		return nil, &gotgbot.TelegramError{Method: method, Code: r.ErrorCode, Description: strings.ReplaceAll(r.Description, token, "<token>"), ResponseParams: r.Parameters}
	}
	return r.Result, nil
}

// download GETs a file the Bot API serves (getFile's file_path), at most
// limit bytes, into w; more is an error (errTooLarge).
func (c *client) download(ctx context.Context, token, path string, limit int64, w io.Writer) (int64, error) {
	// file_path comes from the server: each segment escaped, and no ".."
	// walking out of the token's directory.
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if s == "" || s == "." || s == ".." {
			return 0, fmt.Errorf("telegram file path %q is not a file's", path)
		}
		segs[i] = url.PathEscape(s)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.FileURL(token, strings.Join(segs, "/"), nil), nil)
	if err != nil {
		return 0, fmt.Errorf("telegram file: %s", redact(err, token))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, &netError{method: "file", err: unwrapURL(err), msg: redact(err, token)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("telegram file: HTTP %d", resp.StatusCode)
	}
	if resp.ContentLength > limit {
		return 0, errTooLarge
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return n, fmt.Errorf("telegram file: %s", redact(err, token))
	}
	if n > limit {
		return n, errTooLarge
	}
	return n, nil
}

var errTooLarge = errors.New("larger than mediaMaxMb")

// netError is a failed round trip (the network, not the API): retried.
type netError struct {
	method string
	err    error
	msg    string
}

func (e *netError) Error() string { return "telegram " + e.method + ": " + e.msg }
func (e *netError) Unwrap() error { return e.err }

// unwrapURL drops *url.Error, whose text holds the URL and so the token.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redact is err's text without the token.
func redact(err error, token string) string {
	s := err.Error()
	if token != "" {
		s = strings.ReplaceAll(s, token, "<token>")
	}
	return s
}

// apiError is err's Bot API error, if it is one.
func apiError(err error) (*gotgbot.TelegramError, bool) {
	var te *gotgbot.TelegramError
	ok := errors.As(err, &te)
	return te, ok
}

// retryAfter is the wait a 429 asks for (0: not a 429).
func retryAfter(err error) time.Duration {
	te, ok := apiError(err)
	if !ok || te.Code != http.StatusTooManyRequests {
		return 0
	}
	if te.ResponseParams != nil && te.ResponseParams.RetryAfter > 0 {
		return time.Duration(min(te.ResponseParams.RetryAfter, 3600)) * time.Second
	}
	return 5 * time.Second
}
