package localapi

// A model file streamed to the gateway (api.UploadRequest: `openclaw
// models import FILE --gateway BOX`, the dashboard's upload). Choices where
// the design was silent:
//   - The partial area is <models dir>/.uploads, on the models directory's
//     file system, so the last step is a rename: no half file is ever under
//     a final name. <id>.part holds the bytes, <id>.json the upload's
//     record: the request, the offset and the sha256 state after offset
//     bytes (the hash's MarshalBinary), so finishing does not read the
//     file again before the registry does (it hashes what it registers).
//   - A chunk's bytes are synced before the record counts them. A record
//     older than its .part (a crash between the two) is still right: the
//     next PUT cuts the .part back to the record's offset.
//   - A PUT cut short (a dropped connection) keeps the bytes that arrived;
//     the reply's offset is where the upload stands. A PUT for an upload
//     another PUT is still reading (a connection that died silently, whose
//     client is retrying) cuts that one short and takes over.
//   - The file keeps its own name in the models directory, which must end
//     in ".gguf" (any case): the registry's index (models.json) and other
//     files there are never a name an upload can take. A name taken there,
//     or by a pull's or an import's temp files of it, gets "-2" … "-9"
//     before ".gguf"; the move never replaces a file (see place).
//   - Names are checked by the registry's own rules (Models.ModelName)
//     before a byte is sent; the registry checks again when it registers.
//     A name not given is derived from the file name at the start, the
//     same way, so it can be checked too.
//     A name installed with other bytes is refused at the start, one
//     installed with these very bytes answers with the model.
//   - Free space for what is left to send plus uploadDiskMargin is checked
//     when an upload starts or resumes, less what the other unfinished
//     uploads still need (size - offset of each): starts go one at a time,
//     so concurrent ones cannot each count the same free space. Each PUT
//     checks again for its own bytes (the disk may have filled since). At
//     most maxUploads are unfinished at once.
//   - An upload whose files nobody touched for uploadStaleAfter is deleted
//     when the next one starts, and when the gateway starts.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/doctor"
)

const (
	// uploadDir is the partial area, inside the models directory.
	uploadDir = ".uploads"
	// uploadStaleAfter is how long an upload may go without data before
	// it is deleted.
	uploadStaleAfter = 24 * time.Hour
	// uploadDiskMargin is kept free beyond the file, so the box's logs,
	// sessions and indexes still have room once it is there.
	uploadDiskMargin = 128 << 20
	// maxUploads is how many uploads may be unfinished at once: each holds
	// disk space for what it still needs, and a client that starts many
	// and sends nothing would hold it all for uploadStaleAfter.
	maxUploads = 4
	// registryIndex is models/catalog.IndexFile, the registry's index in
	// the models directory (this package may not import models/, see
	// engine/deps_test.go): no upload may take its name.
	registryIndex = "models.json"
)

// pullTempSuffixes end the names of the temp files that become X when
// they are renamed onto it, beside X in the models directory: a pull's
// download (models/catalog.PartSuffix), its validators
// (models/catalog.ResumeSuffix) and their temp file, and an import's copy
// (copyFile's ".import"). An upload does not take X while one is there.
var pullTempSuffixes = []string{".part", ".part.json", ".part.json.tmp", ".import"}

// freeSpace is what the gateway may still write on dir's file system; a
// variable so tests can pretend a full disk.
var freeSpace = func(dir string) (uint64, error) {
	free, _, err := doctor.DiskSpace(dir)
	return free, err
}

// uploads are the model uploads in progress.
type uploads struct {
	ms Models

	// starting is held by a start from its check of the disk to its
	// record, so that the next one counts what this one needs.
	starting sync.Mutex

	mu     sync.Mutex // guards active, and the choice of a final file name
	active map[string]*upload
}

// newUploads also deletes stale uploads (the gateway starts), so a box
// where nobody uploads again gets its disk back; with no partial area
// that costs one Stat.
func newUploads(ms Models) *uploads {
	u := &uploads{ms: ms, active: map[string]*upload{}}
	if models := ms.Dir(); models != "" {
		dir := filepath.Join(models, uploadDir)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			u.sweep(dir)
		}
	}
	return u
}

// upload is one upload; its files are <id>.part and <id>.json.
type upload struct {
	dir string // the partial area
	// turn is held (one token) by the request writing or finishing it.
	turn chan struct{}

	mu        sync.Mutex // guards the fields below
	rec       uploadRecord
	cut       func() // cuts the PUT reading now short; nil when none is
	finishing bool
	gone      bool // finished or deleted
}

// uploadRecord is <id>.json.
type uploadRecord struct {
	ID     string `json:"id"`
	Name   string `json:"name,omitempty"`
	File   string `json:"file"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Offset int64  `json:"offset"`
	// Hash is the sha256 state after Offset bytes.
	Hash []byte `json:"hash,omitempty"`
}

func (up *upload) part() string   { return filepath.Join(up.dir, up.rec.ID+".part") }
func (up *upload) record() string { return filepath.Join(up.dir, up.rec.ID+".json") }

func (up *upload) status() api.UploadStatus {
	up.mu.Lock()
	defer up.mu.Unlock()
	return statusOf(up.rec)
}

func statusOf(rec uploadRecord) api.UploadStatus {
	return api.UploadStatus{ID: rec.ID, Name: rec.Name, File: rec.File, Size: rec.Size, SHA256: rec.SHA256, Offset: rec.Offset}
}

// uploadConflict is a 409 that carries the offset to resume from.
type uploadConflict struct {
	msg    string
	offset int64
}

func (e *uploadConflict) Error() string { return e.msg }

// writeUploadError answers err: an uploadConflict with its offset, else
// through asAPIError.
func writeUploadError(w http.ResponseWriter, err error) {
	var c *uploadConflict
	if errors.As(err, &c) {
		api.WriteJSON(w, http.StatusConflict, api.UploadConflict{Code: api.CodeConflict, Message: c.msg, Offset: c.offset})
		return
	}
	api.WriteError(w, asAPIError(err))
}

// partialDir is the partial area, created when missing.
func (u *uploads) partialDir() (models, partial string, err error) {
	models = u.ms.Dir()
	if models == "" {
		return "", "", errors.New("upload: the gateway has no models directory")
	}
	partial = filepath.Join(models, uploadDir)
	if err := os.MkdirAll(partial, 0o755); err != nil {
		return "", "", fmt.Errorf("upload: create the partial area: %w", err)
	}
	return models, partial, nil
}

// start is POST api.PathModelUpload: a new upload, or the unfinished one
// of the same file.
func (u *uploads) start(r *http.Request, req api.UploadRequest) (api.UploadStatus, error) {
	req, err := checkUploadRequest(u.ms, req)
	if err != nil {
		return api.UploadStatus{}, err
	}
	m, err := u.installed(req)
	if err != nil {
		return api.UploadStatus{}, err
	}
	if m != nil {
		return api.UploadStatus{Name: req.Name, File: req.File, Size: req.Size, SHA256: req.SHA256, Offset: req.Size, Model: m}, nil
	}
	_, dir, err := u.partialDir()
	if err != nil {
		return api.UploadStatus{}, err
	}
	u.starting.Lock()
	defer u.starting.Unlock()
	u.sweep(dir)
	up, err := u.find(dir, req)
	if err != nil {
		return api.UploadStatus{}, err
	}
	var have int64
	var id string
	if up != nil {
		st := up.status()
		have, id = st.Offset, st.ID
	}
	others, owed, err := u.pending(dir, id)
	if err != nil {
		return api.UploadStatus{}, err
	}
	if up == nil && others >= maxUploads {
		return api.UploadStatus{}, badRequest(fmt.Sprintf("upload: the gateway already has %d unfinished uploads, the most it keeps at once: "+
			"finish one (run its \"openclaw models import FILE --gateway BOX\" again: it resumes), or wait: an upload that gets no data for %d hours is deleted",
			others, int(uploadStaleAfter.Hours())))
	}
	if err := checkSpace(dir, req.File, req.Size-have, owed, others, "try again"); err != nil {
		return api.UploadStatus{}, err
	}
	if up == nil {
		if up, err = u.create(dir, req); err != nil {
			return api.UploadStatus{}, err
		}
	}
	return up.status(), nil
}

// checkUploadRequest checks and normalizes req; a name or file name that
// could leave the models directory is refused.
func checkUploadRequest(models Models, req api.UploadRequest) (api.UploadRequest, error) {
	if req.Name == "" && req.File == "" {
		return req, badRequest("upload: give the model's name or the file's name")
	}
	if req.Name != "" {
		if _, err := models.ModelName(req.Name, ""); err != nil {
			return req, err
		}
	}
	if req.File == "" {
		req.File = req.Name + ".gguf"
	} else if err := checkFileName(req.File); err != nil {
		return req, err
	}
	if req.Name == "" {
		// The name the import would derive, now, so a taken one is
		// refused before a byte is sent.
		name, err := models.ModelName("", req.File)
		if req.Name = name; err != nil || req.Name == "" {
			return req, badRequest(api.EscapeControl(fmt.Sprintf("upload: cannot derive a model name from the file name %q: give one", req.File)))
		}
	}
	if req.Size <= 0 {
		return req, badRequest(fmt.Sprintf("upload: size %d: want the file's size in bytes", req.Size))
	}
	sum := strings.ToLower(req.SHA256)
	if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
		return req, badRequest(api.EscapeControl(fmt.Sprintf("upload: sha256 %q: want the file's sha256 in hex (64 digits)", req.SHA256)))
	}
	req.SHA256 = sum
	return req, nil
}

// checkFileName accepts a plain file name: no directory, not hidden, no
// control characters, at most 200 bytes (room for "-9" and the file
// system's limit), ending in ".gguf" (any case), so that it can never be
// the name of the registry's own files in the models directory.
func checkFileName(file string) error {
	if strings.EqualFold(file, registryIndex) {
		// Refused by the suffix too; said plainly in case that rule changes.
		return badRequest(api.EscapeControl(fmt.Sprintf("upload: file name %q is the model registry's index: send the model's .gguf file", file)))
	}
	ok := len(file) <= 200 && utf8.ValidString(file) && !strings.HasPrefix(file, ".") && !strings.ContainsAny(file, `/\`)
	for _, c := range file {
		ok = ok && c >= 0x20 && c != 0x7f
	}
	if !ok {
		return badRequest(api.EscapeControl(fmt.Sprintf("upload: file name %q: want the file's own name, without a directory, not starting with '.'", file)))
	}
	if !hasGGUF(file) {
		return badRequest(api.EscapeControl(fmt.Sprintf("upload: file name %q: want a GGUF model file, whose name ends in .gguf", file)))
	}
	return nil
}

// hasGGUF says whether file ends in ".gguf", in any case, after a stem.
func hasGGUF(file string) bool {
	return len(file) > len(".gguf") && strings.EqualFold(file[len(file)-len(".gguf"):], ".gguf")
}

// installed is the model req would install when it is installed already
// with these very bytes (nothing to send); a name installed with other
// bytes is refused.
func (u *uploads) installed(req api.UploadRequest) (*api.ModelInfo, error) {
	for _, m := range u.ms.List() {
		if !m.Installed || m.Missing || (req.Name != "" && m.Name != req.Name) {
			continue
		}
		if m.SHA256 == req.SHA256 {
			return &m, nil
		}
		if req.Name != "" {
			return nil, badRequest(fmt.Sprintf("model name is taken: %q is already installed from %s: choose another name (--name), or remove it first (\"openclaw models rm %s\")",
				m.Name, m.Path, m.Name))
		}
	}
	return nil, nil
}

// checkSpace refuses to write need more bytes of file when the disk
// cannot hold them and uploadDiskMargin besides owed, what the other
// unfinished uploads still need; then says what to do, ending in then. A
// file system that cannot say is not refused (a full disk is still
// reported when a write fails).
func checkSpace(dir, file string, need, owed int64, others int, then string) error {
	free, err := freeSpace(dir)
	if err != nil {
		return nil
	}
	if uint64(need)+uint64(owed)+uploadDiskMargin <= free {
		return nil
	}
	promised := ""
	if owed > 0 {
		promised = fmt.Sprintf(", %s of it kept for %d other unfinished uploads", doctor.Bytes(owed), others)
	}
	return badRequest(fmt.Sprintf("not enough disk space on the gateway for %s: it needs %s more (and %s to spare), and %s has %s free%s; "+
		"free some space (\"openclaw models rm NAME\" removes a model) and %s",
		file, doctor.Bytes(need), doctor.Bytes(uploadDiskMargin), filepath.Dir(dir), doctor.Bytes(int64(free)), promised, then))
}

// pending is how many uploads other than except are unfinished, and the
// bytes they still need (size - offset of each); those begun before the
// gateway restarted count from their records.
func (u *uploads) pending(dir, except string) (n int, owed int64, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id, up := range u.active {
		up.mu.Lock()
		rec, gone := up.rec, up.gone
		up.mu.Unlock()
		if id != except && !gone {
			n, owed = n+1, owed+max(rec.Size-rec.Offset, 0)
		}
	}
	records, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return 0, 0, fmt.Errorf("upload: list the partial area: %w", err)
	}
	for _, path := range records {
		id := strings.TrimSuffix(filepath.Base(path), ".json")
		if id == except || u.active[id] != nil || !validUploadID(id) {
			continue
		}
		// A damaged record cannot be resumed: it only waits for the sweep.
		if rec, err := readRecord(path, id); err == nil {
			n, owed = n+1, owed+max(rec.Size-rec.Offset, 0)
		}
	}
	return n, owed, nil
}

// sweep deletes the files of uploads nobody touched for uploadStaleAfter.
func (u *uploads) sweep(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // the next start tries again
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < uploadStaleAfter {
			continue
		}
		id, _, _ := strings.Cut(e.Name(), ".")
		if up := u.active[id]; up != nil {
			select {
			case up.turn <- struct{}{}: // not in use: it may go
				up.mu.Lock()
				up.gone = true
				up.mu.Unlock()
				delete(u.active, id)
				<-up.turn
			default:
				continue
			}
		}
		_ = os.Remove(filepath.Join(dir, e.Name())) // gone already: fine
	}
}

// find returns the unfinished upload of the same file, nil when none.
func (u *uploads) find(dir string, req api.UploadRequest) (*upload, error) {
	same := func(rec uploadRecord) bool {
		return rec.Name == req.Name && rec.File == req.File && rec.Size == req.Size && rec.SHA256 == req.SHA256
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, up := range u.active {
		up.mu.Lock()
		ok := same(up.rec) && !up.gone && !up.finishing
		up.mu.Unlock()
		if ok {
			return up, nil
		}
	}
	// One started before the gateway restarted.
	records, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("upload: list the partial area: %w", err)
	}
	for _, path := range records {
		id := strings.TrimSuffix(filepath.Base(path), ".json")
		if u.active[id] != nil || !validUploadID(id) {
			continue
		}
		rec, err := readRecord(path, id)
		if err == nil && same(rec) {
			up := &upload{dir: dir, turn: make(chan struct{}, 1), rec: rec}
			u.active[id] = up
			return up, nil
		}
	}
	return nil, nil
}

// create starts a new upload.
func (u *uploads) create(dir string, req api.UploadRequest) (*upload, error) {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	id := hex.EncodeToString(b)
	up := &upload{dir: dir, turn: make(chan struct{}, 1), rec: uploadRecord{
		ID: id, Name: req.Name, File: req.File, Size: req.Size, SHA256: req.SHA256,
	}}
	f, err := os.OpenFile(up.part(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("upload: create the partial file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("upload: create the partial file: %w", err)
	}
	if err := writeRecord(up.record(), up.rec); err != nil {
		_ = os.Remove(up.part())
		return nil, err
	}
	u.mu.Lock()
	u.active[id] = up
	u.mu.Unlock()
	return up, nil
}

func validUploadID(id string) bool {
	b, err := hex.DecodeString(id)
	return err == nil && len(b) == 16 && id == strings.ToLower(id)
}

func readRecord(path, id string) (uploadRecord, error) {
	var rec uploadRecord
	data, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("upload record %s is damaged: %w", path, err)
	}
	if rec.ID != id {
		return rec, fmt.Errorf("upload record %s is damaged: it names upload %q", path, rec.ID)
	}
	return rec, nil
}

// writeRecord replaces path with rec. The directory is not synced: an
// older record after a crash is still consistent (see the file's comment).
func writeRecord(path string, rec uploadRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("upload: encode the record: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("upload: write the record: %w", diskFull(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("upload: write the record: %w", err)
	}
	return nil
}

// get is the upload id, from memory or from its record (an upload begun
// before the gateway restarted).
func (u *uploads) get(id string) (*upload, error) {
	if !validUploadID(id) {
		return nil, noUpload(id)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if up := u.active[id]; up != nil {
		return up, nil
	}
	_, dir, err := u.partialDir()
	if err != nil {
		return nil, err
	}
	up := &upload{dir: dir, turn: make(chan struct{}, 1), rec: uploadRecord{ID: id}}
	rec, err := readRecord(up.record(), id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, noUpload(id)
	}
	if err != nil {
		return nil, err
	}
	up.rec = rec
	u.active[id] = up
	return up, nil
}

// noUpload is the answer about an upload that is not there.
func noUpload(id string) error {
	return &api.Error{Code: api.CodeNotFound, Message: api.EscapeControl(fmt.Sprintf(
		"no upload %q: it was finished, failed, or went 24 hours without data; start it again", id))}
}

// drop forgets an upload and deletes its files; the caller holds its turn.
func (u *uploads) drop(up *upload) {
	u.mu.Lock()
	delete(u.active, up.rec.ID)
	u.mu.Unlock()
	up.mu.Lock()
	up.gone = true
	up.mu.Unlock()
	_ = os.Remove(up.part()) // already moved into place, or gone: fine
	_ = os.Remove(up.record())
}

// take waits for the upload's turn. A PUT (cut set) first cuts short a
// PUT still reading, whose client is most likely the one now retrying;
// it keeps what arrived.
func (up *upload) take(ctx context.Context, cut func()) (release func(), err error) {
	var tick <-chan time.Time
	if cut != nil {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	for {
		if cut != nil {
			up.mu.Lock()
			if up.cut != nil {
				up.cut() // again on each tick: a cut that came between its reads
			}
			up.mu.Unlock()
		}
		select {
		case up.turn <- struct{}{}:
			up.mu.Lock()
			up.cut = cut
			up.mu.Unlock()
			return func() {
				up.mu.Lock()
				up.cut = nil
				up.mu.Unlock()
				<-up.turn
			}, nil
		case <-ctx.Done():
			return nil, &api.Error{Code: api.CodeAborted, Message: "upload: the request ended while waiting for another one on the same upload"}
		case <-tick:
		}
	}
}

// put is PUT api.PathModelUpload/{id}?offset=N: the file's bytes from N.
func (u *uploads) put(w http.ResponseWriter, r *http.Request) {
	st, err := u.write(w, r)
	if err != nil {
		writeUploadError(w, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, st)
}

func (u *uploads) write(w http.ResponseWriter, r *http.Request) (api.UploadStatus, error) {
	up, err := u.get(r.PathValue("id"))
	if err != nil {
		return api.UploadStatus{}, err
	}
	offset, err := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	if err != nil || offset < 0 {
		return api.UploadStatus{}, badRequest("upload: want ?offset=N, where this chunk starts in the file")
	}
	if r.ContentLength > api.MaxUploadChunk {
		return api.UploadStatus{}, badRequest(fmt.Sprintf("upload: a chunk is at most %d bytes, this one has %d: send the file in smaller pieces", api.MaxUploadChunk, r.ContentLength))
	}
	rc := http.NewResponseController(w)
	body := &chunkBody{r: r.Body, rc: rc, idle: importReadIdle}
	release, err := up.take(r.Context(), body.stop)
	if err != nil {
		return api.UploadStatus{}, err
	}
	defer release()
	up.mu.Lock()
	rec, gone, finishing := up.rec, up.gone, up.finishing
	up.mu.Unlock()
	switch {
	case gone:
		return api.UploadStatus{}, noUpload(rec.ID)
	case finishing:
		return api.UploadStatus{}, &uploadConflict{msg: "upload: it is being finished", offset: rec.Offset}
	case offset != rec.Offset:
		return api.UploadStatus{}, &uploadConflict{offset: rec.Offset, msg: fmt.Sprintf(
			"upload: this chunk starts at %d, but the gateway has %d bytes: go on from there", offset, rec.Offset)}
	}
	left := rec.Size - rec.Offset
	if r.ContentLength > left {
		return api.UploadStatus{}, badRequest(fmt.Sprintf("upload: this chunk of %d bytes goes past the end of the file (%d bytes are left)", r.ContentLength, left))
	}
	limit := min(int64(api.MaxUploadChunk), left)
	// The disk may have filled since the start (other writers, other
	// uploads): what this PUT may write must still leave the margin.
	may := limit
	if r.ContentLength >= 0 {
		may = min(may, r.ContentLength)
	}
	if err := checkSpace(up.dir, rec.File, may, 0, 0, fmt.Sprintf(
		"run the import again: it resumes from the %d bytes the gateway has", rec.Offset)); err != nil {
		return api.UploadStatus{}, err
	}
	h, err := restoreHash(rec.Hash)
	if err != nil {
		return api.UploadStatus{}, err
	}
	f, err := os.OpenFile(up.part(), os.O_WRONLY, 0)
	if err != nil {
		return api.UploadStatus{}, fmt.Errorf("upload: open the partial file: %w", err)
	}
	defer f.Close()
	// Bytes past the record (a write cut by a crash) are not counted: go
	// from the record's offset.
	if err := f.Truncate(rec.Offset); err != nil {
		return api.UploadStatus{}, fmt.Errorf("upload: %w", err)
	}
	if _, err := f.Seek(rec.Offset, io.SeekStart); err != nil {
		return api.UploadStatus{}, fmt.Errorf("upload: %w", err)
	}
	// A body that ends in an error (the client went away or stalled) ends
	// the chunk: what arrived is kept, and the offset says so to whoever
	// asks next.
	n, writeErr := copyChunk(f, h, body, limit+1)
	if writeErr != nil || n > limit {
		_ = f.Truncate(rec.Offset) // the record is unchanged: the next PUT cuts it back too
		if writeErr != nil {
			return api.UploadStatus{}, fmt.Errorf("upload: write: %w", diskFull(writeErr))
		}
		return api.UploadStatus{}, badRequest(fmt.Sprintf("upload: this chunk goes past the end of the file (%d bytes are left) or over %d bytes", left, api.MaxUploadChunk))
	}
	if n > 0 {
		if err := f.Sync(); err != nil {
			return api.UploadStatus{}, fmt.Errorf("upload: sync: %w", diskFull(err))
		}
		state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
		if err != nil {
			return api.UploadStatus{}, fmt.Errorf("upload: save the sha256 state: %w", err)
		}
		next := rec
		next.Offset, next.Hash = rec.Offset+n, state
		if err := writeRecord(up.record(), next); err != nil {
			return api.UploadStatus{}, err
		}
		up.mu.Lock()
		up.rec = next
		up.mu.Unlock()
	}
	return up.status(), nil
}

// restoreHash is the sha256 state of a record (a fresh one for none).
func restoreHash(state []byte) (hash.Hash, error) {
	h := sha256.New()
	if len(state) == 0 {
		return h, nil
	}
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		return nil, fmt.Errorf("upload: the record's sha256 state is damaged: %w", err)
	}
	return h, nil
}

// copyChunk copies at most max bytes of src to dst and h, until src ends
// or fails (the client's side: what was read counts); only a failed write
// (the disk) is an error.
func copyChunk(dst io.Writer, h hash.Hash, src io.Reader, max int64) (n int64, err error) {
	buf := make([]byte, 256<<10)
	for n < max {
		k, rerr := src.Read(buf[:min(int64(len(buf)), max-n)])
		if k > 0 {
			if _, err := dst.Write(buf[:k]); err != nil {
				return n, err
			}
			h.Write(buf[:k])
			n += int64(k)
		}
		if rerr != nil {
			return n, nil
		}
	}
	return n, nil
}

// errCut ends the body of a PUT another one took over from.
var errCut = errors.New("upload: a newer request took over")

// chunkBody is a PUT's body under a read deadline that rolls forward as
// data arrives (as an import's, import.go), which another request can cut
// short (stop).
type chunkBody struct {
	r       io.Reader
	rc      *http.ResponseController
	idle    time.Duration
	renewAt time.Time
	cut     atomic.Bool
}

func (b *chunkBody) Read(p []byte) (int, error) {
	if b.cut.Load() {
		return 0, errCut
	}
	if now := time.Now(); !now.Before(b.renewAt) {
		_ = b.rc.SetReadDeadline(now.Add(b.idle)) // ErrNotSupported without a real connection
		b.renewAt = now.Add(b.idle / 4)
	}
	return b.r.Read(p)
}

// stop cuts the body short: a read waiting now returns at once, the next
// one does not start.
func (b *chunkBody) stop() {
	b.cut.Store(true)
	_ = b.rc.SetReadDeadline(time.Now())
}

// status is GET api.PathModelUpload/{id}.
func (u *uploads) status(r *http.Request) (api.UploadStatus, error) {
	up, err := u.get(r.PathValue("id"))
	if err != nil {
		return api.UploadStatus{}, err
	}
	return up.status(), nil
}

// serveFinish is POST api.PathModelUploadFinish?id=.
func (u *uploads) serveFinish(w http.ResponseWriter, r *http.Request) {
	info, err := u.finish(r)
	if err != nil {
		writeUploadError(w, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, info)
}

// finish checks the sha256, moves the file into place and installs it.
func (u *uploads) finish(r *http.Request) (api.ModelInfo, error) {
	up, err := u.get(r.URL.Query().Get("id"))
	if err != nil {
		return api.ModelInfo{}, err
	}
	release, err := up.take(r.Context(), nil)
	if err != nil {
		return api.ModelInfo{}, err
	}
	defer release()
	up.mu.Lock()
	rec, gone := up.rec, up.gone
	up.finishing = !gone
	up.mu.Unlock()
	if gone {
		return api.ModelInfo{}, noUpload(rec.ID)
	}
	defer func() {
		up.mu.Lock()
		up.finishing = false
		up.mu.Unlock()
	}()
	if rec.Offset != rec.Size {
		return api.ModelInfo{}, &uploadConflict{offset: rec.Offset, msg: fmt.Sprintf(
			"upload: the gateway has %d of the file's %d bytes: send the rest before finishing", rec.Offset, rec.Size)}
	}
	h, err := restoreHash(rec.Hash)
	if err != nil {
		u.drop(up)
		return api.ModelInfo{}, err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != rec.SHA256 {
		u.drop(up)
		return api.ModelInfo{}, badRequest(fmt.Sprintf("upload of %s: sha256 mismatch: the gateway received a file whose sha256 is %s, not %s: the upload was deleted; send the file again",
			rec.File, got, rec.SHA256))
	}
	if fi, err := os.Stat(up.part()); err != nil || fi.Size() != rec.Size {
		u.drop(up)
		return api.ModelInfo{}, fmt.Errorf("upload of %s: the partial file is damaged or gone (%v): the upload was deleted; send the file again", rec.File, err)
	}
	dest, err := u.place(up.part(), rec.File)
	if err != nil {
		return api.ModelInfo{}, err
	}
	info, err := u.ms.Import(api.ImportModelRequest{Path: dest, Name: rec.Name})
	if err != nil {
		_ = os.Remove(dest)
		u.drop(up)
		ae := *asAPIError(err)
		ae.Message += " (the uploaded file was deleted)"
		return api.ModelInfo{}, &ae
	}
	u.drop(up)
	if info.SHA256 != "" && info.SHA256 != rec.SHA256 {
		// The registry hashed other bytes than arrived: the disk changed
		// them. Nothing wrong may stay installed.
		_, rerr := u.ms.Remove(info.Name)
		_ = os.Remove(dest)
		return api.ModelInfo{}, errors.Join(fmt.Errorf("upload of %s: the file on the gateway's disk has sha256 %s, not %s: it was removed; check the disk and send the file again",
			rec.File, info.SHA256, rec.SHA256), rerr)
	}
	return info, nil
}

// place moves the finished part into the models directory under file's
// name, or file-2 … file-9 where that is taken, and returns where it went.
// A name is taken by a file, or by a temp file that a pull or an import
// would rename onto it (pullTempSuffixes).
//
// The registry writes there without u.mu, so the move is a hard link: it
// fails rather than replace a file that appeared since the check. Where
// the file system has no hard links (FAT, exFAT: a USB disk) it is a
// rename right after a second check. What neither sees is a pull that has
// reserved the name but not yet created its temp files (it waits for the
// server): the registry's Import of the name is then refused as busy, and
// finish deletes the upload's file, so nothing wrong is registered.
func (u *uploads) place(part, file string) (string, error) {
	models := u.ms.Dir()
	stem, ext := file, ""
	if hasGGUF(file) {
		stem, ext = file[:len(file)-len(".gguf")], file[len(file)-len(".gguf"):]
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := 1; i <= 9; i++ {
		name := file
		if i > 1 {
			name = fmt.Sprintf("%s-%d%s", stem, i, ext)
		}
		dest := filepath.Join(models, name)
		if nameTaken(dest) {
			continue
		}
		err := os.Link(part, dest)
		switch {
		case err == nil:
			if err := os.Remove(part); err != nil {
				// Not half moved: the upload stays as it was, to finish again.
				return "", errors.Join(fmt.Errorf("upload: move the file into the models directory: %w", err), os.Remove(dest))
			}
		case errors.Is(err, fs.ErrExist):
			continue // taken since the check
		default:
			if nameTaken(dest) {
				continue
			}
			if err := os.Rename(part, dest); err != nil {
				return "", fmt.Errorf("upload: move the file into the models directory: %w", err)
			}
		}
		return dest, syncDir(models)
	}
	return "", badRequest(fmt.Sprintf("upload: %s and %s-2%s … %s-9%s are all taken in the models directory: send the file under another name", file, stem, ext, stem, ext))
}

// nameTaken says whether dest, or a temp file to be renamed onto it, is
// there.
func nameTaken(dest string) bool {
	for _, suffix := range append([]string{""}, pullTempSuffixes...) {
		if _, err := os.Lstat(dest + suffix); !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// syncDir makes a rename in dir durable; a system that cannot sync a
// directory is not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// diskFull rewords "no space left on device" so the user knows what to do.
func diskFull(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("the gateway's disk is full (%w): free some space and send the file again", err)
	}
	return err
}
