package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// huggingFace is the prefix of catalog URLs that Config.BaseURL replaces.
const huggingFace = "https://huggingface.co"

// userAgent identifies downloads.
const userAgent = "openclaw-edge (model pull)"

// PartSuffix ends the name of a download in progress.
const PartSuffix = ".part"

// ResumeSuffix ends the name of the file beside a .part that keeps the
// validators (ETag, Last-Modified) of the response that started it: a
// resume sends them as If-Range, so a file that changed on the server
// restarts from zero instead of being spliced onto the old bytes.
const ResumeSuffix = ".part.json"

// Pull installs ref — a catalog name, or an https URL of a GGUF file — and
// returns its entry; see PullAs.
func (r *Registry) Pull(ctx context.Context, ref string, progress func(done, total int64)) (Entry, error) {
	return r.PullAs(ctx, ref, "", progress)
}

// PullAs downloads ref — a catalog name or an https URL of a GGUF file —
// into the models directory and registers it as name (default: the catalog
// name, or a name derived from the URL's file name). progress, when not
// nil, is called as bytes arrive with the bytes on disk and the total (-1
// when the server does not say).
//
// The download goes to <file>.part and resumes it when it exists. The
// sha256 is checked when the catalog knows it (a mismatch deletes the .part);
// the file must be a valid, complete GGUF model (else the .part is
// deleted). A model already installed under name is returned as it is.
func (r *Registry) PullAs(ctx context.Context, ref, name string, progress func(done, total int64)) (Entry, error) {
	src, err := r.source(ref, name)
	if err != nil {
		return Entry{}, err
	}
	if prev, ok := r.Get(src.name); ok {
		if _, err := os.Stat(prev.Path); err == nil {
			return prev, nil
		}
		// A registered file that vanished is downloaded again.
	}
	dest := filepath.Join(r.dir, src.file)
	release, err := r.reserve("name:"+src.name, "file:"+dest)
	if err != nil {
		return Entry{}, err
	}
	defer release()

	sum, err := r.fetch(ctx, src, dest, progress)
	if err != nil {
		return Entry{}, err
	}
	e, err := inspect(dest)
	if err != nil {
		return Entry{}, fmt.Errorf("%w (it stays at %s: remove it by hand)", err, dest)
	}
	e.Name, e.SHA256, e.URL, e.AddedAt = src.name, sum, src.url, r.cfg.Now().UTC()
	e.Source = src.url
	if src.model != nil {
		e.Source = SourceCatalog
		e.Verified = src.model.SHA256 != ""
	}
	if !e.Verified {
		_, e.Verified = r.matchHash(sum)
	}
	if err := r.add(e, false); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// pullSource is what to download and under which names.
type pullSource struct {
	name  string
	file  string
	url   string
	model *Model // the catalog entry, when ref named one
}

func (r *Registry) source(ref, name string) (pullSource, error) {
	if ref == "" {
		return pullSource{}, invalidf("pull: no model given")
	}
	if name != "" {
		if err := ValidName(name); err != nil {
			return pullSource{}, err
		}
	}
	if !strings.Contains(ref, "://") {
		m, ok := r.Lookup(ref)
		if !ok {
			return pullSource{}, invalidf("pull: %q is not in the catalog (see \"openclaw models list\"); pull an https URL of a GGUF file instead, or import a local file", ref)
		}
		u := m.URL
		if r.cfg.BaseURL != "" && strings.HasPrefix(u, huggingFace+"/") {
			u = strings.TrimSuffix(r.cfg.BaseURL, "/") + strings.TrimPrefix(u, huggingFace)
		}
		if name == "" {
			name = m.Name
		}
		return pullSource{name: name, file: m.File, url: u, model: &m}, nil
	}
	u, err := url.Parse(ref)
	if err != nil {
		return pullSource{}, invalidf("pull: bad URL: %w", err)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && isLoopback(u.Hostname()):
	case u.Scheme == "http":
		return pullSource{}, invalidf("pull %s: refusing plain http (the download could be tampered with): use https", ref)
	default:
		return pullSource{}, invalidf("pull %s: only https URLs are supported", ref)
	}
	if u.User != nil {
		return pullSource{}, invalidf("pull: URLs with credentials are not supported")
	}
	file := path.Base(u.Path)
	if strings.Contains(u.Path, "/blob/") {
		return pullSource{}, invalidf("pull %s: this is a web page; use the download URL (…/resolve/main/%s)", ref, file)
	}
	if !validFile(file) {
		return pullSource{}, invalidf("pull %s: the URL does not end with a file name (want …/NAME.gguf)", ref)
	}
	for _, m := range r.catalog {
		if m.URL == ref {
			if name == "" {
				name = m.Name
			}
			return pullSource{name: name, file: m.File, url: ref, model: &m}, nil
		}
	}
	if name == "" {
		if name = NameFromFile(file); name == "" {
			return pullSource{}, invalidf("pull %s: cannot derive a model name from %q: give one", ref, file)
		}
	}
	return pullSource{name: name, file: file, url: ref}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fetch leaves the complete, checked file at dest and returns its sha256.
// A complete file already at dest (a pull that stopped before registering)
// is checked and kept.
func (r *Registry) fetch(ctx context.Context, src pullSource, dest string, progress func(done, total int64)) (string, error) {
	want := ""
	if src.model != nil {
		want = src.model.SHA256
	}
	if fi, err := os.Stat(dest); err == nil && fi.Mode().IsRegular() {
		if _, err := inspect(dest); err != nil {
			return "", fmt.Errorf("%s already exists and is not a usable model (%v): delete it and pull again", dest, err)
		}
		sum, err := hashFile(dest)
		if err != nil {
			return "", err
		}
		if want != "" && sum != want {
			return "", fmt.Errorf("%s already exists with sha256 %s, not the catalog's %s: delete it and pull again", dest, sum, want)
		}
		return sum, nil
	}
	part := dest + PartSuffix
	sum, err := r.download(ctx, src.url, part, progress)
	if err != nil {
		return "", err
	}
	if want != "" && sum != want {
		removePart(part)
		return "", fmt.Errorf("checksum mismatch for %s: downloaded sha256 %s, the catalog says %s; the download was deleted: pull again, and if it repeats the catalog entry or the server is wrong",
			src.name, sum, want)
	}
	if _, err := inspect(part); err != nil {
		removePart(part)
		return "", fmt.Errorf("downloaded %s but it is not a usable model, so it was deleted: %w", src.url, err)
	}
	if err := os.Rename(part, dest); err != nil {
		return "", fmt.Errorf("install %s: %w", dest, err)
	}
	os.Remove(resumeFile(part)) // done with; a leftover is only replaced
	return sum, syncDir(r.dir)
}

// resumeFile is the validators file of a .part.
func resumeFile(part string) string { return strings.TrimSuffix(part, PartSuffix) + ResumeSuffix }

// removePart deletes a download in progress and its validators.
func removePart(part string) {
	os.Remove(part)
	os.Remove(resumeFile(part))
}

// download fetches u into part, resuming it when it exists, and returns
// the sha256 of the whole file. On failure the .part stays for a resume;
// nothing is created before the server answers.
//
// A resume sends the validators of the response that started the .part as
// If-Range (the strong ETag, else Last-Modified): a server whose file
// changed answers 200 with the new file, which restarts the download
// rather than appending new bytes to old ones. A .part without its
// validators file (left by an older version, or damaged) is started over:
// where it came from is unknown. A server that gave no validators is
// resumed with a plain Range, as before (the catalog's sha256 still
// guards catalog models).
func (r *Registry) download(ctx context.Context, u, part string, progress func(done, total int64)) (string, error) {
	meta := resumeFile(part)
	h := sha256.New()
	val, known := readValidators(meta)
	var offset int64
	if known {
		var err error
		if offset, err = hashPart(part, h); err != nil {
			return "", err
		}
	}
	for attempt := 0; ; attempt++ {
		ifRange := ""
		if offset > 0 {
			ifRange = val.ifRange()
		}
		resp, err := r.get(ctx, u, offset, ifRange)
		if err != nil {
			return "", err
		}
		start, total, err := rangeOf(resp, offset)
		if err == errRestart && attempt == 0 {
			// The server will not resume this .part: start from zero.
			resp.Body.Close()
			offset = 0
			h.Reset()
			continue
		}
		if err != nil {
			resp.Body.Close()
			return "", fmt.Errorf("pull %s: %w", u, err)
		}
		if start == 0 && offset > 0 { // 200: the whole file again
			offset = 0
			h.Reset()
		}
		if start == 0 {
			// A new .part: remember what it is a copy of before its
			// first byte is written.
			val = validatorsOf(resp)
			if err := writeValidators(meta, val); err != nil {
				resp.Body.Close()
				return "", fmt.Errorf("pull %s: %w", u, err)
			}
		}
		done, err := r.writePart(ctx, part, h, resp, offset, total, progress)
		resp.Body.Close()
		if err != nil {
			return "", fmt.Errorf("pull %s: %w (%s of the download are kept in %s; pull again to resume)", u, err, FormatSize(done), part)
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
}

// hashPart feeds an existing .part to h and returns its size (0 when there
// is none).
func hashPart(part string, h hash.Hash) (int64, error) {
	f, err := os.Open(part)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pull: %w", err)
	}
	defer f.Close()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", part, err)
	}
	return n, nil
}

// writePart writes the reply's body into part from offset (truncating
// what follows) and syncs it.
func (r *Registry) writePart(ctx context.Context, part string, h hash.Hash, resp *http.Response, offset, total int64, progress func(done, total int64)) (int64, error) {
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return offset, err
	}
	defer f.Close()
	if err := f.Truncate(offset); err != nil {
		return offset, err
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, err
	}
	done, err := r.copyBody(ctx, f, h, resp, offset, total, progress)
	if err != nil {
		return done, err
	}
	if err := f.Sync(); err != nil {
		return done, fmt.Errorf("write: %w", diskFull(err))
	}
	return done, nil
}

var errRestart = errors.New("restart the download")

func (r *Registry) get(ctx context.Context, u string, offset int64, ifRange string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", u, err)
	}
	req.Header.Set("User-Agent", userAgent)
	if offset > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
		if ifRange != "" {
			req.Header.Set("If-Range", ifRange)
		}
	}
	resp, err := r.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("pull %s: %w (pull again to resume)", u, ctx.Err())
		}
		return nil, fmt.Errorf("pull %s: %w (offline? pull again to resume)", u, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent ||
		resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return resp, nil
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotFound:
		return nil, fmt.Errorf("pull %s: not found (HTTP 404): the file was moved or renamed; pull its current URL instead", u)
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, fmt.Errorf("pull %s: refused (HTTP %d): the model may be gated (accept its licence on Hugging Face) or private; download it yourself and use \"openclaw models import\"", u, resp.StatusCode)
	}
	return nil, fmt.Errorf("pull %s: the server answered %s", u, resp.Status)
}

// rangeOf checks a reply against the requested offset and returns where
// its body starts and the file's total size (-1 when unknown). errRestart
// asks for a download from zero.
func rangeOf(resp *http.Response, offset int64) (start, total int64, err error) {
	switch resp.StatusCode {
	case http.StatusOK:
		total = -1
		if resp.ContentLength >= 0 {
			total = resp.ContentLength
		}
		return 0, total, nil
	case http.StatusPartialContent:
		s, _, t, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || s != offset {
			return 0, 0, errRestart
		}
		if t < 0 && resp.ContentLength >= 0 {
			t = offset + resp.ContentLength
		}
		return s, t, nil
	case http.StatusRequestedRangeNotSatisfiable:
		// The .part is as long as the file, or longer (a changed file).
		if _, _, t, ok := parseContentRange(resp.Header.Get("Content-Range")); ok && t == offset {
			return offset, offset, nil
		}
		return 0, 0, errRestart
	}
	return 0, 0, fmt.Errorf("unexpected status %s", resp.Status)
}

// parseContentRange parses "bytes START-END/TOTAL" and "bytes */TOTAL";
// total is -1 for "*".
func parseContentRange(v string) (start, end, total int64, ok bool) {
	rest, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	total = -1
	if tot != "*" {
		n, err := strconv.ParseInt(tot, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, 0, false
		}
		total = n
	}
	if rng == "*" {
		return -1, -1, total, total >= 0
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	s, err1 := strconv.ParseInt(a, 10, 64)
	e, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || s < 0 || e < s || total >= 0 && e >= total {
		return 0, 0, 0, false
	}
	return s, e, total, true
}

// copyBody appends the reply's body to f, hashing it, and returns the bytes
// on disk. It fails when nothing arrives for the stall timeout, and when
// the body ends before total.
func (r *Registry) copyBody(ctx context.Context, f *os.File, h hash.Hash, resp *http.Response, offset, total int64, progress func(done, total int64)) (int64, error) {
	done := offset
	if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable {
		if progress != nil {
			progress(done, total)
		}
		return done, nil
	}
	stalled := make(chan struct{})
	var once sync.Once
	timer := time.AfterFunc(r.cfg.StallTimeout, func() {
		once.Do(func() { close(stalled) })
		resp.Body.Close() // unblocks the read below
	})
	defer timer.Stop()
	if progress != nil {
		progress(done, total)
	}
	buf := make([]byte, 256<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			timer.Reset(r.cfg.StallTimeout)
			if _, err := f.Write(buf[:n]); err != nil {
				return done, fmt.Errorf("write: %w", diskFull(err))
			}
			h.Write(buf[:n])
			done += int64(n)
			if progress != nil {
				progress(done, total)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			select {
			case <-stalled:
				return done, fmt.Errorf("no data for %v", r.cfg.StallTimeout)
			default:
			}
			if ctx.Err() != nil {
				return done, ctx.Err()
			}
			return done, fmt.Errorf("connection lost: %w", rerr)
		}
	}
	if total >= 0 && done != total {
		return done, fmt.Errorf("the server sent %d of %d bytes", done, total)
	}
	return done, nil
}

// diskFull rewords "no space left on device" so the user knows what to do.
func diskFull(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("the disk is full (%w): free some space and try again", err)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && errors.Is(pe.Err, syscall.ENOSPC) {
		return fmt.Errorf("the disk is full (%w): free some space and try again", err)
	}
	return err
}

// validators identify the version of a file a .part is a copy of.
type validators struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"lastModified,omitempty"`
}

// ifRange is the If-Range value: the ETag when it is strong (RFC 9110
// forbids a weak one there), else Last-Modified, else "" (no validator:
// a plain Range).
func (v validators) ifRange() string {
	if v.ETag != "" && !strings.HasPrefix(v.ETag, "W/") {
		return v.ETag
	}
	return v.LastModified
}

// maxValidator bounds what is kept of a server's header: a validator is
// short, and a hostile server's kilobytes are not worth storing.
const maxValidator = 512

func validatorsOf(resp *http.Response) validators {
	clean := func(s string) string {
		s = strings.TrimSpace(s)
		if len(s) > maxValidator || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return "" // unusable as a header value: resume without it
		}
		return s
	}
	v := validators{ETag: clean(resp.Header.Get("ETag")), LastModified: clean(resp.Header.Get("Last-Modified"))}
	if v.LastModified != "" {
		if _, err := http.ParseTime(v.LastModified); err != nil {
			v.LastModified = ""
		}
	}
	return v
}

// readValidators reads a .part's validators; known is false when there
// is no usable record (missing, unreadable, damaged): the .part is then of
// unknown origin.
func readValidators(path string) (v validators, known bool) {
	f, err := os.Open(path)
	if err != nil {
		return v, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 4*maxValidator))
	if err != nil || json.Unmarshal(data, &v) != nil {
		return validators{}, false
	}
	if len(v.ETag) > maxValidator || len(v.LastModified) > maxValidator {
		return validators{}, false
	}
	return v, true
}

// writeValidators records v beside the .part (written before the .part
// gets its first byte, so a .part never outlives its record).
func writeValidators(path string, v validators) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, diskFull(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// CheckPull reports what PullAs would refuse of ref and name before it
// starts (no model given, a bad name, a name not in the catalog, a bad
// URL), so a caller can answer that plainly before it streams progress.
func (r *Registry) CheckPull(ref, name string) error {
	_, err := r.source(ref, name)
	return err
}
